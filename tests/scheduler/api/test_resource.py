"""scheduler.api.resource: arithmetic."""

from scheduler.api.resource import Resource, exceeded_part, share


def test_resource_arithmetic():
    a, b = Resource({"cpu": 3000, "memory": 10}), Resource({"cpu": 1000, "memory": 20})
    assert exceeded_part(a, b) == Resource({"cpu": 2000})
    assert a.clone().sub(b) == Resource({"cpu": 2000})
    assert b.less_equal(a, ["cpu"]) and not b.less_equal(a)
    assert share(Resource({"cpu": 500}), Resource({"cpu": 1000, "memory": 10})) == 0.5
