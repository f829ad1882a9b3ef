"""The enqueue action's arguments and the long-lived Admission: configuration, errors that
name the field, and on-demand snapshot requests throttled."""

from __future__ import annotations

import pytest

from scheduler import registry
from scheduler.admission.context import Admission
from scheduler.config import ConfigError, EnqueueArguments, SchedulerConfig, default_config
from tests.scheduler.admission.helpers import story1_snapshot


def test_enqueue_arguments_round_trip_through_the_configuration():
    config = default_config().with_action_arguments(
        "enqueue", admissionCheck=False, retryAfter=30, admitUnknown=True, maxSnapshotAge=300
    )
    assert config.enqueue_arguments() == EnqueueArguments(False, 30.0, True, 300.0)
    assert SchedulerConfig.from_dict(config.to_dict()) == config
    assert default_config().enqueue_arguments() == EnqueueArguments()  # check off, 60 s, no


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        ({"retryAfter": 0}, "arguments.retryAfter: expected seconds > 0, got 0"),
        ({"admissionCheck": "yes"}, "arguments.admissionCheck: expected true or false"),
        ({"retryafter": 5}, "unknown ['retryafter']"),
    ],
)
def test_bad_enqueue_arguments_name_the_field(arguments, message):
    raw = {
        **default_config().to_dict(),
        "configurations": [{"name": "enqueue", "arguments": arguments}],
    }
    with pytest.raises(ConfigError) as error:
        SchedulerConfig.from_dict(raw)
    assert message in str(error.value)


def test_configurations_must_name_a_known_action():
    raw = {**default_config().to_dict(), "configurations": [{"name": "enqeue", "arguments": {}}]}
    with pytest.raises(ConfigError, match="configurations: unknown action 'enqeue'"):
        registry.check(SchedulerConfig.from_dict(raw))


def test_the_checker_takes_the_configured_arguments():
    config = default_config().with_action_arguments("enqueue", retryAfter=5, admitUnknown=True)
    admission = Admission.for_config(config, lambda: None)
    assert admission.checker.retry_after.total_seconds() == 5
    assert admission.checker.admit_unknown


def test_a_missing_snapshot_is_requested_at_most_once_per_interval():
    requests: list[int] = []
    admission = Admission(
        lambda: None, request_refresh=lambda: requests.append(1), refresh_request_interval_s=3600
    )
    for _ in range(5):
        context = admission.context()
        context.request_snapshot()
    assert len(requests) == 1
    assert context.snapshot is None


def test_a_present_snapshot_is_not_requested_and_the_checker_outlives_contexts():
    requests: list[int] = []
    snapshot = story1_snapshot()
    admission = Admission(lambda: snapshot, request_refresh=lambda: requests.append(1))
    first, second = admission.context(), admission.context()
    assert requests == []
    assert first.snapshot is snapshot and first.checker is second.checker
    assert first.risk_cache is second.risk_cache and first.results is not second.results
