"""A cycle that fails is stored and said — on the Scheduler page, on every page —
instead of the dashboard going quiet and blaming the worker or the cluster (Part 10, item 14:
104 cycles in a row failed with no error anywhere). Objects Sluice cannot use are listed on
the Scheduler page and their pods on the Pods page, with the field."""

from __future__ import annotations

import time

import pytest

from dashboard.models import Cycle
from dashboard.selectors.cycles import cycle_failure, cycle_series
from dashboard.selectors.live import live_summary
from dashboard.selectors.sampling import RANGES
from dashboard.tasks.history import store_cycle_report
from scheduler.api.report import CycleReport, InvalidObject, PodState
from scheduler.api.status import Code
from tests.builders import cycle_report, queue_report, waiting_pod

pytestmark = pytest.mark.django_db

ERROR = "OverflowError: Python int too large to convert to C long"


@pytest.fixture(autouse=True)
def no_cluster(settings, tmp_path):
    from dashboard import kube

    settings.SLUICE_KUBECONFIG = str(tmp_path / "absent-kubeconfig")
    kube.api_client.cache_clear()
    yield
    kube.api_client.cache_clear()


def failed(at: float) -> dict:
    return CycleReport.failed(at, 0.004, "act", OverflowError(ERROR.split(": ", 1)[1])).to_json()


def good(at: float) -> dict:
    return cycle_report(at, queues=[queue_report("research", allocated=4, running=4)])


def test_a_failed_cycle_is_stored_with_its_error_and_keeps_the_last_good_figures():
    now = time.time()
    store_cycle_report(good(now - 3))
    for seconds in (2, 1, 0):
        store_cycle_report(failed(now - seconds))

    rows = list(Cycle.objects.order_by("started_at").values_list("failed", "error"))
    assert rows == [(False, ""), (True, ERROR), (True, ERROR), (True, ERROR)]
    summary = live_summary()
    assert summary is not None and [q.name for q in summary.queues] == ["research"]
    failure = cycle_failure()
    assert failure is not None
    assert (failure.error, failure.in_a_row) == (ERROR, 3)
    assert failure.since.timestamp() == pytest.approx(now - 2, abs=1e-3)
    assert failure.last_success.timestamp() == pytest.approx(now - 3, abs=1e-3)
    # Charts draw cycles that have figures: a failed one is no dip to zero pods.
    assert [row["counts"]["running"] for row in cycle_series(RANGES["hour"])] == [4]


def test_a_good_cycle_ends_the_failure():
    now = time.time()
    store_cycle_report(failed(now - 1))
    assert cycle_failure() is not None

    store_cycle_report(good(now))

    assert cycle_failure() is None


def test_the_scheduler_page_shows_the_failure_and_the_failed_cycles(client):
    now = time.time()
    store_cycle_report(good(now - 2))
    store_cycle_report(failed(now - 1))
    store_cycle_report(failed(now))

    page = client.get("/scheduler/").content.decode()

    assert "Scheduling cycles are failing." in page
    assert ERROR in page and "2 cycles in a row" in page
    assert "<strong>cycle failed:</strong> " + ERROR in page  # each row in the cycles table
    assert page.count('id="cycle-failure"') == 1  # in the banner only, not twice
    # The banner refreshes on its own; the live part says the latest error too.
    banner = client.get("/scheduler/banner/").content.decode()
    assert "Scheduling cycles are failing." in banner and "<html" not in banner
    live = client.get("/scheduler/", HTTP_HX_REQUEST="true", HTTP_HX_TARGET="live")
    assert "(the cycle failed): <code" in live.content.decode()
    assert ERROR in live.content.decode()


@pytest.mark.parametrize("url", ["/", "/queues/", "/pods/", "/history/", "/risks/"])
def test_every_page_says_cycles_are_failing(client, url):
    store_cycle_report(good(time.time() - 3600))
    store_cycle_report(failed(time.time()))

    page = client.get(url).content.decode()

    assert "Scheduling cycles are failing." in page and ERROR in page
    # Not "has the worker stopped?": the worker runs, and says why its cycles fail.
    assert "the scheduler has not run since" not in page


def test_no_failure_no_alert(client):
    store_cycle_report(good(time.time()))

    assert "Scheduling cycles are failing" not in client.get("/").content.decode()


def invalid_report(at: float) -> dict:
    message = (
        "Sluice cannot use this pod: spec.containers[0].resources.requests.cpu: invalid "
        "quantity '1e400': too large: more than 9223372036854775807 millicores"
    )
    data = cycle_report(
        at,
        queues=[queue_report("research")],
        waiting=[
            waiting_pod(
                "huge", "research", reason=message, code=Code.INVALID_OBJECT,
                state=PodState.WAITING,
            )
        ],
    )  # fmt: skip
    field = "spec.containers[0].resources.requests.cpu"
    data["invalid"] = [
        InvalidObject("pod", "research", "huge", "uid-huge", field, message.split(": ", 1)[1])
        .to_json(),
        InvalidObject("node", "", "cpu-9", "uid-cpu-9", "status.allocatable.cpu",
                      "status.allocatable.cpu: invalid quantity 'abc': quantities must match")
        .to_json(),
    ]  # fmt: skip
    return data


def test_objects_sluice_cannot_use_are_listed_with_their_field(client):
    store_cycle_report(invalid_report(time.time()))

    scheduler = client.get("/scheduler/").content.decode()
    assert "Objects Sluice cannot use" in scheduler
    assert "research/huge" in scheduler and "cpu-9" in scheduler
    assert "status.allocatable.cpu" in scheduler
    pods = client.get("/pods/").content.decode()
    assert "huge" in pods and "invalid quantity &#x27;1e400&#x27;" in pods
    assert "spec.containers[0].resources.requests.cpu" in pods


def test_a_cycle_that_failed_after_sending_binds_keeps_them_as_history(client):
    """A bind leaves when its statement commits: a cycle that raised afterwards had sent some.
    Its report says so (the transitions, a refused one as BIND_FAILED, and the errors), and
    they are its decisions in History and on each pod's page."""
    from scheduler.api.report import TransitionKind
    from tests.builders import transition

    sent = [
        transition("etl-0", TransitionKind.ALLOCATED, "n1", "allocated", ns="batch"),
        transition("etl-1", TransitionKind.BIND_FAILED, "n1", "bind failed: HTTP 500",
                   ns="batch", old=PodState.WAITING, new=PodState.WAITING),
    ]  # fmt: skip
    report = CycleReport.failed(time.time(), 0.2, "act", RuntimeError("status step"), sent,
                                ["bind batch/etl-1 to n1: HTTP 500"])  # fmt: skip
    store_cycle_report(report.to_json())

    cycle = Cycle.objects.get()
    assert cycle.failed and cycle.decisions == 2
    assert cycle.error.splitlines() == ["RuntimeError: status step",
                                        "bind batch/etl-1 to n1: HTTP 500"]  # fmt: skip
    history = client.get("/history/").content.decode()
    assert "batch/etl-0</a> allocated" in history and "batch/etl-1</a> bind failed" in history
    pod_page = client.get("/pods/batch/etl-0/")
    assert pod_page.status_code == 200 and "allocated" in pod_page.content.decode()
