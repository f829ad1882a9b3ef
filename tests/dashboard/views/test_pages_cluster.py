"""Pages that read or write the cluster, against the simulated API server through the real
kubernetes client: namespaces and the opt-in toggle, the queue tree, the autoscaler."""

from __future__ import annotations

import json
import time

import pytest
from django.contrib.auth.models import Permission, User

from dashboard import kube
from dashboard.models import NamespaceOptInChange
from dashboard.tasks.history import store_cycle_report
from scheduler.api.labels import PROVISIONER_LABEL, QUEUE_ALLOCATION_GATE, SCALE_UP_ANNOTATION
from tests.builders import (
    body,
    cycle_report,
    namespace,
    node,
    queue,
    queue_report,
    waiting_pod,
)
from tests.scheduler.conftest import sim  # noqa: F401 - sim is a fixture

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def acting(settings):
    """The toggle writes to the cluster: it is offered in act mode only (observe mode: 409)."""
    settings.SLUICE_MODE = "act"


@pytest.fixture
def cluster(settings, sim, tmp_path):  # noqa: F811
    settings.SLUICE_KUBECONFIG = str(sim.server.write_kubeconfig(tmp_path / "kubeconfig"))
    kube.api_client.cache_clear()
    for name, labels in (("research", {QUEUE_ALLOCATION_GATE: "true"}), ("batch", {})):
        sim.core.create_namespace(body(namespace(name, labels=labels)))
    yield sim
    kube.api_client.cache_clear()


@pytest.fixture
def operator(client):
    user = User.objects.create_user("olivia", password="pw-operator-1")
    user.user_permissions.add(Permission.objects.get(codename="toggle_namespace_opt_in"))
    client.force_login(user)
    return user


@pytest.fixture
def viewer(client):
    user = User.objects.create_user("victor", password="pw-viewer-1")
    client.force_login(user)
    return user


def labels(running, name: str) -> dict:
    return running.core.read_namespace(name).metadata.labels or {}


def test_namespaces_show_opt_in_and_gated_counts(client, cluster):
    store_cycle_report(
        cycle_report(
            time.time(), waiting=[waiting_pod("nb-1", "research", gated=True, reason="full")]
        )
    )

    page = client.get("/namespaces/").content.decode()

    research = page[page.index('data-namespace="research"') :]
    assert "opted in" in research[:400] and '<td class="num">1</td>' in research[:400]
    batch = page[page.index('data-namespace="batch"') :]
    assert "not opted in" in batch[:300]
    assert "Log in to change" in page


def test_the_toggle_asks_for_confirmation_first(client, cluster, operator):
    confirm = client.get("/namespaces/batch/opt-in/?enabled=true")
    unconfirmed = client.post("/namespaces/batch/opt-in/", {"enabled": "true"})

    assert "Opt in namespace batch?" in confirm.content.decode()
    assert unconfirmed.status_code == 200
    assert "This field is required" in unconfirmed.content.decode()
    assert QUEUE_ALLOCATION_GATE not in labels(cluster, "batch")
    assert not NamespaceOptInChange.objects.exists()


def test_a_permitted_user_opts_a_namespace_in_and_it_is_recorded(client, cluster, operator):
    response = client.post("/namespaces/batch/opt-in/", {"enabled": "true", "confirm": "on"})

    assert response.status_code == 302
    assert labels(cluster, "batch")[QUEUE_ALLOCATION_GATE] == "true"
    change = NamespaceOptInChange.objects.get()
    assert (change.namespace, change.enabled, change.changed_by) == ("batch", True, operator)
    page = client.get("/namespaces/").content.decode()
    assert "Namespace batch opted in" in page
    assert "<td>olivia</td><td>batch</td><td>opted in</td>" in page


def test_a_permitted_user_opts_a_namespace_out(client, cluster, operator):
    client.post("/namespaces/research/opt-in/", {"enabled": "false", "confirm": "on"})

    assert QUEUE_ALLOCATION_GATE not in labels(cluster, "research")
    assert NamespaceOptInChange.objects.get().enabled is False


def test_the_toggle_is_refused_without_the_permission(client, cluster, viewer):
    response = client.post("/namespaces/batch/opt-in/", {"enabled": "true", "confirm": "on"})

    assert response.status_code == 403
    assert "dashboard.toggle_namespace_opt_in" in response.content.decode()
    assert QUEUE_ALLOCATION_GATE not in labels(cluster, "batch")
    assert "no permission to change" in client.get("/namespaces/").content.decode()


def test_an_anonymous_user_is_sent_to_log_in(client, cluster):
    response = client.post("/namespaces/batch/opt-in/", {"enabled": "true", "confirm": "on"})

    assert response.status_code == 302 and response["Location"].startswith("/login/?next=")
    assert QUEUE_ALLOCATION_GATE not in labels(cluster, "batch")


def test_a_toggle_with_the_cluster_gone_says_so_and_records_nothing(client, operator, settings,
                                                                     tmp_path):  # fmt: skip
    settings.SLUICE_KUBECONFIG = str(tmp_path / "absent")
    kube.api_client.cache_clear()

    response = client.post("/namespaces/batch/opt-in/", {"enabled": "true", "confirm": "on"})

    assert response.status_code == 503
    assert "no cluster configured" in response.content.decode()
    assert not NamespaceOptInChange.objects.exists()


def test_queue_tree_follows_spec_parent(client, cluster):
    for name, spec in (("root", {}), ("org", {"parent": "root"}), ("team-a", {"parent": "org"}),
                       ("team-b", {"parent": "org"}), ("solo", {})):  # fmt: skip
        cluster.custom.create_cluster_custom_object(
            "scheduling.volcano.sh", "v1beta1", "queues", body(queue(name, **spec))
        )
    store_cycle_report(cycle_report(time.time(), queues=[queue_report("team-a", allocated=6)]))

    page = client.get("/queues/").content.decode()

    order = [page.index(f'data-queue="{n}"') for n in ("root", "org", "team-a", "team-b")]
    assert order == sorted(order)
    assert 'data-queue="team-a" data-depth="2"' in page
    assert 'data-queue="solo" data-depth="1"' in page
    team_a = page[page.index('data-queue="team-a"') :]
    assert "over deserved" in team_a[: team_a.index("</tr>")]


def test_autoscaler_page_marks_false_scale_ups(client, cluster):
    record = {
        "time": 1_700_000_000.0, "autoscaler": "cluster-autoscaler", "node_group": "highmem",
        "node_name": "highmem-1", "false_scale_up": True, "landed": False,
        "wasted_seconds": 420.0, "node_ready_at": 1_700_000_060.0, "node_removed_at": None,
        "pods": [{"namespace": "research", "name": "notebook-5", "uid": "u5",
                  "queue": "research", "could_run": False, "landed": False}],
    }  # fmt: skip
    scaled = node("highmem-1", annotations={SCALE_UP_ANNOTATION: json.dumps(record)}, ready=True,
                  labels={PROVISIONER_LABEL: "cluster-autoscaler"})  # fmt: skip
    cluster.core.create_node(body(scaled))
    cluster.core.create_node(body(node("cpu-1", ready=True)))

    page = client.get("/autoscaler/").content.decode()
    recent = client.get("/autoscaler/", headers={"HX-Request": "true", "HX-Target": "recent"})

    assert "1 scale-up on nodes that still exist; <strong>1</strong> false" in page
    assert 'class="false-scale-up"' in page and "research/notebook-5" in page
    assert "420 s" in page
    assert "false scale-up" in recent.content.decode()
    assert "<html" not in recent.content.decode()


def test_autoscaler_page_without_records_has_an_empty_state(client, cluster):
    page = client.get("/autoscaler/").content.decode()

    assert "No node carries a scale-up record" in page


def test_autoscaler_page_asks_the_cluster_for_autoscaler_events_and_nodes_only(
    client, cluster, monkeypatch
):
    """A scheduler writes several events per pod, and a cluster may hold thousands of nodes:
    the page lists events by reason (a field selector) and the nodes an autoscaler added (a
    label selector), never every event or node of the cluster."""
    for i, reason in enumerate(["TriggeredScaleUp", "Scheduled", "Scheduled", "FailedScheduling"]):
        cluster.core.create_namespaced_event("research", {
            "metadata": {"name": f"e{i}", "namespace": "research"},
            "involvedObject": {"kind": "Pod", "namespace": "research", "name": f"p{i}"},
            "reason": reason, "message": f"{reason} for p{i}", "type": "Normal",
            "lastTimestamp": "2026-01-01T00:00:00Z",
        })  # fmt: skip
    lists = []
    list_page = cluster.cluster.list_page

    def recording(plural, namespace, labels, fields, **kw):
        lists.append((plural, fields, labels))
        return list_page(plural, namespace, labels, fields, **kw)

    monkeypatch.setattr(cluster.cluster, "list_page", recording)

    page = client.get("/autoscaler/").content.decode()

    assert "TriggeredScaleUp for p0" in page and "Scheduled for p1" not in page
    events = [fields for plural, fields, _ in lists if plural == "events"]
    assert events and all((fields or "").startswith("reason=") for fields in events)
    nodes = [labels for plural, _, labels in lists if plural == "nodes"]
    assert nodes == [PROVISIONER_LABEL]


def test_autoscaler_page_lists_the_autoscalers_events_newest_first_and_nothing_else(
    client, cluster
):
    """The three reasons' lists are read together: each event once, by its newest time
    (lastTimestamp, else eventTime, else firstTimestamp, else its creation), and no other
    reason's event."""

    def event(name: str, reason: str, **times: str) -> None:
        cluster.core.create_namespaced_event("default", {
            "metadata": {"name": name, "namespace": "default"}, "reason": reason,
            "involvedObject": {"kind": "Pod", "namespace": "research", "name": f"pod-{name}"},
            "message": f"said by {name}", "type": "Normal", **times,
        })  # fmt: skip

    event("up", "TriggeredScaleUp", lastTimestamp="2026-11-20T10:00:03Z",
          firstTimestamp="2026-11-20T09:00:00Z")  # fmt: skip
    event("no", "NotTriggerScaleUp", eventTime="2026-11-20T10:00:05.123456Z")
    event("down", "ScaleDown", firstTimestamp="2026-11-20T10:00:04Z")
    event("bound", "Scheduled", lastTimestamp="2026-11-20T10:00:09Z")

    page = client.get("/autoscaler/").content.decode()

    rows = [line for line in page.split("<tr") if 'class="event-' in line]
    assert [r.split('class="event-')[1].split('"')[0] for r in rows] == [
        "nottriggerscaleup", "scaledown", "triggeredscaleup"
    ]  # fmt: skip
    assert "2026-11-20 10:00:05" in rows[0] and "Pod research/pod-no" in rows[0]
    assert "2026-11-20 10:00:03" in rows[2] and "said by up" in rows[2]
    assert "said by bound" not in page
