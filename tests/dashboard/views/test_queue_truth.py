"""The queue pages say what the Queue objects say, and label what the scheduler derived from
them (Part 11: ``prod`` had ``spec.capability`` 48 CPU and the page showed 24, later 40; a
``default`` queue kubectl does not have was listed; ``capability: {cpu: "-5"}`` silently became
unlimited; a pod naming a queue that does not exist was "waiting for queue capacity", its queue
link a 404).

Each test builds the cluster through the simulated API server, runs a real scheduling cycle
against it, stores the report as the worker does, and reads the pages with Django's client.
"""

from __future__ import annotations

import html
import re

import pytest
from kubernetes import client as k8s

from dashboard import kube
from dashboard.tasks.history import store_cycle_report
from scheduler.api.labels import QUEUE_ALLOCATION_GATE
from scheduler.config import SchedulerConfig
from scheduler.service import SchedulerService
from tests.builders import body, namespace, node, pod, queue
from tests.conftest import wait_until
from tests.scheduler.conftest import sim  # noqa: F401 - sim is a fixture

pytestmark = pytest.mark.django_db

GATE = "scheduling.volcano.sh/queue-allocation-gate"
NS = "research"
# Volcano's own default (flat capacity): the real capability follows the cluster's size.
FLAT = SchedulerConfig.from_dict(
    {
        "actions": "enqueue, allocate, backfill",
        "tiers": [
            {"plugins": [{"name": "priority"}, {"name": "gang"}]},
            {"plugins": [{"name": "predicates"}, {"name": "capacity"}]},
        ],
    }
)


@pytest.fixture
def cluster(settings, sim, tmp_path):  # noqa: F811
    settings.SLUICE_KUBECONFIG = str(sim.server.write_kubeconfig(tmp_path / "kubeconfig"))
    kube.api_client.cache_clear()
    sim.core.create_namespace(body(namespace(NS, labels={QUEUE_ALLOCATION_GATE: "true"})))
    for name in ("n1", "n2", "n3"):
        sim.core.create_node(body(node(name, cpu="8", memory="32Gi", ready=True)))
    yield sim
    kube.api_client.cache_clear()


def create_queue(running, name: str, **spec) -> None:
    running.custom.create_cluster_custom_object(
        "scheduling.volcano.sh", "v1beta1", "queues", body(queue(name, **spec))
    )


def cycle(running, config: SchedulerConfig | None = None, pods: int = 0) -> None:
    """One real cycle against the cluster, its report stored as the worker stores it."""
    service = SchedulerService(running.api_client, config=config, act=True, period=1.0)
    service.start(sync_timeout=5)
    try:
        wait_until(lambda: known_pods(service) >= pods)
        report = service.run_once()
    finally:
        service.stop()
    assert not report.failure, report.failure
    store_cycle_report(report.to_json())


def known_pods(service: SchedulerService) -> int:
    """The pods the scheduler's cache holds, in jobs it schedules or skips."""
    snapshot = service.cache.snapshot()
    jobs = [*snapshot.jobs.values(), *snapshot.skipped_jobs.values()]
    return sum(len(job.tasks) for job in jobs)


def row_of(page: str, name: str) -> str:
    """The table row of queue ``name``, and the error row under it if any."""
    start = page.index(f'data-queue="{name}"')
    end = page.index("</tr>", start) + len("</tr>")
    errors = re.match(r'\s*<tr class="queue-error-row".*?</tr>', page[end:], re.S)
    return page[start : end + (errors.end() if errors else 0)]


def title_of(fragment: str, css: str) -> str:
    match = re.search(rf'class="{css}"><span class="derived" title="([^"]+)">', fragment)
    assert match, fragment
    return html.unescape(match.group(1))


def test_spec_figures_as_written_and_derived_ones_labelled_with_how(client, cluster):
    create_queue(cluster, "prod", capability={"cpu": "48", "memory": "256Gi"},
                 deserved={"cpu": "16"}, guarantee={"cpu": "6"})  # fmt: skip
    cluster.core.create_namespaced_pod(NS, body(pod("web-1", namespace=NS, queue="prod")))
    cycle(cluster, FLAT, pods=1)

    tree = client.get("/queues/").content.decode()
    prod = row_of(tree, "prod")
    # As kubectl get queue prod -o yaml shows it.
    assert '<td class="spec-capability">cpu: 48, memory: 256Gi</td>' in prod
    assert "<td>cpu: 16</td><td>cpu: 6</td>" in prod
    # Derived: the cluster's 24 CPU (three 8-CPU nodes), not the spec's 48 — and said so.
    assert ">24 CPU, 96Gi<" in prod
    how = title_of(prod, "derived-capability")
    assert how.startswith("Derived by the capacity plugin without hierarchy")
    assert "cluster's allocatable total" in how and "capped by spec.capability" in how
    assert "Derived by the scheduler (hover for how)" in tree

    page = client.get("/queues/prod/").content.decode()
    assert "<td>cpu: 48, memory: 256Gi</td>" in page
    assert 'real capability 24 CPU, 96Gi</span> <small class="muted">(derived)</small>' in page
    assert "real capability 24 CPU, deserved 16 CPU (derived)" in page  # the bar's caption
    overview = client.get("/").content.decode()
    assert "spec, as written: capability cpu: 48, memory: 256Gi · deserved cpu: 16" in overview

    # A node more: the derived figure follows the cluster, the written one does not move.
    cluster.core.create_node(body(node("n4", cpu="8", memory="32Gi", ready=True)))
    cycle(cluster, FLAT, pods=1)
    prod = row_of(client.get("/queues/").content.decode(), "prod")
    assert ">32 CPU, 128Gi<" in prod and "cpu: 48, memory: 256Gi" in prod


def test_with_the_hierarchy_the_derivation_says_so(client, cluster):
    create_queue(cluster, "prod", capability={"cpu": "48"})
    cluster.core.create_namespaced_pod(NS, body(pod("web-1", namespace=NS, queue="prod")))
    cycle(cluster, pods=1)  # Sluice's default configuration: the capacity plugin's hierarchy

    prod = row_of(client.get("/queues/").content.decode(), "prod")

    assert ">48 CPU, unlimited memory<" in prod
    assert title_of(prod, "derived-capability").startswith(
        "Derived by the capacity plugin with enableHierarchy"
    )


def test_no_default_queue_the_cluster_does_not_have(client, cluster):
    create_queue(cluster, "prod")
    cluster.core.create_namespaced_pod(NS, body(pod("web-1", namespace=NS, queue="prod")))
    cycle(cluster, pods=1)

    for url in ("/", "/queues/"):
        page = client.get(url).content.decode()
        assert 'data-queue="prod"' in page
        assert 'data-queue="default"' not in page, url
    names = {q["metadata"]["name"] for q in cluster.custom.list_cluster_custom_object(
        "scheduling.volcano.sh", "v1beta1", "queues")["items"]}  # fmt: skip
    assert names == {"prod"}


def test_the_default_queue_pods_use_is_shown_as_the_schedulers_own(client, cluster):
    cluster.core.create_namespaced_pod(NS, body(pod("plain", namespace=NS)))  # names no queue
    cycle(cluster, pods=1)

    overview = client.get("/").content.decode()
    tree = client.get("/queues/").content.decode()
    page = client.get("/queues/default/").content.decode()

    assert "implicit (not a Queue object)" in row_of(overview, "default")
    assert "implicit (not a Queue object)" in row_of(tree, "default")
    assert "The cluster has no Queue object of that name" in page


def test_a_default_queue_the_cluster_has_is_a_queue_like_any_other(client, cluster):
    create_queue(cluster, "default", capability={"cpu": "4"})
    cycle(cluster)

    tree = client.get("/queues/").content.decode()

    assert "implicit" not in row_of(tree, "default")
    assert '<td class="spec-capability">cpu: 4</td>' in row_of(tree, "default")


def test_a_negative_capability_is_an_error_on_the_queue_with_the_event(client, cluster):
    create_queue(cluster, "odd", capability={"cpu": "-5", "memory": "8Gi"})
    cluster.core.create_namespaced_pod(NS, body(pod("p", namespace=NS, queue="odd")))
    cycle(cluster, pods=1)

    tree = client.get("/queues/").content.decode()
    odd = row_of(tree, "odd")
    assert '<td class="spec-capability">cpu: unlimited (spec says -5), memory: 8Gi</td>' in odd
    assert 'data-reason="CapabilityUnlimited"' in odd
    assert "<code>spec.capability.cpu</code>: spec.capability.cpu is -5" in odd
    page = client.get("/queues/odd/").content.decode()
    assert 'data-reason="CapabilityUnlimited"' in page and "unlimited on cpu" in page
    assert "its admission webhook refuses" in page  # what Volcano does instead
    overview = client.get("/").content.decode()
    assert "(Warning event <code>CapabilityUnlimited</code>)" in row_of(overview, "odd")
    # The event the page names is on the Queue, as kubectl get events shows it.
    events = k8s.CoreV1Api(cluster.api_client).list_namespaced_event("default").items
    assert [(e.involved_object.kind, e.involved_object.name, e.reason) for e in events] == [
        ("Queue", "odd", "CapabilityUnlimited")
    ]


def test_a_pod_naming_a_queue_that_does_not_exist_is_said_so_with_a_page_for_it(client, cluster):
    create_queue(cluster, "prod")
    cluster.core.create_namespaced_pod(
        NS, body(pod("lost", namespace=NS, queue="ghost", gates=[GATE], opt_in=True))
    )
    cycle(cluster, pods=1)

    response = client.get("/queues/ghost/")
    page = response.content.decode()
    assert response.status_code == 200  # a page saying so, not a 404
    assert "<h2>Queue ghost does not exist</h2>" in page
    assert (
        "pod research/lost (<code>metadata.annotations[scheduling.volcano.sh/queue-name]</code>)"
        in page
    )
    assert "<code>QueueNotFound</code>" in page
    assert "queue capacity" not in page.replace("not queue capacity", "")
    reason = re.search(r'lost</a></td><td class="reason">([^<]+)</td>', page)
    assert reason, page
    assert html.unescape(reason.group(1)) == (
        "its queue cannot be used: queue ghost does not exist; the pod stays gated until that "
        "is fixed"
    )
    # Wherever the pod's queue is linked, the link says the queue does not exist.
    pods = client.get("/pods/").content.decode()
    link = pods[pods.index('href="/queues/ghost/"') :]
    assert link[: link.index("</td>")].count("does not exist") == 1
    # A name nothing refers to is still a 404.
    assert client.get("/queues/nowhere/").status_code == 404


def test_under_a_parent_a_negative_capability_reads_as_the_parents(client, cluster):
    create_queue(cluster, "org", capability={"cpu": "4"})
    create_queue(cluster, "team", parent="org", capability={"cpu": "-5"})
    cluster.core.create_namespaced_pod(NS, body(pod("p", namespace=NS, queue="team")))
    cycle(cluster, pods=1)  # the capacity plugin's hierarchy

    team = row_of(client.get("/queues/").content.decode(), "team")

    assert '<td class="spec-capability">cpu: parent org&#x27;s (spec says -5)</td>' in team
    assert ">4 CPU, unlimited memory<" in team  # derived: org's capability
    assert "its parent org&#x27;s holds it" in team
