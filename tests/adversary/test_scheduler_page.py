"""The Scheduler page and the worker's first configuration (README: a text that does not
load "keeps the configuration in force, and the Scheduler page and manage.py schedule say
why until a good one arrives")."""

from __future__ import annotations

import pytest

from dashboard import kube
from dashboard.tasks import scheduling

pytestmark = pytest.mark.django_db

BROKEN = "actions: enqueue, allocate\ntiers:\n- plugins:\n  - name: gangg\n"


@pytest.fixture
def worker_against(sim, tmp_path, settings, monkeypatch):
    """The Celery scheduler worker's settings pointed at the simulated cluster (no broker:
    the admission check's snapshot requests go nowhere)."""
    from dashboard.tasks import admission

    monkeypatch.setattr(admission, "request_snapshot", lambda: None)
    settings.SLUICE_KUBECONFIG = str(sim.server.write_kubeconfig(tmp_path / "kubeconfig"))
    settings.SLUICE_SCHEDULER_CONFIGMAP = ""
    settings.SLUICE_MODE = "act"
    settings.SLUICE_LEADER_ELECT = False  # run_cycle runs the cycle itself
    settings.CELERY_BROKER_URL = "redis://127.0.0.1:1/0"
    kube.api_client.cache_clear()
    scheduling.reset_scheduler_service()
    yield settings
    scheduling.reset_scheduler_service()
    kube.api_client.cache_clear()


def test_the_scheduler_page_says_why_a_first_configuration_did_not_load(
    worker_against, tmp_path, client
):
    """An operator deploys Sluice with a configuration that does not load (a misspelt plugin,
    ``gangg``). Nothing can be "kept in force", so the worker runs no cycle
    (dashboard.tasks.scheduling.run_cycle catches the ConfigError and only logs "no cycle")
    — and the Scheduler page, the place README says tells why, shows "The scheduler has not
    reported its configuration yet" with no word of the error. It must show the error that
    names ``gangg``."""
    conf = tmp_path / "volcano-scheduler.conf"
    conf.write_text(BROKEN)
    worker_against.SLUICE_SCHEDULER_CONF = str(conf)
    assert scheduling.run_cycle() is None  # no cycle ran
    page = client.get("/scheduler/").content.decode()
    assert "gangg" in page


def test_the_worker_schedules_pods_of_every_scheduler_name_it_calls_its_own(worker_against, sim):
    """README: ``SLUICE_SCHEDULER_NAMES`` are "``spec.schedulerName`` values that are ours".
    The admission webhook gates opted-in pods of *every* listed name
    (dashboard/webhooks.py passes the whole list to review_response), but the scheduler worker
    builds its SchedulerService with ``SLUICE_SCHEDULER_NAMES[0]`` only (and ``manage.py
    schedule --scheduler-name`` takes one name), so a pod of the second name is never
    scheduled — and, when opted in, keeps the gate the webhook gave it forever. Here the
    webhook's answer for a ``batch`` pod is a gate; the worker must then schedule ``batch``
    pods."""
    from scheduler.admission.mutate import review_response
    from tests.adversary.helpers import cycle, make_node, make_pod, make_queue, node_of
    from tests.builders import pod

    worker_against.SLUICE_SCHEDULER_NAMES = ["volcano", "batch"]
    review = {"uid": "1", "kind": {"group": "", "version": "v1", "kind": "Pod"},
              "operation": "CREATE", "namespace": "default",
              "object": pod("b", namespace="default", scheduler="batch", opt_in=True)}  # fmt: skip
    answer = review_response(
        review,
        scheduler_names=frozenset(worker_against.SLUICE_SCHEDULER_NAMES),
        namespace_opted_in=lambda ns: False,
    )
    assert answer["response"].get("patch")  # the webhook takes batch pods as ours

    make_node(sim, "n1")
    make_queue(sim, "default")
    make_pod(sim, "plain", scheduler="batch")
    service = scheduling.scheduler_service()
    cycle(sim, service)
    assert node_of(sim, "plain") == "n1"


def test_the_queues_page_shows_queues_whose_parent_is_missing_or_cyclic(
    worker_against, sim, client
):
    """README, Queues page: "the hierarchy from each Queue's spec.parent"; README, Bad queue:
    a queue with a cycle or a missing parent keeps its jobs waiting "with the reason". The
    page is where a user looks for that queue. tree_rows (dashboard/presenters/queues.py)
    walks the tree down from root only, so a queue whose parent does not exist (``orphan``)
    and the two queues of a cycle (``a`` -> ``b`` -> ``a``) are not on the page at all — the
    bad queues vanish instead of being shown with what is wrong."""
    from dashboard.tasks.history import store_cycle_report
    from tests.adversary.helpers import VOLCANO, make_node, make_queue, start_service

    make_node(sim, "n1")
    make_queue(sim, "default")
    make_queue(sim, "orphan", parent="missing")
    for name, parent in (("a", "b"), ("b", "a")):
        queue = {"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "Queue",
                 "metadata": {"name": name}, "spec": {"weight": 1, "parent": parent}}  # fmt: skip
        sim.custom.create_cluster_custom_object(*VOLCANO, "queues", queue)
    service = start_service(sim)
    try:
        from tests.adversary.helpers import cycle

        store_cycle_report(cycle(sim, service).to_json())
    finally:
        service.stop()
    page = client.get("/queues/").content.decode()
    assert 'data-queue="default"' in page  # the page rendered the tree
    shown = {name for name in ("orphan", "a", "b") if f'data-queue="{name}"' in page}
    assert shown == {"orphan", "a", "b"}
