"""A walk through every page in the system Chromium, against a live server fed by the
simulated cluster's demo scenario (scheduler, webhook and autoscaler running for real)."""

from __future__ import annotations

import re

import pytest
from django.contrib.auth.models import Permission, User
from playwright.sync_api import Page, expect

from scheduler.api.labels import QUEUE_ALLOCATION_GATE
from scheduler.api.report import TransitionKind
from tests.browser.demo import demo_cluster, store_reports
from tests.builders import body, pod

pytestmark = pytest.mark.browser

PAGES = [
    ("Overview", "Overview"),
    ("Queues", "Queue tree and fairness"),
    ("Pods", "Pods"),
    ("Namespaces", "Namespaces"),
    ("History", "History"),
    ("Admission risk", "Admission risk"),
    ("Scheduler", "Scheduler"),
    ("Autoscaler", "Autoscaler"),
]


@pytest.fixture(scope="module")
def demo(live_server, tmp_path_factory, django_db_blocker):
    webhook = live_server.url + "/webhooks/mutate-pods"
    # The webhook's requests reach the live server before any test has opened the database:
    # unblock it, or a connection check answers 500 and the demo's pods are never created.
    kubeconfig = tmp_path_factory.mktemp("demo") / "kubeconfig"
    with django_db_blocker.unblock(), demo_cluster(webhook, kubeconfig) as running:
        yield running


@pytest.fixture
def stored(demo, transactional_db):
    store_reports(demo)
    return demo


def log_in(page: Page, base: str, username: str, password: str) -> None:
    page.goto(base + "/login/?next=/namespaces/")
    page.get_by_label("Username").fill(username)
    page.get_by_label("Password").fill(password)
    page.get_by_role("button", name="Log in").click()


def test_every_page_opens_from_the_navigation(live_server, page, stored):
    page.goto(live_server.url + "/")
    nav = page.get_by_role("navigation", name="Main")
    for link, heading in PAGES:
        nav.get_by_role("link", name=link, exact=True).click()
        expect(page.get_by_role("heading", level=1, name=heading)).to_be_visible()
        expect(nav.get_by_role("link", name=link, exact=True)).to_have_attribute(
            "aria-current", "page"
        )
        expect(page.get_by_text("No scheduling cycle yet")).to_have_count(0)


def test_overview_shows_the_demo_queues_and_the_latest_cycle(live_server, page, stored):
    page.goto(live_server.url + "/")

    for name in ("research", "batch", "prod"):
        expect(page.locator(f'tr[data-queue="{name}"]')).to_be_visible()
    expect(page.locator('tr[data-queue="root"]')).to_have_count(0)
    expect(page.locator(".cycle-line")).to_contain_text(
        re.compile(r"Latest cycle at .* took", re.S)
    )
    expect(page.locator('tr[data-queue="research"] .bar .seg').first).to_be_visible()
    # Loaded by htmx from the Autoscaler page: the placeholder link is replaced.
    recent = page.locator("#recent").first
    expect(recent).not_to_contain_text("See the autoscaler's scale-ups")
    expect(recent).to_contain_text(re.compile("No scale-up recorded|false scale-up|→"))


def waiting_in(demo, state: str):
    """A pod waiting in ``state`` at the demo's latest cycle; the demo must show each state."""
    pods = [p for p in demo.reports[-1].waiting if p.state == state]
    assert pods, f"the demo's latest cycle has no {state} pod"
    return pods[0]


# Which unschedulable pod comes first depends on timing: the demo has one that no node fits
# yet (highmem, a scale-up is coming) and one that no node shape fits (too-big).
UNSCHEDULABLE_WORDS = re.compile("no node fits|queue capacity|admission check|fits no node shape")


@pytest.mark.parametrize(
    ("state", "words"),
    [
        ("gated", "waiting for queue capacity (gated)"),
        ("unschedulable", UNSCHEDULABLE_WORDS),
        ("pipelined", re.compile(r"pipelined on \S+ until")),
    ],
)
def test_queue_pages_show_waiting_pods_with_their_reasons(live_server, page, stored, state, words):
    pod = waiting_in(stored, state)

    page.goto(live_server.url + f"/queues/{pod.queue}/")

    section = page.locator(f'section[data-state="{state.capitalize()}"]')
    row = section.locator("tr", has_text=f"{pod.namespace}/{pod.name}")
    expect(row).to_contain_text(words)
    if state == "pipelined":
        expect(row).to_contain_text(f"pipelined on {pod.node} until")


def test_the_false_admission_is_shown_as_a_risk_and_next_to_the_pod(live_server, page, stored):
    # lab/too-big (17 CPU, Guaranteed) is admitted by its queue's quota; no node shape holds it.
    page.goto(live_server.url + "/risks/")

    section = page.locator('section[data-risk="fits_no_node_shape"]')
    expect(section.locator("tr", has_text="prod/too-big")).to_contain_text("lab")

    page.goto(live_server.url + "/queues/lab/")
    row = page.locator('section[data-state="Unschedulable"] tr', has_text="prod/too-big")
    expect(row).to_contain_text("fits no node shape (admitted by its queue's quota)")


def test_a_chart_changes_range_without_reloading(live_server, page, stored):
    page.goto(live_server.url + "/queues/research/")
    expect(page.locator("#queue-cpu .main-svg").first).to_be_visible()
    page.evaluate("window.notReloaded = true")

    page.get_by_role("link", name="Last day").click()

    expect(page.get_by_role("link", name="Last day")).to_have_attribute("aria-current", "true")
    expect(page).to_have_url(re.compile(r"range=day"))
    expect(page.locator("#queue-cpu .main-svg").first).to_be_visible()
    assert page.evaluate("window.notReloaded") is True


def test_a_pod_timeline_opens_from_the_pods_page(live_server, page, stored):
    bound = next(
        t for r in stored.reports for t in r.transitions if t.kind is TransitionKind.ALLOCATED
    )
    page.goto(live_server.url + f"/pods/?namespace={bound.namespace}&name={bound.name}")

    page.get_by_role("link", name=f"{bound.namespace}/{bound.name}", exact=True).click()

    expect(page.get_by_role("heading", name=f"Pod {bound.namespace}/{bound.name}")).to_be_visible()
    timeline = page.locator("ol.timeline")
    expect(timeline).to_contain_text("allocated")
    expect(timeline).to_contain_text("→ Binding")
    expect(timeline).to_contain_text(f"on {bound.node}")


def test_pods_filter_by_state(live_server, page, stored):
    page.goto(live_server.url + "/pods/")

    page.get_by_label("State").select_option("Gated")

    expect(page).to_have_url(re.compile(r"state=gated"))
    rows = page.locator("table.pods tbody tr")
    expect(rows.first).to_be_visible()
    for state in rows.evaluate_all("rows => rows.map(r => r.dataset.state)"):
        assert state == "Gated"


def test_a_permitted_user_opts_a_namespace_in_and_its_new_pod_is_gated(live_server, page, stored):
    user = User.objects.create_user("olivia", password="pw-operator-1")
    user.user_permissions.add(Permission.objects.get(codename="toggle_namespace_opt_in"))
    log_in(page, live_server.url, "olivia", "pw-operator-1")
    row = page.locator('tr[data-namespace="batch"]')
    expect(row).to_contain_text("not opted in")

    row.get_by_role("link", name="Opt in").click()
    expect(page.get_by_role("heading", name="Opt in namespace batch?")).to_be_visible()
    page.get_by_label(re.compile("Yes, change the opt-in")).check()
    page.get_by_role("button", name="Opt in batch").click()

    expect(page.get_by_role("status")).to_contain_text("Namespace batch opted in")
    expect(page.locator('tr[data-namespace="batch"]')).to_contain_text("opted in")
    expect(page.locator("table.audit")).to_contain_text("olivia")
    labels = stored.core.read_namespace("batch").metadata.labels
    assert labels[QUEUE_ALLOCATION_GATE] == "true"
    # A pod with no opt-in of its own, larger than its queue can ever give (research's
    # capability is 4 CPU): it stays gated.
    late = pod("late", "30", "1Gi", namespace="batch", queue="research")
    created = stored.core.create_namespaced_pod("batch", body(late))
    assert [g.name for g in created.spec.scheduling_gates] == [QUEUE_ALLOCATION_GATE]
    stored.step(1)
    store_reports(stored)

    page.goto(live_server.url + "/pods/?namespace=batch&name=late")
    row = page.locator("table.pods tbody tr").first
    expect(row).to_have_attribute("data-state", "Gated")
    expect(row).to_contain_text("waiting for queue capacity (gated)")


def test_the_toggle_is_refused_without_the_permission(live_server, page, stored):
    User.objects.create_user("victor", password="pw-viewer-1")
    log_in(page, live_server.url, "victor", "pw-viewer-1")

    expect(page.locator('tr[data-namespace="prod"]')).to_contain_text("no permission to change")
    response = page.goto(live_server.url + "/namespaces/prod/opt-in/?enabled=true")

    assert response.status == 403
    expect(page.get_by_role("heading", name="Not allowed")).to_be_visible()
    labels = stored.core.read_namespace("prod").metadata.labels or {}
    assert QUEUE_ALLOCATION_GATE not in labels
