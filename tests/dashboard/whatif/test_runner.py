"""The what-if lab's runner against the simulated cluster with the real scheduler: a small
hand-checked scenario, and the same file giving the same numbers twice."""

from __future__ import annotations

from pathlib import Path

import pytest
from django.core.management import call_command

from dashboard.whatif import present, runner
from dashboard.whatif.spec import SpecError, loads

GATES = Path("dashboard/whatif/examples/gates.yaml")


@pytest.fixture(scope="module")
def gates_results():
    """The gate-burst example (tests/e2e/gates/test_autoscalers.py's workload): fourteen 1-CPU
    pods in queue q capped at 2 CPU on one 4-CPU node, and needs-big, which only a node of
    group big can take; Cluster Autoscaler; Volcano's marking, gates off then on; plus
    Sluice's own marking with gates off."""
    text = GATES.read_text().replace(
        "variants:\n",
        "variants:\n- {name: sluice marking, gates: false, autoscaler: cluster-autoscaler}\n",
    )
    spec = loads(text)
    return spec, runner.run(spec)


def test_gates_on_avoids_the_false_scale_up_that_volcano_marking_causes(gates_results):
    spec, results = gates_results
    by_name = {r["name"]: r for r in results}
    off, on, sluice = by_name["gates off"], by_name["gates on"], by_name["sluice marking"]

    # Gates off, Volcano's marking: the twelve queue-limited pods look Unschedulable, so the
    # autoscaler buys a node for pods whose queue is full (false), besides needs-big's.
    assert off["summary"]["scale_ups"] == 2
    assert off["summary"]["false_scale_ups"] == 1
    false_up = next(s for s in off["scale_ups"] if s["false_scale_up"])
    assert {p["queue"] for p in false_up["pods"]} == {"q"}
    assert not any(p["could_run"] for p in false_up["pods"])
    assert off["summary"]["marked_unschedulable"] > 0

    # Gates on: the queue-limited pods stay gated; one scale-up, for needs-big, which lands.
    assert on["summary"]["scale_ups"] == 1
    assert on["summary"]["false_scale_ups"] == 0
    assert [p["name"] for p in on["scale_ups"][0]["pods"]] == ["needs-big"]
    assert on["scale_ups"][0]["landed"]
    assert on["summary"]["node_hours_bought"] < off["summary"]["node_hours_bought"]

    # Sluice's own marking (SchedulingSkipped) without gates does as well as gates on.
    assert sluice["summary"]["scale_ups"] == 1 and sluice["summary"]["false_scale_ups"] == 0

    # Both variants run the same workload: fourteen batch pods and needs-big; two batch pods
    # fit the queue at a time, each for 120 s, so within 300 s some never run in either.
    for r in (off, on):
        assert r["summary"]["pods"] == 15
        needs_big = next(p for p in r["pods"] if p["name"] == "needs-big")
        assert needs_big["node"].startswith("big-")
    assert on["summary"]["never_ran"] == off["summary"]["never_ran"] > 0

    words = present.verdict([off, on])
    saved = round(off["summary"]["node_hours_bought"] - on["summary"]["node_hours_bought"], 2)
    assert "gates off made 2 scale-ups (1 false)" in words
    assert f"gates on would have avoided 1 of 2 scale-ups (1 of 1 false), {saved:g} node-hours" in (
        words
    )
    # The figures link to the pods behind them: the false scale-up's pods.
    behind = present.pods_for(off, "false-scale-up")
    assert {p["name"] for p in behind} == {p["name"] for p in false_up["pods"]}


def test_the_command_gives_the_same_numbers_twice(tmp_path, capsys):
    first, second = tmp_path / "first.json", tmp_path / "second.json"
    call_command("whatif", str(GATES), output=str(first))
    out = capsys.readouterr().out
    call_command("whatif", str(GATES), output=str(second))
    assert first.read_text() == second.read_text()
    assert "gates on would have avoided 1 of 2 scale-ups" in out
    assert "x)" in out  # simulated over wall time


def test_a_bad_experiment_file_is_refused_naming_what_is_wrong():
    with pytest.raises(SpecError, match=r"variants\[0\]: marking: one of sluice, volcano"):
        loads("workload: {trace: {}}\nvariants: [{name: a, marking: kube}]\n")
    with pytest.raises(SpecError, match="at most 2000 per variant"):
        loads("horizon: 86400\nstep: 1\nworkload: {trace: {}}\nvariants: [{name: a}]\n")
    with pytest.raises(SpecError, match="unknown key"):
        loads("workload: {trace: {rows: 3}}\nvariants: [{name: a}]\n")


def test_a_variant_sets_the_scheduler_configuration_it_names():
    spec = loads(
        "workload: {trace: {}}\nvariants:\n- {name: a, pipelinePersistence: false, "
        "admissionCheck: true, reservationTimeout: 30, gateReservation: false}\n"
    )
    config = spec.variants[0].config()
    assert config.pipeline_persistence is False
    assert config.enqueue_arguments().admission_check is True
    capacity = config.plugin("capacity")
    assert capacity.arguments["reservationTimeout"] == 30
    assert capacity.arguments["gateReservation"] is False
