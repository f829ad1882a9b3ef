"""The Pods page and a pod's page read one current state per pod of the latest report's
cluster: running and finished pods listed as such, deleted ones gone (unless asked for), one
"Now" line per pod page, and the other pods that had the name linked, each to its own
timeline."""

from __future__ import annotations

import html
import re
import time

import pytest

from dashboard.tasks.history import store_cycle_report
from scheduler.api.report import PodState, TransitionKind
from tests.builders import cycle_report, pod_record, transition, waiting_pod

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def no_cluster(settings, tmp_path):
    from dashboard import kube

    settings.SLUICE_KUBECONFIG = str(tmp_path / "absent-kubeconfig")
    kube.api_client.cache_clear()
    yield
    kube.api_client.cache_clear()


def store(at: float, cluster: str = "c1", **kw) -> None:
    kw.setdefault("pods", [])
    store_cycle_report(cycle_report(at, cluster=cluster, **kw))


def test_the_pods_page_lists_every_pod_with_the_state_the_cluster_shows(client):
    now = time.time()
    store(now - 2, pods=[pod_record("old", PodState.SUCCEEDED, node="cpu-1")])
    store(now, waiting=[waiting_pod("nb-4", "research", gated=True, reason="queue is full")],
          pods=[pod_record("etl-0", node="cpu-1"), pod_record("etl-1", PodState.TERMINATING,
                                                              node="cpu-2")])  # fmt: skip

    page = client.get("/pods/").content.decode()
    running = client.get("/pods/?state=running").content.decode()
    deleted = client.get("/pods/?state=deleted").content.decode()

    assert "Page 1 of 1 (3 pods)" in page
    for state in ("running", "terminating", "succeeded", "failed", "deleted"):  # filterable
        assert f'<option value="{state}">' in page
    assert page.index("research/nb-4") < page.index("research/etl-0") < page.index("etl-1")
    assert "research/old" not in page  # gone from the cluster
    assert 'data-state="Running"' in running and "research/etl-0" in running
    assert "research/nb-4" not in running
    assert "research/old" in deleted and "research/etl-0" not in deleted
    assert "waiting for queue capacity (gated): queue is full" in page


def test_a_pod_page_says_now_once_and_links_the_other_pods_of_that_name(client):
    now = time.time()
    store(now - 60, cluster="before-restart", pods=[pod_record("web-0", uid="a", node="cpu-9")])
    store(now - 2, pods=[pod_record("web-0", uid="b", node="cpu-1", created=int(now) - 30)])
    store(now - 1)
    allocated = transition("web-0", TransitionKind.ALLOCATED, "cpu-2", "allocated")
    allocated.uid = "c"
    store(now, transitions=[allocated],
          pods=[pod_record("web-0", PodState.BINDING, uid="c", node="cpu-2")])  # fmt: skip

    page = client.get("/pods/research/web-0/").content.decode()
    earlier = client.get("/pods/research/web-0/?uid=b").content.decode()

    assert page.count("Now:") == 1
    assert "Binding" in page and "UID <code>c</code>" in page
    assert "allocated</strong> (Waiting → Binding) on cpu-2" in page
    assert '?uid=b">UID b</a>: Deleted' in page
    assert '?uid=a">UID a</a>: Running' in page and "(another cluster)" in page
    assert "Now:" not in earlier and "this pod is gone from the cluster" in earlier
    assert "created</strong> (Waiting)" in earlier
    assert "observed</strong> (Waiting → Running) on cpu-1: running on cpu-1" in earlier
    assert "deleted</strong> (Running → Deleted) on cpu-1: gone from the cluster" in earlier


def test_a_gated_pods_page_shows_its_creation_with_the_gate(client):
    created = int(time.time()) - 30
    store(time.time(), waiting=[waiting_pod("nb-4", "research", gated=True, reason="full",
                                            created=created)])  # fmt: skip

    page = client.get("/pods/research/nb-4/").content.decode()

    assert "No transition recorded yet" not in page
    assert "created</strong> (Gated): created with a scheduling gate" in page


def test_a_pod_page_left_open_refreshes_its_state_with_its_timeline(client):
    """htmx refreshes the pod page's live section: the "Now" line comes with the timeline, so a
    page left open never says Running above a timeline that ends in Succeeded."""
    now = time.time()
    store(now - 1, pods=[pod_record("job-0", uid="j", node="cpu-1", created=int(now) - 30)])
    store(now, pods=[pod_record("job-0", PodState.SUCCEEDED, uid="j", node="cpu-1")])

    live = client.get(
        "/pods/research/job-0/", headers={"HX-Request": "true", "HX-Target": "live"}
    ).content.decode()

    assert live.strip().startswith('<div id="live"') and "<h1>" not in live
    assert live.count("Now:") == 1 and 'class="state state-succeeded">Succeeded' in live
    assert "(Running → Succeeded)" in live


def test_the_pods_list_left_open_refreshes_with_its_filters_and_page(client):
    """The list refreshes itself (htmx, every 5 s) with the filters and the page it shows."""
    now = time.time()
    store(now - 1, pods=[pod_record("job-0", uid="j", node="cpu-1")])
    store(now, pods=[pod_record("job-0", PodState.SUCCEEDED, uid="j", node="cpu-1")])

    page = client.get("/pods/?queue=research&state=succeeded").content.decode()
    live = client.get(
        "/pods/?queue=research&state=succeeded&page=1",
        headers={"HX-Request": "true", "HX-Target": "results"},
    ).content.decode()

    refresh = re.search(r'<div id="results" hx-get="([^"]+)"', page)
    assert (
        refresh
        and html.unescape(refresh.group(1)) == "/pods/?queue=research&state=succeeded&page=1"
    )
    assert 'hx-trigger="every 5s' in page
    assert live.strip().startswith('<div id="results"') and "<form" not in live
    assert 'data-state="Succeeded"' in live and "research/job-0" in live
