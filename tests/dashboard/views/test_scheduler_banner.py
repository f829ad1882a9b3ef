"""The banner every page carries says what the scheduler reported about itself — its mode,
its latest cycle, its failures — and that it stopped when its latest report is old (Part 11:
the "scheduler has stopped" banner showed on three pages of nine, and blamed "the scheduler
worker or the cluster"). The Scheduler page shows the mode, period and names the scheduler
reported, never the web process's own settings."""

from __future__ import annotations

import time

import pytest
from django.contrib.auth.models import Permission, User
from django.urls import URLPattern, URLResolver, get_resolver, reverse

from dashboard.tasks.history import store_cycle_report
from scheduler.api.report import ConfigInForce, CycleReport
from tests.builders import cycle_report, queue_report, waiting_pod

pytestmark = pytest.mark.django_db

ERROR = "OverflowError: Python int too large to convert to C long"
# URL names that are not pages of the dashboard (or, for login, not to anonymous users).
NOT_PAGES = {"healthz", "metrics", "mutate-pods", "login", "logout", "scheduler-banner",
             "whatif-start", "whatif-progress", "whatif-cancel", "whatif-export"}  # fmt: skip
# A queue, a pod, a namespace; a what-if experiment and its first variant (``experiment``).
ARGUMENTS = {"name": "research", "namespace": "research", "pk": 1, "position": 0}


@pytest.fixture(autouse=True)
def no_cluster(settings, tmp_path):
    from dashboard import kube

    settings.SLUICE_KUBECONFIG = str(tmp_path / "absent-kubeconfig")
    settings.CELERY_BROKER_URL = "redis://127.0.0.1:1/0"  # nothing listens
    kube.api_client.cache_clear()
    yield
    kube.api_client.cache_clear()


@pytest.fixture(autouse=True)
def experiment():
    """What-if experiment 1, played, with one variant's results (the lab's pages need one)."""
    from dashboard.whatif.models import Experiment, VariantResult

    done = Experiment.objects.create(pk=1, name="e", spec="workload: {trace: {}}\nvariants: "
                                     "[{name: a}]\n", status=Experiment.Status.DONE)  # fmt: skip
    summary = dict.fromkeys(("pods", "ran", "never_ran", "scale_ups", "false_scale_ups",
                             "node_hours_bought", "node_hours_wasted", "evictions"), 0)  # fmt: skip
    summary.update(wait_p50=None, wait_p95=None, wait_max=None)
    VariantResult.objects.create(experiment=done, position=0, name="a", summary=summary)


@pytest.fixture
def operator(client):
    user = User.objects.create_user("olivia", password="pw-operator-1")
    user.user_permissions.add(Permission.objects.get(codename="toggle_namespace_opt_in"))
    client.force_login(user)  # every page, the namespace toggle included
    return user


def page_urls() -> list[str]:
    """Every page of the dashboard, from the URL configuration: a page added later is checked
    too (its arguments must be in ARGUMENTS)."""
    urls = []
    for entry in get_resolver().url_patterns:
        if isinstance(entry, URLResolver) or not isinstance(entry, URLPattern):
            continue  # the admin
        name = entry.name
        if not name or name in NOT_PAGES or name.startswith("healthz"):
            continue
        params = list(entry.pattern.converters)
        missing = [p for p in params if p not in ARGUMENTS]
        assert not missing, f"page {name} needs arguments {missing}: add them to ARGUMENTS"
        urls.append(reverse(name, kwargs={p: ARGUMENTS[p] for p in params}))
    return urls


PAGES = page_urls()


def config(period: float = 2.0) -> ConfigInForce:
    return ConfigInForce("default", ["allocate"], [["gang"]], "actions: allocate\n",
                         period_s=period, scheduler_names=["volcano", "batch"])  # fmt: skip


def report(at: float, mode: str = "act", period: float = 2.0) -> dict:
    data = cycle_report(
        at,
        queues=[queue_report("research", allocated=1, running=1)],
        waiting=[waiting_pod("nb-1", "research", gated=True, reason="queue research is full")],
    )
    data["mode"] = mode
    data["config"] = config(period).to_json()
    return data


def failed(at: float) -> dict:
    failure = CycleReport.failed(at, 0.004, "act", OverflowError(ERROR.split(": ", 1)[1]))
    return failure.to_json()


def test_the_pages_are_all_there():
    assert len(PAGES) >= 10  # overview, queues, a queue, pods, a pod, namespaces, toggle, …
    assert "/namespaces/research/opt-in/" in PAGES and "/queues/research/" in PAGES


@pytest.mark.parametrize("url", PAGES)
def test_every_page_says_the_scheduler_stopped_when_its_latest_report_is_old(client, operator, url):
    # Ten periods and half a minute: with its reported period of 2 s, 50 s is too old.
    store_cycle_report(report(time.time() - 60))

    page = client.get(url).content.decode()

    assert page.count('id="scheduler-banner"') == 1, url
    assert "The scheduler has stopped reporting." in page
    assert "it reported a cycle every 2 s" in page
    # It says what it knows, and blames no one.
    assert "worker or the cluster" not in page and "Is the scheduler worker running" not in page


@pytest.mark.parametrize("url", PAGES)
def test_every_page_says_cycles_fail_with_the_error(client, operator, url):
    store_cycle_report(report(time.time() - 30))
    store_cycle_report(failed(time.time()))

    page = client.get(url).content.decode()

    assert page.count('id="cycle-failure"') == 1, url
    assert "Scheduling cycles are failing." in page and ERROR in page
    assert "The scheduler has stopped reporting." not in page  # it reports: its cycles fail


@pytest.mark.parametrize("url", PAGES)
def test_every_page_carries_the_mode_the_scheduler_reported(client, operator, settings, url):
    settings.SLUICE_MODE = "act"  # the web server's setting; the scheduler runs in observe
    store_cycle_report(report(time.time(), mode="observe"))

    page = client.get(url).content.decode()

    assert 'Scheduler: <strong class="scheduler-mode">observe mode</strong>' in page, url
    assert "The scheduler has stopped reporting." not in page
    assert "Scheduling cycles are failing." not in page


def test_before_any_cycle_the_banner_says_so(client):
    page = client.get("/namespaces/").content.decode()

    assert "Scheduler: no cycle reported yet." in page


def test_the_banner_refreshes_alone_and_follows_the_reports(client):
    store_cycle_report(report(time.time() - 120))
    assert "stopped reporting" in client.get("/scheduler/banner/").content.decode()

    store_cycle_report(report(time.time()))
    banner = client.get("/scheduler/banner/").content.decode()

    assert banner.lstrip().startswith('<div id="scheduler-banner"') and "<html" not in banner
    assert "stopped reporting" not in banner and "act mode" in banner


def test_without_a_reported_period_the_default_one_decides(client):
    data = report(time.time() - 45)  # older than 10 x 1 s + 30 s
    data["config"] = None
    store_cycle_report(data)

    assert "The scheduler has stopped reporting." in client.get("/").content.decode()


def test_the_scheduler_page_shows_what_the_scheduler_reported_not_the_web_settings(
    client, settings
):
    settings.SLUICE_MODE = "act"
    settings.SLUICE_CYCLE_PERIOD = 9
    settings.SLUICE_SCHEDULER_NAMES = ["web-only"]
    store_cycle_report(report(time.time() - 5))
    store_cycle_report(failed(time.time() - 3))
    store_cycle_report(report(time.time(), mode="observe", period=2.0))

    page = client.get("/scheduler/").content.decode()

    assert "<dt>Mode</dt><dd>observe</dd>" in page
    assert "<dt>Period</dt><dd>2 s</dd>" in page
    assert "<dt>Scheduler names</dt><dd>volcano, batch</dd>" in page
    assert "web-only" not in page and "9 s" not in page
    # The latest cycle, and the latest error even though cycles succeed again.
    assert "observe mode" in page
    assert f'(the cycle failed): <code class="latest-error">{ERROR}</code>' in page


def test_before_any_report_the_scheduler_page_says_nothing_is_reported(client, settings):
    settings.SLUICE_MODE = "act"
    page = client.get("/scheduler/").content.decode()

    assert "<dt>Mode</dt><dd>not reported yet (no cycle)</dd>" in page
    assert "<dt>Period</dt><dd>not reported yet</dd>" in page
