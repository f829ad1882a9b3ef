"""TaskInfo's "spec unchanged" test (scheduler.api.task_info ``_same`` after 7d8300d) compares
with Python's ``==``, for which ``1 == True`` and ``0 == False``."""

from __future__ import annotations

from tests.adversary.helpers import cycle, make_node, make_pod, start_service


def test_an_update_turning_a_numeric_quantity_into_a_boolean_is_refused(sim):
    """``cpu: 1`` (a JSON number, a valid quantity) becomes ``cpu: true`` (invalid: the cache
    refuses it when it reads it whole, as ``TaskInfo(pod)`` does). Python compares
    ``1 == True``: the "spec unchanged" test must not take the earlier requests for the new,
    unreadable ones, and the pod must be reported as an object Sluice cannot use."""
    make_node(sim, "n1", cpu="1")
    make_pod(sim, "filler", cpu="1")
    make_pod(sim, "r", cpu="1")

    def numeric(pod: dict) -> None:
        pod["spec"]["containers"][0]["resources"]["requests"]["cpu"] = 1

    def boolean(pod: dict) -> None:
        pod["spec"]["containers"][0]["resources"]["requests"]["cpu"] = True

    service = start_service(sim)
    try:
        sim.store.mutate("pods", "default", "r", numeric)
        first = cycle(sim, service)  # r read fine (1 cpu)
        assert first.invalid == []
        sim.store.mutate("pods", "default", "r", boolean)
        report = cycle(sim, service)
    finally:
        service.stop()
    invalid = [(o.kind, o.name, o.field) for o in report.invalid]
    assert invalid == [("pod", "r", "spec.containers[0].resources.requests.cpu")], (
        f"r's cpu: true was taken as the earlier cpu: 1: {report.invalid}"
    )
