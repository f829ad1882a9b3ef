"""scheduler.api.queue_info: a queue's fields."""

from scheduler.api.queue_info import QueueInfo
from scheduler.api.resource import Resource
from tests.builders import queue


def test_queue_fields_and_unlimited_capability():
    q = QueueInfo(queue("q", capability={"cpu": "-1", "memory": "4Gi"}, guarantee={"cpu": "1"},
                        parent="dept", priority=5))  # fmt: skip
    assert q.capability == Resource({"memory": 4 * 2**30})
    assert q.guarantee == Resource({"cpu": 1000})
    assert (q.parent, q.priority, q.is_open()) == ("dept", 5, True)
    assert QueueInfo(queue("top")).parent == "root"
