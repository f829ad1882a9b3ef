"""SchedulerCache: handlers, snapshots, bind and evict."""

import threading

from scheduler.api.status import Code, Status
from scheduler.api.task_info import TaskStatus
from scheduler.cache import SchedulerCache
from scheduler.config import default_config
from scheduler.loop import run_cycle
from tests.builders import node, pod, podgroup, queue
from tests.fakes import RecordingClusterClient
from tests.scheduler.uthelper import binds


def test_handlers_add_update_delete():
    cache = SchedulerCache()
    cache.add_node(node("n1"))
    cache.add_queue(queue("q"))
    cache.add_podgroup(podgroup("g", 2, queue="q"))
    cache.add_pod(pod("a", group="g"))
    cache.add_pod(pod("b", group="g"))
    snap = cache.snapshot()
    assert snap.jobs["ns/g"].queue == "q" and len(snap.jobs["ns/g"].tasks) == 2
    cache.update_pod(pod("a", group="g", node_name="n1"))
    assert cache.snapshot().nodes["n1"].idle.get("cpu") == 3000
    cache.delete_pod(pod("a", group="g", node_name="n1"))
    assert cache.snapshot().nodes["n1"].idle.get("cpu") == 4000
    cache.update_node(node("n1", cpu="8"))
    assert cache.snapshot().nodes["n1"].idle.get("cpu") == 8000
    cache.delete_node(node("n1"))
    cache.delete_queue(queue("q"))
    snap = cache.snapshot()
    assert snap.nodes == {} and "ns/g" not in snap.jobs
    assert snap.skipped["ns/g"] == Status(Code.QUEUE_INVALID, "cache", "queue q does not exist")


def test_pod_queue_from_podgroup_then_annotation_then_default():
    cache = SchedulerCache()
    cache.add_queue(queue("from-pg"))
    cache.add_queue(queue("from-annotation"))
    cache.add_podgroup(podgroup("g", queue="from-pg"))
    cache.add_pod(pod("a", group="g", queue="from-annotation"))
    cache.add_pod(pod("b", queue="from-annotation"))
    cache.add_pod(pod("c"))
    queues = {j.name: j.queue for j in cache.snapshot().jobs.values()}
    assert queues == {"g": "from-pg", "b": "from-annotation", "c": "default"}


def test_pod_in_group_without_podgroup_is_skipped_with_a_reason():
    cache = SchedulerCache()
    cache.add_pod(pod("a", group="missing"))
    snap = cache.snapshot()
    assert snap.jobs == {}
    assert snap.skipped["ns/missing"].code is Code.INVALID_OBJECT
    assert snap.skipped["ns/missing"].message == "podgroup ns/missing does not exist"


def test_snapshot_clones_tasks_but_shares_pods():
    cache = SchedulerCache()
    original = pod("a")
    cache.add_pod(original)
    snap = cache.snapshot()
    task = next(iter(snap.jobs.values())).tasks["uid-ns-a"]
    task.status = TaskStatus.ALLOCATED
    again = next(iter(cache.snapshot().jobs.values())).tasks["uid-ns-a"]
    assert again.status == TaskStatus.PENDING
    assert task.pod is original and again.pod is original


def test_bind_marks_task_binding_in_the_cache():
    cache = SchedulerCache()
    cache.add_node(node("n1"))
    cache.add_pod(pod("a"))
    task = next(iter(cache.snapshot().jobs.values())).tasks["uid-ns-a"]
    client = RecordingClusterClient()
    cache.bind(task, "n1", client)
    snap = cache.snapshot()
    assert next(iter(snap.jobs.values())).tasks["uid-ns-a"].status == TaskStatus.BINDING
    assert snap.nodes["n1"].idle.get("cpu") == 3000
    assert client.calls == [("bind", "ns/a", "n1")]


def test_a_pod_the_watch_shows_bound_before_the_bind_call_returns_stays_bound():
    # The API server answers the bind, then the watch delivers the bound pod; on a busy
    # process the watch thread may run first. The pod is not Binding again after that: it
    # would stay so until its next change (seen as "Binding" forever on the Pods page).
    cache = SchedulerCache()
    cache.add_node(node("n1"))
    cache.add_pod(pod("a"))
    task = next(iter(cache.snapshot().jobs.values())).tasks["uid-ns-a"]

    class WatchFirst(RecordingClusterClient):
        def bind(self, obj, node_name):
            super().bind(obj, node_name)
            cache.update_pod(pod("a", node_name=node_name))  # the watch event, delivered

    cache.bind(task, "n1", WatchFirst())

    task = next(iter(cache.snapshot().jobs.values())).tasks["uid-ns-a"]
    assert task.status == TaskStatus.RUNNING
    assert [(r.name, r.state.value, r.node) for r in cache.pod_records()] == [
        ("a", "running", "n1")
    ]


def test_evict_marks_task_releasing():
    cache = SchedulerCache()
    cache.add_node(node("n1"))
    cache.add_pod(pod("a", node_name="n1"))
    task = next(iter(cache.snapshot().jobs.values())).tasks["uid-ns-a"]
    client = RecordingClusterClient()
    cache.evict(task, "preempted", client)
    snap = cache.snapshot()
    assert snap.nodes["n1"].releasing.get("cpu") == 1000
    assert client.calls == [("evict", "ns/a", "preempted")]


def test_handlers_are_thread_safe():
    cache = SchedulerCache()
    cache.add_node(node("n1", cpu="1000", pods="5000"))

    def worker(k: int) -> None:
        for i in range(200):
            cache.add_pod(pod(f"p{k}-{i}", "1", node_name="n1"))
            cache.snapshot() if i % 50 == 0 else None

    threads = [threading.Thread(target=worker, args=(k,)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert cache.snapshot().nodes["n1"].idle.get("cpu") == 1000_000 - 800_000


def test_recording_client_satisfies_the_protocol():
    from scheduler.cache import ClusterClient

    assert isinstance(RecordingClusterClient(), ClusterClient)


def test_no_pod_is_bound_into_room_an_overcommitted_node_does_not_have():
    cache = SchedulerCache()
    cache.add_node(node("n1", cpu="4"))
    # Pods of another scheduler overcommit the node (3 + 3 CPU on 4); one of them leaves.
    a, b = (pod(n, "3", node_name="n1", scheduler="default-scheduler") for n in ("a", "b"))
    cache.add_pod(a)
    cache.add_pod(b)
    cache.delete_pod(a)
    cache.add_pod(pod("wants-2", "2"))
    cache.add_pod(pod("wants-1", "1"))
    client = RecordingClusterClient()
    run_cycle(cache, default_config(), client, now=0.0)
    assert binds(client) == {"ns/wants-1": "n1"}


def test_each_pods_facts_are_reported_once_and_a_gangs_wait_for_its_podgroup():
    """CycleReport.pod_facts (the what-if lab's recorded workload): requests in engine units,
    the PodGroup and its minMember, priorities; sent for a pod the first time only, and for a
    pod of a PodGroup not yet delivered, once it is (its minMember unknown before)."""
    cache = SchedulerCache(priority_classes={"high": 1000})
    cache.add_queue(queue("q"))
    cache.add_pod(pod("g-0", "2", "1Gi", group="g", priority_class="high"))
    cache.add_pod(pod("solo", "500m", "512Mi"))
    first = cache.new_pod_facts()
    (solo,) = first.values()  # g-0 waits for its PodGroup
    assert solo == {"requests": {"cpu": 500, "memory": 512 * 2**20}, "group": "",
                    "minMember": 1, "groupPriorityClassName": "", "groupPriority": 0,
                    "priorityClassName": "", "priority": 0}  # fmt: skip
    cache.add_podgroup(podgroup("g", 3, queue="q", priority_class="high"))
    (gang_pod,) = cache.new_pod_facts().values()
    assert gang_pod == {"requests": {"cpu": 2000, "memory": 2**30}, "group": "g",
                        "minMember": 3, "groupPriorityClassName": "high", "groupPriority": 1000,
                        "priorityClassName": "high", "priority": 1000}  # fmt: skip
    assert cache.new_pod_facts() == {}
    # Deleted and created again under its name (a new UID): a new pod, reported.
    cache.delete_pod(pod("solo", "500m", "512Mi"))
    cache.add_pod(pod("solo", "1", "1Gi", uid="solo-2"))
    assert list(cache.new_pod_facts()) == ["solo-2"]


def test_a_gangs_facts_wait_for_its_priority_class_and_take_its_value_then():
    """The PodGroup's PriorityClass delivered after the PodGroup (informers of two kinds race):
    its facts wait for the class, then carry its value, not the 0 the job had on arrival."""
    cache = SchedulerCache()
    cache.add_queue(queue("q"))
    cache.add_podgroup(podgroup("g", 1, queue="q", priority_class="high"))
    cache.add_pod(pod("g-0", "1", group="g", priority_class="high", priority=1000))
    assert cache.new_pod_facts() == {}
    cache.add_priority_class(
        {"metadata": {"name": "high"}, "value": 1000, "apiVersion": "scheduling.k8s.io/v1"}
    )
    (facts,) = cache.new_pod_facts().values()
    assert (facts["groupPriorityClassName"], facts["groupPriority"]) == ("high", 1000)
    assert facts["priority"] == 1000


def test_a_pod_update_reads_again_only_what_changed_and_never_keeps_a_stale_request():
    """A watch update takes the requests and node constraints from the task it replaces when
    the fields they come from are unchanged (most updates are a bind or a phase); a change to
    a container's request (an in-place resize) or to the tolerations is read again."""
    cache = SchedulerCache()
    cache.add_node(node("n1", cpu="8"))
    cache.add_pod(pod("a", cpu="1"))
    before = cache.snapshot().jobs["ns/pod:uid-ns-a"].tasks["uid-ns-a"]
    cache.update_pod(pod("a", cpu="1", node_name="n1", phase="Running"))
    bound = cache.snapshot().jobs["ns/pod:uid-ns-a"].tasks["uid-ns-a"]
    assert bound.resreq is before.resreq  # taken over, not parsed again
    assert bound.signature.node_name == "n1" and before.signature.node_name == ""
    assert cache.snapshot().nodes["n1"].idle.get("cpu") == 7000
    resized = pod("a", cpu="3", node_name="n1", phase="Running")
    resized["spec"]["tolerations"] = [{"key": "gpu", "operator": "Exists"}]
    cache.update_pod(resized)
    task = cache.snapshot().jobs["ns/pod:uid-ns-a"].tasks["uid-ns-a"]
    assert task.resreq.get("cpu") == 3000 and task.node_req.get("cpu") == 3000
    assert task.signature.tolerations != bound.signature.tolerations
    assert cache.snapshot().nodes["n1"].idle.get("cpu") == 5000


def test_a_task_keeping_its_decision_is_compared_with_the_spec_it_was_read_from():
    """While a task keeps its allocation (Volcano's allocatedPodInCache), the cache takes the
    fresher pod without reading it; the next update is compared with the spec the requests
    came from, not with that fresher pod, so a request changed meanwhile is not missed."""
    cache = SchedulerCache()
    cache.add_node(node("n1", cpu="8"))
    cache.add_pod(pod("a", cpu="1"))
    cache.bind(cache.snapshot().jobs["ns/pod:uid-ns-a"].tasks["uid-ns-a"], "n1",
               RecordingClusterClient())  # fmt: skip
    cache.update_pod(pod("a", cpu="2"))  # kept: the task stays allocated, with the new pod
    cache.update_pod(pod("a", cpu="2", node_name="n1"))
    task = cache.snapshot().jobs["ns/pod:uid-ns-a"].tasks["uid-ns-a"]
    assert task.resreq.get("cpu") == 2000
    assert cache.snapshot().nodes["n1"].idle.get("cpu") == 6000
