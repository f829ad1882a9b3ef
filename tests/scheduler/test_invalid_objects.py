"""Objects Sluice cannot use: refused by the cache, kept with the field and the reason, listed by
every cycle, written on the object once, and never the end of a cycle (Part 10, item 14)."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from scheduler import service as service_module
from scheduler.admission.monitor import build_snapshot
from scheduler.api.report import PodState
from scheduler.api.status import Code
from scheduler.cache import SchedulerCache
from scheduler.loop import run_cycle
from scheduler.service import CacheFeeder, SchedulerService
from tests.builders import node, pod, podgroup, queue
from tests.fakes import RecordingClusterClient

FIELD = "spec.containers[0].resources.requests.cpu"


def fed(*objects: tuple[str, dict]) -> tuple[SchedulerCache, CacheFeeder]:
    cache = SchedulerCache()
    feeder = CacheFeeder(cache)
    for kind, obj in objects:
        feeder.on_add(kind, obj)
    return cache, feeder


def cluster(*pods: dict) -> list[tuple[str, dict]]:
    return [("nodes", node("n1")), ("queues", queue("default")), *(("pods", p) for p in pods)]


@pytest.mark.parametrize(
    ("cpu", "words"),
    [
        ("1e400", "invalid quantity '1e400': too large: more than 9223372036854775807 millicores"),
        ("99999999999999999999999", "too large"),
        ("abc", "invalid quantity 'abc': quantities must match the regular expression"),
        ("-1", "invalid quantity '-1': must not be negative"),
        ("1K", "unable to parse quantity's suffix"),  # the Python client would take it
    ],
)
def test_a_pod_sluice_cannot_count_is_refused_with_its_field(cpu, words):
    cache, _ = fed(*cluster(pod("bad", cpu), pod("good")))

    (entry,) = cache.invalid.entries()
    assert (entry.kind, entry.key, entry.field) == ("pods", "ns/bad", FIELD)
    assert entry.message.startswith(f"{FIELD}: ") and words in entry.message
    assert list(cache.snapshot().jobs) == ["ns/pod:uid-ns-good"]


def test_the_cycle_binds_the_good_pods_lists_the_bad_one_and_says_it_once():
    cache, _ = fed(*cluster(pod("bad", "1e400"), pod("good")))
    client = RecordingClusterClient()

    report = run_cycle(cache, client=client)

    assert client.binds() == {"ns/good": "n1"}
    assert [(o.kind, o.name, o.field) for o in report.invalid] == [("pod", "bad", FIELD)]
    (waiting,) = [w for w in report.waiting if w.name == "bad"]
    assert (waiting.state, waiting.status.code) == (PodState.WAITING, Code.INVALID_OBJECT)
    ((_, key, condition),) = client.of("patch_pod_condition")
    assert key == "ns/bad"
    assert (condition["status"], condition["reason"]) == ("False", "InvalidSpec")
    assert FIELD in condition["message"] and "'1e400'" in condition["message"]
    ((_, key, kind, reason, message),) = client.of("record_event")
    assert (key, kind, reason) == ("ns/bad", "Warning", "InvalidObject")
    assert message == condition["message"]

    again = run_cycle(cache, client=client)

    assert [o.name for o in again.invalid] == ["bad"]  # still listed
    assert len(client.of("record_event")) == 1  # not said again


def test_a_refused_write_is_an_error_and_is_tried_again_next_cycle():
    cache, _ = fed(*cluster(pod("bad", "abc")))
    client = RecordingClusterClient(fail={("record_event", "ns/bad")})

    report = run_cycle(cache, client=client)

    assert any("pod ns/bad" in e and "refused" in e for e in report.errors)
    client.fail.clear()
    run_cycle(cache, client=client)
    assert len(client.of("record_event")) == 1


def test_a_pod_whose_condition_already_says_it_is_not_told_again():
    """A scheduler that starts afresh (a new worker) finds the condition its predecessor set."""
    message = (
        f"Sluice cannot use this pod: {FIELD}: invalid quantity 'abc': quantities must match "
        "the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'"
    )
    said = {"type": "PodScheduled", "status": "False", "reason": "InvalidSpec", "message": message}
    cache, _ = fed(*cluster(pod("bad", "abc", conditions=[said])))
    client = RecordingClusterClient()

    run_cycle(cache, client=client)

    assert client.of("record_event") == [] and client.of("patch_pod_condition") == []


def test_observe_mode_lists_and_writes_nothing():
    cache, _ = fed(*cluster(pod("bad", "abc")))

    report = run_cycle(cache, client=RecordingClusterClient(), act=False)

    assert [o.name for o in report.invalid] == ["bad"]
    assert not cache.invalid.entries()[0].reported


def test_another_schedulers_pod_is_neither_marked_nor_listed():
    cache, _ = fed(*cluster(pod("theirs", "abc", scheduler="default-scheduler")))
    client = RecordingClusterClient()

    report = run_cycle(cache, client=client)

    assert report.invalid == [] and client.calls == []


def test_a_fixed_or_deleted_object_is_forgotten():
    cache, feeder = fed(*cluster(pod("bad", "abc"), pod("gone", "-1")))
    feeder.on_update("pods", pod("bad", "abc"), pod("bad", "1"))
    feeder.on_delete("pods", pod("gone", "-1"))

    assert cache.invalid.entries() == []
    assert "ns/pod:uid-ns-bad" in cache.snapshot().jobs


def test_an_update_sluice_cannot_use_drops_the_version_before():
    cache, feeder = fed(("nodes", node("n1")), ("nodes", node("n2")))
    feeder.on_update("nodes", node("n2"), node("n2", cpu="abc"))

    assert list(cache.snapshot().nodes) == ["n1"]  # what n2 now says cannot be read
    (entry,) = cache.invalid.entries()
    assert (entry.description, entry.field) == ("node n2", "status.allocatable.cpu")


def test_the_same_problem_on_a_newer_version_is_said_once_a_new_one_again():
    cache, feeder = fed(*cluster(pod("bad", "abc")))
    run_cycle(cache, client=RecordingClusterClient())
    assert cache.invalid.entries()[0].reported

    feeder.on_update("pods", pod("bad", "abc"), pod("bad", "abc", labels={"seen": "1"}))
    assert cache.invalid.entries()[0].reported  # our own condition patch makes such a version

    feeder.on_update("pods", pod("bad", "abc"), pod("bad", "xyz"))
    assert not cache.invalid.entries()[0].reported


def test_malformed_beyond_the_readers_checks_is_refused_not_the_end_of_the_informer():
    broken = pod("broken")
    broken["spec"]["containers"][0]["resources"] = "lots"
    cache, _ = fed(*cluster(broken, pod("good")))

    (entry,) = cache.invalid.entries()
    assert entry.message.startswith("cannot be read: AttributeError")
    assert list(cache.snapshot().jobs) == ["ns/pod:uid-ns-good"]


def test_a_podgroup_sluice_cannot_use_makes_its_pods_wait_with_why():
    bad = podgroup("g", 1, min_resources={"memory": "-1Gi"})
    cache, _ = fed(*cluster(pod("member", group="g")), ("podgroups", bad))

    report = run_cycle(cache, client=RecordingClusterClient())

    (waiting,) = report.waiting
    assert waiting.status.code is Code.INVALID_OBJECT
    assert waiting.status.message == (
        "podgroup ns/g is invalid: spec.minResources.memory: invalid quantity '-1Gi': "
        "must not be negative"
    )
    assert [(o.kind, o.field) for o in report.invalid] == [("podgroup", "spec.minResources.memory")]


def test_a_queue_sluice_cannot_use_makes_its_jobs_wait_even_the_default_queue():
    cache, _ = fed(
        ("nodes", node("n1")),
        ("queues", queue("default", capability={"cpu": "1e400"})),
        ("pods", pod("p")),
    )

    report = run_cycle(cache, client=RecordingClusterClient())

    (waiting,) = report.waiting
    assert waiting.status.code is Code.QUEUE_INVALID
    assert waiting.status.message.startswith("queue default is invalid: spec.capability.cpu:")


def test_a_queue_refused_for_a_cycle_in_the_tree_is_taken_once_the_cycle_is_mended():
    cache, feeder = fed(
        ("nodes", node("n1")),
        ("queues", queue("a", parent="b")),
        ("queues", queue("b", parent="a")),
        ("pods", pod("p", queue="b")),
    )
    assert [e.key for e in cache.invalid.entries()] == ["b"]
    report = run_cycle(cache, client=RecordingClusterClient())
    assert "spec.parent forms a cycle" in report.waiting[0].status.message

    feeder.on_update("queues", queue("a", parent="b"), queue("a"))

    assert cache.invalid.entries() == []
    client = RecordingClusterClient()
    run_cycle(cache, client=client)
    assert client.binds() == {"ns/p": "n1"}


def test_a_job_under_a_refused_queue_says_which_ancestor():
    cache, feeder = fed(
        ("nodes", node("n1")),
        ("queues", queue("a")),
        ("queues", queue("b", parent="a")),
        ("pods", pod("p", queue="b")),
    )
    feeder.on_update("queues", queue("a"), queue("a", parent="b"))  # now a -> b -> a

    report = run_cycle(cache, client=RecordingClusterClient())

    message = report.waiting[0].status.message
    assert message.startswith("queue b: its ancestor queue a is invalid: spec.parent forms a cycle")


def test_limits_whose_sum_sluice_cannot_count_are_refused():
    """Each 5Ei fits an int64; two do not, and the node-capacity check sizes pods by limits."""
    big = {"name": "side", "resources": {"limits": {"memory": "5Ei"}, "requests": {"memory": "1"}}}
    cache, _ = fed(*cluster(pod("greedy", limits={"memory": "5Ei"}, containers=[big])))

    (entry,) = cache.invalid.entries()
    assert entry.field == "spec.containers[*].resources.limits.memory"
    assert "the sum is more than 9223372036854775807 bytes" in entry.message


def test_a_cycle_that_raises_is_a_failed_report_and_the_next_one_runs(sim, monkeypatch):
    service = SchedulerService(sim.api_client, act=False).start(sync_timeout=5)
    try:
        real = service_module.run_cycle

        def boom(*args, **kwargs):
            raise OverflowError("Python int too large to convert to C long")

        monkeypatch.setattr(service_module, "run_cycle", boom)
        report = service.run_once()
        assert report.failure == "OverflowError: Python int too large to convert to C long"
        assert report.config is not None and report.transitions == []

        monkeypatch.setattr(service_module, "run_cycle", real)
        assert service.run_once().failure == ""
    finally:
        service.stop()


def test_the_capacity_snapshot_leaves_out_what_it_cannot_read():
    """The resource monitor lists every node and bound pod: one it cannot read must not fail
    the snapshot (the node-capacity check would wait for one for ever)."""
    nodes = [node("n1"), node("n2", cpu="abc")]
    pods = [
        pod("huge", "1e400", node_name="n1", guaranteed=True),
        pod("fine", "1", node_name="n1", guaranteed=True),
    ]

    snapshot = build_snapshot(nodes, pods, datetime.now(UTC))

    (usage,) = snapshot.nodes
    assert usage.node_name == "n1" and [p.name for p in usage.pods] == ["fine"]
    assert usage.remaining["cpu"] == 3000


@pytest.mark.parametrize("priority", [float("inf"), 2.5, 2**31, "1e400"])
def test_a_priority_that_is_no_int32_is_refused_with_its_field(priority):
    """``priority: 1e400`` written as a JSON number reads as infinity: once an OverflowError
    that no handler caught, which stopped the pods' informer."""
    cache, _ = fed(*cluster(pod("bad", priority=priority), pod("good")))

    (entry,) = cache.invalid.entries()
    assert entry.field == "spec.priority" and entry.message.startswith("spec.priority: ")
    assert list(cache.snapshot().jobs) == ["ns/pod:uid-ns-good"]
