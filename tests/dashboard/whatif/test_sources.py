"""The what-if lab's sources from the connected cluster: the workload Sluice's history recorded
(``workload: {recorded: ...}``) and a copy of the cluster's nodes (``cluster: {connected:
...}``).

The history is made through the real recording path: the real scheduler (``SchedulerService``)
against the simulated cluster (``tests/e2e/harness``), each cycle's report stored by the Celery
task's function (``store_cycle_report``) as a worker stores it. The dashboard reads the
cluster through its configured kubernetes client (a kubeconfig of the simulated API server).
"""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

import pytest
import yaml
from django.contrib.auth.models import User
from django.core.management import call_command
from kubernetes import client

from dashboard import kube
from dashboard.models import Cycle, LiveState, PodTransition, QueueSample, TrackedPod
from dashboard.tasks.history import store_cycle_report
from dashboard.whatif import runner, sources
from dashboard.whatif.models import Experiment
from dashboard.whatif.spec import SpecError, loads, resolve_and_load
from scheduler.api.labels import GROUP_NAME_ANNOTATION
from tests.e2e import harness
from tests.e2e.harness import Harness

pytestmark = pytest.mark.django_db

NS = "team"
SCENARIO = {
    "kubelet": {"startupDelay": 1, "deleteCompletedPods": False},
    "namespaces": [{"name": NS}],
    "queues": [
        {"name": "org", "spec": {"capability": {"cpu": "12"}}},
        {"name": "q", "spec": {"parent": "org", "capability": {"cpu": "4", "memory": "16Gi"}}},
        {"name": "wide", "spec": {}},
    ],
    "nodes": [
        {"namePrefix": "m5", "count": 2, "labels": {"node.kubernetes.io/instance-type": "m5.2xlarge",
         "zone": "a"}, "capacity": {"cpu": "8", "memory": "32Gi", "pods": "110"}},
        {"name": "small", "labels": {"zone": "b"}, "capacity": {"cpu": "4", "memory": "8Gi"},
         "taints": [{"key": "dedicated", "value": "batch", "effect": "NoSchedule"}]},
    ],
    "workload": [
        # A gang of three, high priority, 5 s each once started.
        {"at": 0, "name": "train", "namespace": NS, "queue": "q", "replicas": 3,
         "podGroup": {"minMember": 3, "priorityClassName": "high"}, "priorityClassName": "high",
         "requests": {"cpu": "1", "memory": "1Gi"}, "duration": 5},
        {"at": 2, "name": "solo", "namespace": NS, "queue": "q",
         "requests": {"cpu": "500m", "memory": "512Mi"}, "duration": 3},
        # Still running at the window's end.
        {"at": 4, "name": "server", "namespace": NS, "queue": "wide",
         "requests": {"cpu": "2", "memory": "2Gi"}},
        # No node can take it: never bound.
        {"at": 6, "name": "huge", "namespace": NS, "queue": "wide",
         "requests": {"cpu": "64", "memory": "1Gi"}},
    ],
}  # fmt: skip
SECONDS = 14  # recorded: creation at 0..6 s, the gang done by ~8 s, solo by ~7 s
START = datetime.fromtimestamp(harness.START, tz=UTC)
END = START + timedelta(seconds=SECONDS)


@pytest.fixture
def recorded(settings, tmp_path):
    """SCENARIO played by the real scheduler for SECONDS, every report stored; the dashboard's
    kubernetes client pointed at the simulated cluster."""
    h = Harness(SCENARIO)
    try:
        client.SchedulingV1Api(h.api).create_priority_class(
            {"metadata": {"name": "high"}, "value": 1000}
        )
        for _ in range(SECONDS):
            h.step()
        for report in h.reports:
            store_cycle_report(report.to_json())
        settings.SLUICE_KUBECONFIG = str(h.server.write_kubeconfig(tmp_path / "kubeconfig"))
        kube.api_client.cache_clear()
        yield h
    finally:
        kube.api_client.cache_clear()
        h.close()


def test_the_recorded_workload_keeps_arrivals_requests_gangs_priorities_and_queues(recorded):
    cluster = recorded.store.get("namespaces", "", "kube-system")["metadata"]["uid"]
    frozen = sources.record_window(START, END)

    assert frozen["cluster"] == cluster
    pods = {p["name"]: p for p in frozen["pods"]}
    assert sorted(pods) == ["huge", "server", "solo", "train-0", "train-1", "train-2"]
    # Arrivals: the scenario's, relative to the window's start.
    assert [pods[f"train-{i}"]["at"] for i in range(3)] == [0, 0, 0]
    assert (pods["solo"]["at"], pods["server"]["at"], pods["huge"]["at"]) == (2, 4, 6)
    # Requests as quantities the simulated API reads back to the same engine units.
    assert pods["train-0"]["requests"] == {"cpu": "1", "memory": str(2**30)}
    assert pods["solo"]["requests"] == {"cpu": "500m", "memory": str(512 * 2**20)}
    assert pods["huge"]["requests"] == {"cpu": "64", "memory": str(2**30)}
    # The gang, its minMember and priority class; queues; priority classes with their value.
    assert {pods[f"train-{i}"].get("gang") for i in range(3)} == {"train"}
    assert "gang" not in pods["solo"]
    assert frozen["gangs"] == [{"namespace": NS, "name": "train", "minMember": 3, "queue": "q",
                                "priorityClassName": "high"}]  # fmt: skip
    assert pods["train-1"]["priorityClassName"] == "high"
    assert frozen["priorityClasses"] == [{"name": "high", "value": 1000}]
    assert {p["name"]: p["queue"] for p in frozen["pods"]}["server"] == "wide"
    queues = {q["name"]: q["spec"] for q in frozen["queues"]}
    assert queues == {  # q's parent too, though no pod names it
        "org": {"capability": {"cpu": "12"}},
        "q": {"capability": {"cpu": "4", "memory": "16Gi"}, "parent": "org"},
        "wide": {},
    }
    assert [q["name"] for q in frozen["queues"]] == ["org", "wide", "q"]  # parents first
    # Run times: bound to finished (5 s of running after a 1 s start, within a cycle's
    # resolution); still running at the end or never bound: none recorded, said in notes.
    for name in ("train-0", "train-1", "train-2", "solo"):
        expected = 5 if name.startswith("train") else 3
        assert expected <= pods[name]["duration"] <= expected + 2, pods[name]
    assert "duration" not in pods["server"] and "duration" not in pods["huge"]
    assert any("2 pod(s) still running or never bound" in n for n in frozen["notes"])

    # A window starting after the gang began: the gang's pods, alive then, arrive at 0 and
    # run for what was left of them; solo, created before and finished too, is left out.
    later = sources.record_window(START + timedelta(seconds=3), END)
    later_pods = {p["name"]: p for p in later["pods"]}
    assert later_pods["train-0"]["at"] == 0
    assert later_pods["train-0"]["duration"] < pods["train-0"]["duration"]
    assert later_pods["server"]["at"] == 1


def test_a_window_with_no_pods_is_refused_naming_the_field(recorded):
    before = START - timedelta(hours=2)
    with pytest.raises(sources.SourceError, match=r"^workload\.recorded\.from/to: no pod was "
                       r"recorded between .* and .* on cluster "):  # fmt: skip
        sources.record_window(before, before + timedelta(hours=1))
    text = yaml.safe_dump({
        "workload": {"recorded": {"from": before.isoformat(), "to": START.isoformat()}},
        "cluster": {"connected": {}}, "variants": [{"name": "a"}],
    })  # fmt: skip
    with pytest.raises(SpecError, match=r"workload\.recorded\.from/to: no pod was recorded"):
        resolve_and_load(text)
    with pytest.raises(sources.SourceError, match=r"workload\.recorded\.to: must be after"):
        sources.record_window(START, START)
    with pytest.raises(SpecError, match=r"workload\.recorded: unknown key\(s\) form; expected "
                       r"cluster, from, to"):  # fmt: skip
        resolve_and_load(text.replace("from:", "form:"))


def test_the_copy_of_the_connected_cluster_has_the_simulated_clusters_nodes(recorded):
    copied = sources.copy_connected(node_group_max=4)

    listed = recorded.store.list("nodes")[0]
    assert len(listed) == 3
    by_name = {n["name"]: n for n in copied["nodes"]}
    for node in listed:
        name = node["metadata"]["name"]
        labels = {k: v for k, v in node["metadata"]["labels"].items() if k != sources.HOSTNAME}
        assert by_name[name]["capacity"] == node["status"]["allocatable"]
        assert by_name[name].get("labels", {}) == labels
        assert by_name[name].get("taints", []) == node["spec"].get("taints", [])
    # Grouped by shape: the two m5.2xlarge by their instance type, small alone.
    assert [(g["name"], g["by"], g["nodes"]) for g in copied["groups"]] == [
        ("m5-2xlarge", "instance type", ["m5-1", "m5-2"]),
        ("shape-2", "allocatable and labels", ["small"]),
    ]
    # The autoscaler's node group: a template of the commonest group.
    (group,) = copied["nodeGroups"]
    assert group["name"] == "copy-m5-2xlarge" and group["max"] == 4
    assert group["template"] == {
        "capacity": by_name["m5-1"]["capacity"],
        "labels": {"node.kubernetes.io/instance-type": "m5.2xlarge", "zone": "a"},
    }

    # What a variant plays on: the same nodes, the same allocatable, labels and taints.
    spec = resolve_and_load(
        "workload: {trace: {pods: 5, nodes: 2}}\ncluster: {connected: {nodeGroupMax: 4}}\n"
        "variants: [{name: a}]\n"
    )
    played = runner.build_scenario(spec)
    assert sorted(n["metadata"]["name"] for n in played.nodes) == sorted(
        n["metadata"]["name"] for n in listed
    )
    for node in played.nodes:
        original = recorded.store.get("nodes", "", node["metadata"]["name"])
        assert node["status"]["allocatable"] == original["status"]["allocatable"]
        assert node["metadata"]["labels"] == original["metadata"]["labels"]
        assert node["spec"].get("taints") == original["spec"].get("taints")
    assert [g.name for g in played.node_groups] == ["copy-m5-2xlarge"]


def test_a_recorded_window_exported_plays_the_same_twice_without_the_history(
    recorded, tmp_path, settings
):
    text = yaml.safe_dump({
        "name": "recorded", "seed": 3, "horizon": 20, "step": 1,
        "workload": {"recorded": {"from": START.isoformat(), "to": END.isoformat()}},
        "cluster": {"connected": {}},
        "variants": [{"name": "gates off", "gates": False, "marking": "volcano"},
                     {"name": "gates on", "gates": True}],
    })  # fmt: skip
    spec = resolve_and_load(text)
    exported = tmp_path / "recorded.yaml"
    exported.write_text(spec.to_yaml())
    assert loads(exported.read_text()) == spec  # the file carries the pods and nodes themselves
    # Played as recorded: the gang's PodGroup (minMember, queue, class) arrives with its pods.
    scenario = runner.build_scenario(loads(exported.read_text()))
    groups = [g for a in scenario.arrivals for g in a.podgroups]
    assert [(g["metadata"]["name"], g["spec"]) for g in groups] == [
        ("train", {"minMember": 3, "queue": "q", "priorityClassName": "high"})
    ]
    first = next(i for i, a in enumerate(scenario.arrivals) if a.podgroups)
    members = {p["metadata"]["name"]: (i, p) for i, a in enumerate(scenario.arrivals)
               for p in a.pods if p["metadata"]["name"].startswith("train")}  # fmt: skip
    assert sorted(members) == ["train-0", "train-1", "train-2"]
    for i, p in members.values():
        assert p["metadata"]["annotations"][GROUP_NAME_ANNOTATION] == "train" and i >= first

    # Another machine: no history, no cluster.
    for model in (PodTransition, TrackedPod, QueueSample, LiveState, Cycle):
        model.objects.all().delete()
    settings.SLUICE_KUBECONFIG = str(tmp_path / "absent")
    kube.api_client.cache_clear()

    first, second = tmp_path / "first.json", tmp_path / "second.json"
    call_command("whatif", str(exported), output=str(first))
    call_command("whatif", str(exported), output=str(second))
    assert first.read_text() == second.read_text()
    results = json.loads(first.read_text())
    for r in results:
        played = {p["name"]: p for p in r["pods"]}
        assert sorted(played) == ["huge", "server", "solo", "train-0", "train-1", "train-2"]
        assert played["solo"]["created"] == 2 and played["huge"]["created"] == 6
        assert played["huge"]["bound"] is None  # 64 CPU: no node of the copy takes it
        assert played["train-0"]["bound"] is not None and played["train-0"]["queue"] == "q"


def test_the_page_offers_both_sources_and_freezes_them_into_the_experiment(
    recorded, client, monkeypatch, django_capture_on_commit_callbacks
):
    page = client.get("/whatif/").content.decode()
    assert '<option value="recorded">' in page and '<option value="connected">' in page
    assert 'name="from"' in page and 'name="to"' in page

    window = {"from": START.strftime("%Y-%m-%dT%H:%M:%S"), "to": END.strftime("%Y-%m-%dT%H:%M:%S")}
    filled = client.get("/whatif/", {"workload": "recorded", "cluster": "connected", **window})
    assert filled.status_code == 200
    text = filled.context["spec_text"]
    spec = loads(text)
    assert sorted(p["name"] for p in spec.workload["recorded"]["pods"])[:2] == ["huge", "server"]
    assert [n["name"] for n in spec.cluster["connected"]["nodes"]] == ["m5-1", "m5-2", "small"]

    own = client.get("/whatif/", {"workload": "recorded", "cluster": "own", **window})
    assert own.status_code == 400
    assert "a recorded workload has no cluster of its own" in own.content.decode()
    empty = client.get("/whatif/", {"workload": "recorded", "cluster": "connected",
                                    "from": "2020-01-01T00:00:00", "to": "2020-01-01T01:00:00"})  # fmt: skip
    assert empty.status_code == 400
    assert "workload.recorded.from/to: no pod was recorded" in empty.content.decode()

    # Started from a window (not yet read): what is stored, and exported, is the workload.
    from dashboard.celery import app as celery_app

    monkeypatch.setattr(celery_app, "send_task", lambda *a, **k: None)
    client.force_login(User.objects.create_user("ann", password="pw-ann-1"))
    raw = yaml.safe_dump({"workload": {"recorded": window}, "cluster": {"connected": {}},
                          "variants": [{"name": "a"}]})  # fmt: skip
    with django_capture_on_commit_callbacks(execute=True):
        client.post("/whatif/start/", {"spec": raw})
    experiment = Experiment.objects.get()
    exported = client.get(f"/whatif/{experiment.pk}/experiment.yaml").content.decode()
    assert loads(exported).workload["recorded"]["pods"] == spec.workload["recorded"]["pods"]
