"""Adversary, Part 15 (what-if lab): experiment files that ``dashboard.whatif.spec.load`` lets
through or crashes on. Its promise (spec.py's docstring): "``load`` checks every key and type
and names what is wrong" — a wrong file is a ``SpecError`` (a 400 on the page, a
CommandError for ``manage.py whatif``), never an unhandled exception or a silent
reinterpretation — and "an experiment must stay bounded"."""

from __future__ import annotations

import copy
from pathlib import Path

import pytest
import yaml
from django.contrib.auth.models import User

from dashboard.whatif.models import Experiment
from dashboard.whatif.spec import SpecError, load

GATES_TEXT = Path("dashboard/whatif/examples/gates.yaml").read_text()
GATES = yaml.safe_load(GATES_TEXT)
TRACE = yaml.safe_load(Path("dashboard/whatif/examples/trace.yaml").read_text())


def _refused(data: dict) -> str:
    with pytest.raises(SpecError) as caught:
        load(data)
    return str(caught.value)


@pytest.mark.parametrize("seed", [float("inf"), float("nan")])
def test_a_non_finite_seed_is_a_spec_error(seed):
    """Promise: load names what is wrong. Sent: seed: .inf / .nan. Today: OverflowError /
    ValueError from int() in spec._number, not a SpecError."""
    data = copy.deepcopy(GATES)
    data["seed"] = seed
    assert "seed" in _refused(data)


@pytest.mark.django_db
def test_the_page_answers_400_for_an_infinite_seed(client):
    """Promise: the page refuses a bad file with the reason (400). Sent seed: .inf to
    /whatif/start/ logged in. Today: the OverflowError escapes the view (a 500)."""
    client.force_login(User.objects.create_user("adv15", password="pw-adv15-1"))
    text = GATES_TEXT.replace("seed: 1\n", "seed: .inf\n")
    response = client.post("/whatif/start/", {"spec": text})
    assert response.status_code == 400
    assert "seed" in response.content.decode()
    assert not Experiment.objects.exists()


def test_an_infinite_trace_pod_count_is_a_spec_error():
    """Promise: load names what is wrong. Sent: workload.trace.pods: .inf. Today:
    OverflowError (trace_arguments' int(); load catches only TypeError/ValueError)."""
    data = copy.deepcopy(TRACE)
    data["workload"]["trace"]["pods"] = float("inf")
    assert "pods" in _refused(data)


def test_cpu_only_as_the_string_false_is_refused_not_read_as_true():
    """Promise: load checks every key and type. Sent: cpuOnly: "false" (a string). Today:
    accepted and read as bool("false") == True, so GPU pods are silently left out — the
    opposite of what the file says."""
    data = copy.deepcopy(TRACE)
    data["workload"]["trace"]["cpuOnly"] = "false"
    assert "cpuOnly" in _refused(data)


def test_a_negative_trace_skip_is_refused():
    """Promise: load checks every key. Sent: skipPods: -5. Today: accepted."""
    data = copy.deepcopy(TRACE)
    data["workload"]["trace"]["skipPods"] = -5
    assert "skipPods" in _refused(data)


def test_a_trace_window_beyond_the_trace_is_refused():
    """Promise: load checks the file; a trace window beyond the trace should be named
    when the file is loaded, not found at run time. Sent: skipPods: 1,000,000,000. Today:
    accepted, and runner.run plays it with 0 pods (a comparison of nothing, no error)."""
    data = copy.deepcopy(TRACE)
    data["workload"]["trace"]["skipPods"] = 10**9
    assert "skipPods" in _refused(data)


def test_a_nan_time_compression_is_refused():
    """Promise: timeCompression > 0 (load's own message). Sent: timeCompression: .nan —
    ``nan <= 0`` is False, so today it is accepted."""
    data = copy.deepcopy(TRACE)
    data["workload"]["trace"]["timeCompression"] = float("nan")
    assert "timeCompression" in _refused(data)


@pytest.mark.parametrize("timeout", [float("inf"), float("nan")])
def test_a_non_finite_reservation_timeout_is_refused(timeout):
    """Promise: reservationTimeout: seconds > 0. Sent .inf and .nan: today both accepted
    (nan fails ``<= 0`` too)."""
    data = copy.deepcopy(GATES)
    data["variants"][0]["reservationTimeout"] = timeout
    assert "reservationTimeout" in _refused(data)


def test_a_scheduler_configuration_with_an_unknown_action_is_refused():
    """Promise: a variant's schedulerConf is checked when the file is loaded (spec._variant
    builds its config). Sent: schedulerConf: "actions: bogus". Today: accepted, the config
    has actions ('bogus',); the page queues it and the run fails in the worker with
    "ConfigError: actions: unknown action 'bogus'" (SchedulerConfig.from_yaml does not check
    action names; the engine does, later)."""
    data = copy.deepcopy(GATES)
    data["variants"][0]["schedulerConf"] = "actions: bogus"
    assert "schedulerConf" in _refused(data)


def test_a_variant_name_must_be_text():
    """Promise: load checks every key and type. Sent: name: [a]. Today: accepted, named
    "['a']"."""
    data = copy.deepcopy(GATES)
    data["variants"][0]["name"] = ["a"]
    assert "name" in _refused(data)


def test_trace_queues_are_bounded():
    """Promise: an experiment must stay bounded (pods ≤ 2,000, nodes ≤ 1,523). Sent:
    queues: 10,000,000 for 200 pods. Today: accepted (only queues >= 1 is checked): ten
    million Queue objects to create per variant."""
    data = copy.deepcopy(TRACE)
    data["workload"]["trace"]["queues"] = 10**7
    assert "queues" in _refused(data)


def test_a_scenario_cluster_is_bounded_like_a_trace_cluster():
    """Promise: an experiment must stay bounded; a trace workload is held to 1,523 nodes.
    Sent: a scenario with 100,000 nodes (and its 15 pods). Today: accepted — the node bound
    is bypassed through a scenario file."""
    data = copy.deepcopy(GATES)
    data["workload"]["scenario"]["nodes"] = [
        {"name": f"n{i}", "capacity": {"cpu": "4", "memory": "16Gi", "pods": "110"}}
        for i in range(100_000)
    ]
    assert "nodes" in _refused(data)
