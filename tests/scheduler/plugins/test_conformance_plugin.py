"""conformance: critical pods (system-cluster-critical, system-node-critical, kube-system) are
never victims of preempt or reclaim (Volcano's conformance.go at ed72c7c8)."""

from scheduler.api.task_info import TaskInfo
from tests.builders import node, pod, queue
from tests.scheduler.plugins.sessions import configuration, open_session, task_named
from tests.scheduler.uthelper import Scenario


def test_kube_system_pods_are_not_preemptable():
    # Volcano's TestConformancePlugin: of two running pods, the kube-system one is kept.
    ssn = open_session(Scenario(nodes=[node("n1")]), configuration(["conformance"]))
    system = TaskInfo(pod("test-pod", namespace="kube-system", node_name="n1"))
    other = TaskInfo(pod("test-pod", namespace="test-namespace", node_name="n1"))
    preemptor = TaskInfo(pod("preemptor"))
    assert ssn.preemptable(preemptor, [system, other]) == [other]


def test_critical_priority_classes_are_neither_preemptable_nor_reclaimable():
    spec = {"priorityClassName": "system-node-critical"}
    pods = [
        pod("node-critical", node_name="n1", spec=spec),
        pod("cluster-critical", node_name="n1", priority_class="system-cluster-critical"),
        pod("plain", node_name="n1"),
    ]
    ssn = open_session(Scenario(nodes=[node("n1")]), configuration(["conformance"]))
    tasks = [TaskInfo(p) for p in pods]
    preemptor = TaskInfo(pod("preemptor"))
    assert [t.name for t in ssn.preemptable(preemptor, tasks)] == ["plain"]
    assert [t.name for t in ssn.reclaimable(preemptor, tasks)] == ["plain"]


def test_reclaim_evicts_around_a_critical_pod():
    # busy is above its deserved share; its kube-system pod is the first candidate, but
    # conformance keeps it and the other pod goes.
    scenario = Scenario(
        nodes=[node("n1", cpu="2", memory="8Gi")],
        queues=[queue("busy"), queue("starved")],
        pods=[
            pod("sys", "1", namespace="kube-system", queue="busy", node_name="n1", created=1),
            pod("app", "1", queue="busy", node_name="n1", created=0),
            pod("want", "1", queue="starved"),
        ],
        config=configuration(
            ["priority", "gang", "conformance"],
            ["predicates", "proportion"],
            actions="enqueue, allocate, reclaim",
        ),
    )
    _, client = scenario.run()
    assert [c[1] for c in client.of("evict")] == ["ns/app"]


def test_a_session_task_is_judged_by_its_pod():
    scenario = Scenario(nodes=[node("n1")], pods=[pod("p", namespace="kube-system")])
    ssn = open_session(scenario, configuration(["conformance"]))
    assert ssn.reclaimable(TaskInfo(pod("x")), [task_named(ssn, "p")]) == []
