"""Queues as they are written, and what is wrong with them said on the object (Part 11).

Seen on main: a queue with ``capability: {cpu: "-5"}`` silently became unlimited, and a pod
naming a queue that does not exist stayed gated forever, described as waiting for queue
capacity. Volcano emits no event for either (its admission webhook refuses such objects at
creation; its scheduler ignores the job, or reads the capability as no limit, in silence), so
Sluice says each once, with a Warning event of its own naming the field, and reports it.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from scheduler.api.report import FIGURES_CAPACITY, FIGURES_HIERARCHY, PodState
from scheduler.api.status import Code
from scheduler.cache import SchedulerCache
from scheduler.config import SchedulerConfig, default_config
from scheduler.loop import run_cycle
from tests.builders import node, pod, podgroup, queue
from tests.fakes import RecordingClusterClient
from tests.scheduler.uthelper import Scenario

GATE = "scheduling.volcano.sh/queue-allocation-gate"
FLAT = SchedulerConfig.from_dict(
    {
        "actions": "enqueue, allocate, backfill",
        "tiers": [
            {"plugins": [{"name": "priority"}, {"name": "gang"}]},
            {"plugins": [{"name": "predicates"}, {"name": "capacity"}]},
        ],
    }
)


@dataclass
class EventClient(RecordingClusterClient):
    """Records events with the kind of their object, as an event's involvedObject has it."""

    events: list[tuple[str, str, str, str, str]] = field(default_factory=list)

    def record_event(self, obj, event_type, reason, message) -> None:
        meta = obj.get("metadata") or {}
        where = f"{meta['namespace']}/{meta['name']}" if meta.get("namespace") else meta["name"]
        self.events.append((obj.get("kind", ""), where, event_type, reason, message))
        super().record_event(obj, event_type, reason, message)


def cycles(cache: SchedulerCache, n: int, config=None, act: bool = True):
    client = EventClient()
    reports = [
        run_cycle(cache, config or default_config(), client, now=float(i), act=act)
        for i in range(n)
    ]
    return reports, client


def test_the_report_carries_each_queue_as_written_and_how_its_figures_were_derived():
    scenario = Scenario(
        nodes=[node("n1", cpu="8", memory="32Gi")],
        queues=[
            queue("prod", capability={"cpu": "48", "memory": "256Gi"}, deserved={"cpu": "16"},
                  guarantee={"cpu": "6"}),
        ],
        pods=[pod("p", queue="prod")],
    )  # fmt: skip
    report, _ = scenario.run()
    by_name = {q.name: q for q in report.queues}

    prod = by_name["prod"]
    assert prod.spec_capability == {"cpu": "48", "memory": "256Gi"}
    assert prod.spec_deserved == {"cpu": "16"} and prod.spec_guarantee == {"cpu": "6"}
    assert prod.capability["cpu"] == 48_000  # the hierarchy: root unlimited, spec caps it
    assert (prod.implicit, prod.figures, prod.unlimited) == (False, FIGURES_HIERARCHY, {})
    # Neither root nor default is a Queue object here: the scheduler's own, and said so.
    assert by_name["root"].implicit and by_name["default"].implicit

    flat, _ = Scenario(nodes=scenario.nodes, queues=scenario.queues, pods=scenario.pods,
                       config=FLAT).run()  # fmt: skip
    prod = {q.name: q for q in flat.queues}["prod"]
    # Without the hierarchy the real capability is the cluster's size: derived, not written.
    assert (prod.figures, prod.capability["cpu"], prod.spec_capability["cpu"]) == (
        FIGURES_CAPACITY,
        8_000,
        "48",
    )


def test_a_capability_at_or_below_zero_is_unlimited_reported_and_said_once_on_the_queue():
    cache = Scenario(
        nodes=[node("n1", cpu="4")],
        queues=[queue("odd", capability={"cpu": "-5", "memory": "8Gi"})],
        pods=[pod("p", "3", queue="odd")],
    ).cache()

    reports, client = cycles(cache, 3)

    odd = {q.name: q for q in reports[0].queues}["odd"]
    assert odd.unlimited == {"cpu": "-5"} and odd.spec_capability["cpu"] == "-5"
    assert "cpu" not in odd.capability  # no limit on CPU (Volcano's rule), a limit on memory
    assert odd.capability["memory"] == 8 * 2**30
    assert client.binds() == {"ns/p": "n1"}
    (event,) = client.events  # once, not once a cycle
    kind, name, event_type, reason, message = event
    assert (kind, name, event_type, reason) == ("Queue", "odd", "Warning", "CapabilityUnlimited")
    assert "spec.capability.cpu is -5" in message and "unlimited on cpu" in message
    for report in reports:
        (problem,) = report.problems
        assert (problem.kind, problem.name, problem.field) == (
            "queue",
            "odd",
            "spec.capability.cpu",
        )
        assert problem.reason == "CapabilityUnlimited" and problem.message == message


def test_a_gated_pod_naming_a_queue_that_does_not_exist_says_so_never_queue_capacity():
    cache = Scenario(
        nodes=[node("n1")],
        pods=[pod("lost", queue="ghost", gates=[GATE], opt_in=True)],
    ).cache()

    reports, client = cycles(cache, 2)

    (waiting,) = [w for w in reports[-1].waiting if w.name == "lost"]
    assert waiting.state is PodState.GATED  # the gate stays: nothing will lift it
    assert (waiting.status.code, waiting.status.message) == (
        Code.QUEUE_INVALID,
        "queue ghost does not exist",
    )
    assert client.of("remove_scheduling_gate") == []
    # A pod without a PodGroup: the event sits on the pod, naming the annotation.
    (event,) = client.events
    assert event[:4] == ("Pod", "ns/lost", "Warning", "QueueNotFound")
    assert event[4] == (
        "queue ghost does not exist: no pod of it is scheduled until a Queue named ghost is created"
    )
    (problem,) = reports[-1].problems
    assert problem.field == "metadata.annotations[scheduling.volcano.sh/queue-name]"
    assert problem.queue == "ghost"


def test_a_podgroup_naming_a_missing_queue_gets_the_event_and_again_if_it_comes_back():
    scenario = Scenario(
        nodes=[node("n1")],
        podgroups=[podgroup("gang", 2, queue="ghost")],
        pods=[pod(f"g{i}", group="gang") for i in range(2)],
    )
    cache = scenario.cache()

    _, client = cycles(cache, 2)
    assert [e[:4] for e in client.events] == [("PodGroup", "ns/gang", "Warning", "QueueNotFound")]

    cache.add_queue(queue("ghost"))  # created: the gang runs, nothing more is said
    reports, client = cycles(cache, 1)
    assert [e[3] for e in client.events if e[2] == "Warning"] == [] and not reports[0].problems
    assert sorted(client.binds()) == ["ns/g0", "ns/g1"]
    cache.delete_queue(queue("ghost"))  # gone again: said again
    _, client = cycles(cache, 1)
    assert [e[3] for e in client.events if e[2] == "Warning"] == ["QueueNotFound"]


def test_a_queue_whose_parent_does_not_exist_is_said_on_the_queue():
    cache = Scenario(
        nodes=[node("n1")],
        queues=[queue("orphan", parent="gone")],
        pods=[pod("p", queue="orphan")],
    ).cache()

    reports, client = cycles(cache, 2)

    (event,) = client.events
    assert event[:4] == ("Queue", "orphan", "Warning", "ParentQueueNotFound")
    assert "spec.parent: queue 'gone' does not exist" in event[4]
    orphan = {q.name: q for q in reports[0].queues}["orphan"]
    assert orphan.problem == "queue orphan: spec.parent: queue 'gone' does not exist"


def test_observe_mode_writes_no_event_and_still_reports_the_problems():
    cache = Scenario(
        nodes=[node("n1")],
        queues=[queue("odd", capability={"memory": "0"})],
        pods=[pod("lost", queue="ghost")],
    ).cache()

    reports, client = cycles(cache, 1, act=False)

    assert client.events == []
    assert sorted(p.reason for p in reports[0].problems) == [
        "CapabilityUnlimited",
        "QueueNotFound",
    ]


def test_through_the_api_the_events_are_on_the_objects_and_the_report_says_who_ran_it(sim):
    """Against the simulated cluster: the Queue with ``cpu: "-5"`` (the CRD's pattern lets it
    through; only Volcano's webhook would refuse it) and a gated pod naming no existing queue
    each get their Warning event, as ``kubectl get events`` lists them; the report carries the
    period and scheduler names of the process that ran the cycle."""
    from kubernetes import client as k8s

    from scheduler.service import SchedulerService
    from tests.builders import body
    from tests.conftest import wait_until

    sim.core.create_node(body(node("n1", cpu="4", ready=True)))
    sim.custom.create_cluster_custom_object(
        "scheduling.volcano.sh", "v1beta1", "queues",
        body(queue("odd", capability={"cpu": "-5", "memory": "8Gi"})),
    )  # fmt: skip
    sim.core.create_namespaced_pod(
        "default",
        body(pod("lost", namespace="default", queue="ghost", gates=[GATE], opt_in=True)),
    )
    service = SchedulerService(
        sim.api_client, scheduler_name=["volcano", "batch"], act=True, period=2.5
    ).start(sync_timeout=5)
    try:
        wait_until(lambda: len(service.cache.snapshot().skipped_jobs) == 1)
        first = service.run_once()
        second = service.run_once()
    finally:
        service.stop()

    events = k8s.CoreV1Api(sim.api_client).list_namespaced_event("default").items
    said = sorted((e.involved_object.kind, e.involved_object.name, e.reason) for e in events
                  if e.type == "Warning")  # fmt: skip
    assert said == [("Pod", "lost", "QueueNotFound"), ("Queue", "odd", "CapabilityUnlimited")]
    for report in (first, second):  # said once, reported every cycle
        assert sorted(p.reason for p in report.problems) == [
            "CapabilityUnlimited",
            "QueueNotFound",
        ]
        (lost,) = report.waiting
        assert lost.state is PodState.GATED and lost.status.code is Code.QUEUE_INVALID
    assert first.config is not None
    assert (first.config.period_s, first.config.scheduler_names) == (2.5, ["volcano", "batch"])
    assert {q.name: q.implicit for q in first.queues if q.name in ("odd", "ghost")} == {
        "odd": False
    }


def test_with_the_hierarchy_a_capability_at_or_below_zero_under_a_parent_is_the_parents():
    cache = Scenario(
        nodes=[node("n1", cpu="8")],
        queues=[
            queue("org", capability={"cpu": "2"}),
            queue("team", parent="org", capability={"cpu": "-5"}),
            queue("solo", capability={"cpu": "0"}),
        ],
        pods=[pod(f"p{i}", queue="team") for i in range(3)],
    ).cache()

    reports, client = cycles(cache, 1)  # Sluice's default: the capacity plugin's hierarchy

    team = {q.name: q for q in reports[0].queues}["team"]
    assert team.capability["cpu"] == 2_000  # org's, not unlimited
    assert sorted(client.binds()) == ["ns/p0", "ns/p1"]
    said = {e[1]: e[4] for e in client.events if e[3] == "CapabilityUnlimited"}
    assert said["team"].endswith(
        "so queue team has no cpu limit of its own: its parent org's holds it"
    )
    assert said["solo"].endswith("so queue solo is unlimited on cpu")  # under root: none
