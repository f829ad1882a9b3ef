"""Every page through Django's test client: the empty state before any cycle, the full state
from stored reports, and the error states (stale scheduler, unknown queue or pod)."""

from __future__ import annotations

import time

import pytest

from dashboard.tasks.history import store_cycle_report
from scheduler.api.report import CheckState, PodState, RiskClass, TransitionKind
from tests.builders import cycle_report, queue_report, risk, transition, waiting_pod

pytestmark = pytest.mark.django_db

PAGES = ["/", "/queues/", "/pods/", "/history/", "/risks/", "/scheduler/"]


@pytest.fixture(autouse=True)
def no_cluster(settings, tmp_path):
    """No kubeconfig: pages that read the cluster show their error state, others the DB."""
    from dashboard import kube

    settings.SLUICE_KUBECONFIG = str(tmp_path / "absent-kubeconfig")
    kube.api_client.cache_clear()
    yield
    kube.api_client.cache_clear()


def demo_report(at: float | None = None) -> dict:
    at = time.time() if at is None else at
    return cycle_report(
        at,
        queues=[
            queue_report("root", allocated=10, capability=24, deserved=0),
            queue_report("research", allocated=4, capability=4, deserved=0, running=4, gated=2),
            queue_report("batch", allocated=10, deserved=8, capability=24, running=5),
            queue_report("prod", allocated=0, deserved=16, capability=48, unschedulable=2, reserved=8),
        ],
        waiting=[
            waiting_pod("notebook-4", "research", gated=True, reason="queue research is full"),
            waiting_pod("notebook-5", "research", gated=True, reason="queue research is full"),
            waiting_pod("highmem-0", "prod", gated=False, namespace="prod",
                    reason="0 of 3 nodes have 4 CPU free"),
            waiting_pod("too-big", "prod", gated=False, namespace="prod",
                    reason="0 of 3 nodes have 24 CPU free"),
            waiting_pod("web-0", "prod", gated=False, namespace="prod", state=PodState.PIPELINED,
                    reason="pipelined on cpu-3 until 1 pod finishes there", node="cpu-3"),
        ],
        transitions=[
            transition("web-0", TransitionKind.PIPELINED, "cpu-3",
                       "waiting for resources to be released", ns="prod"),
            transition("etl-0", TransitionKind.ALLOCATED, "cpu-1", "allocated", ns="batch"),
            transition("etl-7", TransitionKind.EVICTED, "cpu-3", "reclaimed by prod", ns="batch",
                       old=PodState.RUNNING),
        ],
        risks=[
            risk("too-big", RiskClass.FITS_NO_NODE_SHAPE, "no node shape fits 24 CPU",
                 check=CheckState.RETRY, pods=["uid-too-big"]),
        ],
    )  # fmt: skip


@pytest.fixture
def demo():
    # web-0 waited in prod before it was pipelined: the first report teaches its queue.
    store_cycle_report(
        cycle_report(time.time() - 5, queues=[queue_report("prod")],
                    waiting=[waiting_pod("web-0", "prod", gated=False, reason="x", namespace="prod")])
    )  # fmt: skip
    store_cycle_report(demo_report())


@pytest.mark.parametrize("url", PAGES)
def test_every_page_says_no_cycle_yet_before_the_first_cycle(client, url):
    response = client.get(url)

    assert response.status_code == 200
    assert "No scheduling cycle yet" in response.content.decode()


def test_overview_lists_every_queue_but_root_with_bars_and_counts(client, demo):
    page = client.get("/").content.decode()

    for name in ("research", "batch", "prod"):
        assert f'data-queue="{name}"' in page
    assert 'data-queue="root"' not in page
    assert "seg-allocated" in page and "seg-reserved" in page and "deserved-mark" in page
    assert "over deserved" in page  # batch: 10 CPU allocated, 8 deserved
    assert "took 12.0 ms, 3 decisions" in page


def test_overview_live_section_alone_for_htmx(client, demo):
    response = client.get("/", headers={"HX-Request": "true", "HX-Target": "live"})

    body = response.content.decode()
    assert body.lstrip().startswith('<div id="live"')
    assert "<html" not in body
    assert "visibilityState === 'visible'" in body


def test_overview_warns_when_the_scheduler_stopped(client):
    store_cycle_report(demo_report(time.time() - 3600))

    page = client.get("/").content.decode()

    assert "The scheduler has stopped reporting." in page
    assert "the scheduler has reported no cycle since" in page  # the figures' own note


def test_overview_shows_cycle_errors(client):
    store_cycle_report({**demo_report(), "errors": ["bind prod/x to cpu-1: conflict"]})

    assert "bind prod/x to cpu-1: conflict" in client.get("/").content.decode()


def test_queue_page_groups_pods_with_reasons_in_plain_words(client, demo):
    research = client.get("/queues/research/").content.decode()
    prod = client.get("/queues/prod/").content.decode()

    assert "waiting for queue capacity (gated): queue research is full" in research
    assert "no node fits: 0 of 3 nodes have 4 CPU free (autoscaler notified)" in prod
    pipelined = prod[prod.index('data-state="Pipelined"') :]
    assert "pipelined on cpu-3 until 1 pod finishes there" in pipelined
    assert "held by the admission check: no node shape fits 24 CPU" in prod


def test_a_long_queue_lists_its_first_pods_of_each_state_and_links_to_all(client):
    many = [waiting_pod(f"job-{i:03d}", "research", gated=True, reason="queue research is full")
            for i in range(60)]  # fmt: skip
    store_cycle_report(cycle_report(time.time(), queues=[queue_report("research")], waiting=many))

    page = client.get("/queues/research/").content.decode()

    gated = page[page.index('data-state="Gated"') : page.index('data-state="Unschedulable"')]
    assert 'Gated <span class="count">(60)</span>' in gated
    assert gated.count("waiting for queue capacity (gated)") == 50
    assert "research/job-049" in gated and "research/job-050" not in gated
    assert '/pods/?queue=research&state=gated">All 60 gated pods</a>' in gated


def test_queue_page_has_charts_and_a_table_fallback(client, demo):
    page = client.get("/queues/research/?range=week").content.decode()

    assert "plotly.min.js" in page
    assert 'id="queue-cpu"' in page
    assert "The same figures in numbers (1 samples, last week)" in page
    assert 'aria-current="true">Last week' in page


def test_queue_chart_range_alone_for_htmx(client, demo):
    response = client.get("/queues/research/?range=day", headers={"HX-Request": "true",
                                                                  "HX-Target": "charts"})  # fmt: skip

    body = response.content.decode()
    assert body.lstrip().startswith('<div id="charts"')
    assert 'aria-current="true">Last day' in body


def test_an_unknown_queue_is_404_with_an_explanation(client, demo):
    response = client.get("/queues/nope/")

    assert response.status_code == 404
    assert "Queue nope is not in the latest cycle" in response.content.decode()


def test_pods_filter_by_state_namespace_and_name(client, demo):
    gated = client.get("/pods/?state=gated").content.decode()
    prod = client.get("/pods/?namespace=prod").content.decode()
    named = client.get("/pods/?name=HIGH").content.decode()

    assert "research/notebook-4" in gated and "prod/highmem-0" not in gated
    assert "waiting for queue capacity (gated): queue research is full" in gated
    assert "prod/highmem-0" in prod and "research/notebook-4" not in prod
    assert "prod/web-0" in prod  # pipelined
    assert "prod/highmem-0" in named and "prod/too-big" not in named


def test_pods_are_paginated(client):
    pods = [waiting_pod(f"nb-{i:03}", "research", gated=True, reason="full") for i in range(120)]
    store_cycle_report(cycle_report(time.time(), waiting=pods))

    first = client.get("/pods/").content.decode()
    third = client.get("/pods/?page=3").content.decode()

    assert "Page 1 of 3 (120 pods)" in first and "research/nb-000" in first
    assert "research/nb-100" in third and "research/nb-000" not in third
    assert third.count("waiting for queue capacity (gated): full") == 20  # the page's reasons


def test_a_pod_timeline_lists_its_transitions(client, demo):
    store_cycle_report(
        cycle_report(time.time() + 1,
                    transitions=[transition("web-0", node="cpu-3", reason="allocated", ns="prod",
                                            old=PodState.PIPELINED)])
    )  # fmt: skip

    page = client.get("/pods/prod/web-0/").content.decode()

    assert page.index("pipelined</strong> (Waiting → Pipelined)") < page.index(
        "allocated</strong> (Pipelined → Binding)"
    )


def test_an_unknown_pod_is_404(client, demo):
    response = client.get("/pods/prod/ghost/")

    assert response.status_code == 404
    assert "Sluice knows no pod prod/ghost" in response.content.decode()


def test_history_lists_cycles_and_filters_by_pod_and_queue(client, demo):
    everything = client.get("/history/").content.decode()
    by_pod = client.get("/history/?pod=etl").content.decode()
    by_missing_queue = client.get("/history/?queue=nope").content.decode()

    assert everything.count("<tr><td>") >= 2
    assert "batch/etl-0" in by_pod and by_pod.count("<details><summary>") == 1
    assert "No cycle matches these filters." in by_missing_queue
    assert 'id="cycle-duration"' in everything


def test_history_shows_the_first_transitions_of_a_cycle_and_counts_the_rest(client):
    """A cycle that placed a backlog moved thousands of pods: the page lists the first 5 of a
    cycle (those of the pod it is filtered by first) and says how many more there were."""
    moved = [transition(f"job-{i:02d}", TransitionKind.ALLOCATED, "n1", "allocated", ns="batch")
             for i in range(30)]  # fmt: skip
    store_cycle_report(cycle_report(time.time() - 1, transitions=moved[:2]))
    store_cycle_report(cycle_report(time.time(), transitions=moved))

    everything = client.get("/history/").content.decode()
    by_pod = client.get("/history/?pod=job-29").content.decode()

    assert "batch/job-04<" in everything and "batch/job-05<" not in everything
    assert "and 25 more in this cycle" in everything
    assert everything.count("batch/job-00<") == 2  # both cycles list it
    assert "batch/job-29<" in by_pod and "batch/job-03<" in by_pod
    assert "batch/job-04<" not in by_pod and "and 25 more in this cycle" in by_pod


def test_history_rejects_a_backwards_time_range(client, demo):
    page = client.get("/history/?since=2026-01-02T00:00&until=2026-01-01T00:00").content.decode()

    assert "must be before" in page


def test_risks_page_groups_workloads_by_class_with_explanations(client, demo):
    page = client.get("/risks/").content.decode()

    section = page[page.index('data-risk="fits_no_node_shape"') :]
    assert "prod/too-big" in section[: section.index("</section>")]
    assert "no node shape fits 24 CPU" in page


def test_scheduler_page_shows_configuration_and_recent_cycles(client, demo, settings):
    settings.CELERY_BROKER_URL = "redis://127.0.0.1:1/0"  # nothing listens: counters missing
    page = client.get("/scheduler/").content.decode()

    assert "has not reported its configuration yet" in page  # the demo reports carry none
    assert "Gate counters unavailable" in page
    assert 'id="action-durations"' in page
    assert "Recent cycles" in page


def test_queue_tree_without_a_cluster_is_flat_and_says_why(client, demo):
    page = client.get("/queues/").content.decode()

    assert "no cluster configured" in page
    assert 'data-queue="research" data-depth="1"' in page
    assert "over deserved: reclaimable by others" in page


@pytest.mark.parametrize("url", ["/namespaces/", "/autoscaler/"])
def test_cluster_pages_say_the_cluster_is_unreachable(client, url):
    response = client.get(url)

    assert response.status_code == 200
    assert 'role="alert">no cluster configured' in response.content.decode()


def test_history_lines_link_each_pod_as_reverse_does_and_escape_what_the_cluster_wrote(client):
    """The History page's lines are built in Python (dashboard.presenters.transitions): the
    link must be the one ``reverse`` makes, even for a name that needs quoting, and a node or a
    message the cluster wrote is text, never markup."""
    from django.urls import reverse

    hostile = transition("x", TransitionKind.BIND_FAILED, '<b id="n">n1</b>',
                         "bind failed: <script>alert(1)</script>", ns="batch",
                         old=PodState.WAITING)  # fmt: skip
    odd = transition("a b%c@d", TransitionKind.ALLOCATED, "", "", ns="batch")
    store_cycle_report(cycle_report(time.time(), transitions=[hostile, odd]))

    page = client.get("/history/").content.decode()

    assert f'<a href="{reverse("pod", args=("batch", "a b%c@d"))}">batch/a b%c@d</a>' in page
    assert f'<a href="{reverse("pod", args=("batch", "x"))}">batch/x</a> bind failed' in page
    assert "<script>alert(1)</script>" not in page and '<b id="n">' not in page
    assert "on &lt;b id=&quot;n&quot;&gt;n1&lt;/b&gt;: bind failed: &lt;script&gt;" in page
    assert "batch/a b%c@d</a> allocated (" in page and ")</li>" in page  # no node, no message
