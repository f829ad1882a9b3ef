"""Part 11's adversary: the same pods counted on the Overview, the Queues page, the Pods page
and by the cluster's API.

Issue 16, Done when: "checks on every page that what it shows equals what the cluster's API
says at that moment (states, counts, capabilities)". README, A tour of the pages: the Overview
shows each queue's "running, gated, pipelined and unschedulable counts"; the Pods page lists
"one row per pod in the state the cluster shows".

A real scheduler schedules a simulated cluster through its API (tests/e2e's harness), each
report stored as the Celery task stores it, the pages read with Django's test client.
"""

from __future__ import annotations

import re
from collections import Counter

import pytest

from dashboard.tasks.history import store_cycle_report
from tests.builders import GATE, body, pod
from tests.e2e.harness import Harness

pytestmark = pytest.mark.django_db

NS = "team"
SCENARIO = {
    "kubelet": {"startupDelay": 1, "deleteCompletedPods": False},
    "namespaces": [{"name": NS}],
    "queues": [
        {"name": "q", "spec": {"capability": {"cpu": "6", "memory": "64Gi"}}},
        {"name": "other", "spec": {"capability": {"cpu": "4", "memory": "64Gi"}}},
    ],
    "nodes": [{"namePrefix": "cpu", "count": 2,
               "capacity": {"cpu": "8", "memory": "32Gi", "pods": "110"}}],
    "workload": [
        {"at": 0, "name": "svc", "namespace": NS, "queue": "q", "replicas": 3,
         "requests": {"cpu": "1", "memory": "1Gi"}},
        {"at": 0, "name": "web", "namespace": NS, "queue": "other", "replicas": 2,
         "requests": {"cpu": "1", "memory": "1Gi"}},
    ],
}  # fmt: skip
ROW = re.compile(r'<tr data-state="(\w+)"><td><a href="/pods/([^/]+)/([^/]+)/">')
OVERVIEW_ROW = re.compile(
    r'<tr data-queue="([^"]+)">.*?<td class="num">(\d+)</td>\s*<td class="num">(\d+)</td>',
    re.S,
)


def gated_pod(name: str, queue: str) -> dict:
    """A pod as Sluice's webhook admits it: opted in, with the queue-allocation gate."""
    return body(pod(name, "1", "1Gi", namespace=NS, queue=queue, gates=[GATE], opt_in=True,
                    uid=None, created=None))  # fmt: skip


@pytest.fixture
def h():
    running = Harness(SCENARIO)
    yield running
    running.close()


def step(h: Harness, seconds: int = 1) -> None:
    for _ in range(seconds):
        stored = len(h.reports)
        h.step()
        for report in h.reports[stored:]:
            store_cycle_report(report.to_json())


def api_states(h: Harness) -> Counter:
    """Running and Gated pods of ours as the API shows them."""
    states: Counter = Counter()
    for p in h.core.list_pod_for_all_namespaces().items:
        if p.spec.scheduler_name != "volcano" or p.metadata.deletion_timestamp:
            continue
        if p.spec.node_name and p.status.phase == "Running":
            states["Running"] += 1
        elif p.spec.scheduling_gates:
            states["Gated"] += 1
    return states


def pods_page(client) -> Counter:
    rows, page = [], 1
    while True:
        html = client.get(f"/pods/?page={page}").content.decode()
        rows += [state for state, _, _ in ROW.findall(html)]
        if 'rel="next"' not in html:
            return Counter(rows)
        page += 1


def overview(client) -> Counter:
    """Running and Gated summed over the Overview's queue rows."""
    html = client.get("/").content.decode()
    totals: Counter = Counter()
    for _, running, gated in OVERVIEW_ROW.findall(html):
        totals["Running"] += int(running)
        totals["Gated"] += int(gated)
    return totals


def test_counts_agree_after_a_queue_is_deleted_under_its_pods(h, client):
    """What: queue ``q`` runs 3 pods and holds 2 more gated (its capability: 6 CPU, and a
    third pod of ``other`` …); then the Queue object ``q`` is deleted while its pods run and
    wait (``kubectl delete queue q``: the API does not stop it — Volcano's webhook would).

    Promise: the Overview's counts, the Pods page's rows and the API say the same (issue 16,
    Done when); a pod naming a queue that does not exist is counted, and said to wait for a
    queue that does not exist (README, Queue).

    What happens: before the deletion the three agree (8 running, 2 gated). After it the
    Overview has no row for ``q`` at all: its 6 running and 2 gated pods are counted nowhere
    on it (8 running in the API, 2 on the Overview) while the Pods page still lists them."""
    step(h, 3)
    for i in range(5):
        h.core.create_namespaced_pod(NS, gated_pod(f"extra-{i}", "q"))
    step(h, 3)
    seen = (api_states(h), pods_page(client), overview(client))
    assert seen[0]["Running"] and seen[0]["Gated"], seen
    assert seen[0]["Running"] == seen[1]["Running"] == seen[2]["Running"], seen
    assert seen[0]["Gated"] == seen[1]["Gated"] == seen[2]["Gated"], seen

    h.custom.delete_cluster_custom_object("scheduling.volcano.sh", "v1beta1", "queues", "q")
    step(h, 3)
    api, listed, shown = api_states(h), pods_page(client), overview(client)
    assert (api["Running"], api["Gated"]) == (listed["Running"], listed["Gated"])
    assert (api["Running"], api["Gated"]) == (shown["Running"], shown["Gated"]), (api, shown)


@pytest.fixture
def web_reads(h, settings, tmp_path):
    """The web process pointed at the harness's cluster and clock, as ``make run``'s
    kubeconfig points it."""
    import time

    from dashboard import kube

    clock = {"speed": 1.0, "wallTime": time.time(), "simulatedTime": h.clock.now()}
    settings.SLUICE_KUBECONFIG = str(h.server.write_kubeconfig(tmp_path / "kc", clock=clock))
    kube.api_client.cache_clear()
    yield
    kube.api_client.cache_clear()


def test_a_deleted_queue_its_pods_still_name_is_shown_on_the_overview_and_queues(
    h, client, web_reads
):
    """What: as above, queue ``q`` is deleted while 6 of its pods run and 2 wait gated.

    Promise (README, Queues and references that are wrong): "the Overview, the Queues page
    and the queue's page show each on its queue with the event" — here ``QueueNotFound``,
    said on each of the gated pods — and "wherever such a queue is linked, the link is marked
    'does not exist'".

    What happens: the queue's page says it (200, "Queue q does not exist", the events), but
    the Overview and the Queues page have no row for ``q`` and no word of the event: an
    operator looking at either sees a cluster with one queue, ``other``, and 2 running pods."""
    step(h, 3)
    for i in range(5):
        h.core.create_namespaced_pod(NS, gated_pod(f"extra-{i}", "q"))
    step(h, 3)
    h.custom.delete_cluster_custom_object("scheduling.volcano.sh", "v1beta1", "queues", "q")
    step(h, 3)
    assert any(p.reason == "QueueNotFound" and p.queue == "q" for p in h.reports[-1].problems)
    queue_page = client.get("/queues/q/").content.decode()
    assert "QueueNotFound" in queue_page  # the queue's own page says it
    shown = {
        url: ('data-queue="q"' in html, "QueueNotFound" in html)
        for url in ("/", "/queues/")
        for html in [client.get(url).content.decode()]
    }
    assert shown == {"/": (True, True), "/queues/": (True, True)}
