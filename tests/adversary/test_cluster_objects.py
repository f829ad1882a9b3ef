"""Objects changed through the API while the scheduler runs: queues whose hierarchy is
broken and mended, PriorityClasses whose default moves. What the scheduler's cache keeps must
follow what the cluster holds (Volcano's cache handlers, pkg/scheduler/cache/event_handlers.go)."""

from __future__ import annotations

from tests.adversary.helpers import (
    VOLCANO,
    cycle,
    make_node,
    make_pod,
    make_podgroup,
    node_of,
    scheduling,
    start_service,
)


def queue_with_parent(name: str, parent: str) -> dict:
    return {"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "Queue",
            "metadata": {"name": name}, "spec": {"weight": 1, "parent": parent}}  # fmt: skip


def test_a_queue_cycle_mended_through_the_api_lets_its_jobs_run(sim):
    """README, Differences from Volcano, "Bad queue": with a queue cycle "only that queue's
    jobs wait, with the reason" — not forever: once the user mends ``spec.parent`` the
    queue is a good queue again and its pods schedule. Sluice's cache refuses the queue that
    closes the cycle (SchedulerCache.add_queue raises QueueCycleError; CacheFeeder logs and
    drops the event), so queue ``b`` never enters the cache; mending ``a`` later brings no new
    event for ``b``, and b's pod waits for ever with "queue b does not exist" although b
    exists and is valid."""
    make_node(sim, "n1", cpu="4")
    sim.custom.create_cluster_custom_object(*VOLCANO, "queues", queue_with_parent("a", "b"))
    sim.custom.create_cluster_custom_object(*VOLCANO, "queues", queue_with_parent("b", "a"))
    make_pod(sim, "p", queue="b")
    service = start_service(sim)
    try:
        cycle(sim, service)
        assert node_of(sim, "p") is None  # the cycle a -> b -> a: b's pod waits
        sim.custom.patch_cluster_custom_object(
            *VOLCANO, "queues", "a", {"spec": {"parent": "root"}}
        )
        reports = [cycle(sim, service) for _ in range(2)]
        waiting = {w.name: w.status.message for w in reports[-1].waiting}
        assert node_of(sim, "p") == "n1", waiting
    finally:
        service.stop()


def test_a_queue_updated_into_a_cycle_is_reported_not_silently_kept_as_before(sim):
    """The other half of the same promise: a queue *updated* so that it closes a cycle must
    make its jobs wait "with the reason". Sluice drops the update (the cache keeps the queue
    as it was before), so the queue goes on scheduling under its old parent and nothing in
    the cycle report says the hierarchy is broken."""
    make_node(sim, "n1", cpu="4")
    sim.custom.create_cluster_custom_object(*VOLCANO, "queues", queue_with_parent("a", "root"))
    sim.custom.create_cluster_custom_object(*VOLCANO, "queues", queue_with_parent("b", "a"))
    service = start_service(sim)
    try:
        cycle(sim, service)
        sim.custom.patch_cluster_custom_object(*VOLCANO, "queues", "a", {"spec": {"parent": "b"}})
        make_pod(sim, "p", queue="b")
        report = cycle(sim, service)
        waiting = {w.name: w.status.message for w in report.waiting}
        assert node_of(sim, "p") is None
        assert "cycle" in waiting.get("p", ""), waiting
    finally:
        service.stop()


def test_a_priority_class_that_stops_being_the_global_default_stops_giving_its_value(sim):
    """Volcano's cache takes a job's priority from its PodGroup's priorityClassName, else the
    global default class's value, else 0 (cache.go Snapshot: ``value.Priority =
    sc.defaultPriority``). Its updatePriorityClass deletes the old class then adds the new one,
    and deletePriorityClass resets the default when the old one was it — so a class patched
    to ``globalDefault: false`` no longer lends its value to PodGroups that name no class.
    Sluice's SchedulerCache.add_priority_class (also its update handler) only ever *sets*
    default_priority, so the old default's 1000 sticks: PodGroup ``a`` (no class) keeps 1000
    and beats ``b`` (class ``mid``, 500) to the only CPU."""
    api = scheduling(sim)
    api.create_priority_class({"metadata": {"name": "dflt"}, "value": 1000, "globalDefault": True})
    api.create_priority_class({"metadata": {"name": "mid"}, "value": 500})
    make_node(sim, "n1", cpu="1")
    service = start_service(sim)
    try:
        cycle(sim, service)
        api.patch_priority_class("dflt", {"globalDefault": False})
        make_podgroup(sim, "a")
        make_pod(sim, "a-0", group="a")
        make_podgroup(sim, "b", priority_class="mid")
        make_pod(sim, "b-0", group="b")
        cycle(sim, service)
        assert (node_of(sim, "a-0"), node_of(sim, "b-0")) == (None, "n1")
    finally:
        service.stop()


def test_a_deleted_priority_class_leaves_its_podgroups_at_the_default_priority(sim):
    """Volcano's Snapshot: a PodGroup whose class no longer exists gets the default priority
    (0 without a global default). PodGroup ``a`` names class ``gone`` (deleted after its
    creation) and must lose to ``b`` of class ``mid`` (500). (Regression test: passes today.)"""
    api = scheduling(sim)
    api.create_priority_class({"metadata": {"name": "gone"}, "value": 1000})
    api.create_priority_class({"metadata": {"name": "mid"}, "value": 500})
    make_node(sim, "n1", cpu="1")
    service = start_service(sim)
    try:
        make_podgroup(sim, "a", priority_class="gone")
        make_pod(sim, "a-0", group="a")
        api.delete_priority_class("gone")
        make_podgroup(sim, "b", priority_class="mid")
        make_pod(sim, "b-0", group="b")
        cycle(sim, service)
        assert (node_of(sim, "a-0"), node_of(sim, "b-0")) == (None, "n1")
    finally:
        service.stop()
