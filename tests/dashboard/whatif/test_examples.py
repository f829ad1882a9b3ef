"""The what-if lab's example experiments: each loads within the lab's bounds, the 24-hour
bench experiment is the trace window it says it is, and on the openb trace gates on make no
false scale-up where Volcano's marking without gates does (the direction the gate design
predicts), played by the real scheduler against the simulated cluster."""

from __future__ import annotations

import bisect
import csv
from pathlib import Path

import pytest

from bench import bench_whatif
from dashboard.whatif import runner
from dashboard.whatif.spec import MAX_CYCLES, MAX_PODS, loads, trace_arguments
from simcluster.trace import NODE_CSV, POD_CSV

EXAMPLES = Path("dashboard/whatif/examples")


@pytest.mark.parametrize("path", sorted(EXAMPLES.glob("*.yaml")), ids=lambda p: p.name)
def test_every_example_loads_within_the_bounds(path):
    spec = loads(path.read_text(), source=str(path))
    assert 0 < spec.cycles <= MAX_CYCLES
    if "trace" in spec.workload:
        assert trace_arguments(spec.workload["trace"])["pods"] <= MAX_PODS


def test_the_bench_experiment_is_the_traces_densest_day_on_all_its_nodes():
    spec = loads(bench_whatif.EXPERIMENT.read_text())
    t = trace_arguments(spec.workload["trace"])
    with open(POD_CSV, newline="") as handle:
        created = [int(r["creation_time"]) for r in csv.DictReader(handle)]
    with open(NODE_CSV, newline="") as handle:
        nodes = sum(1 for _ in csv.DictReader(handle))
    window = created[t["skipPods"] : t["skipPods"] + t["pods"]]
    assert t["nodes"] == nodes == 1523
    assert spec.horizon == 24 * 3600 and t["timeCompression"] == 1
    # Every pod the trace created in the 24 hours from the window's first, and no 24-hour
    # stretch of the trace holds more.
    assert bisect.bisect_left(created, window[0] + 86_400) - t["skipPods"] == len(window)
    densest = max(bisect.bisect_left(created, c + 86_400) - i for i, c in enumerate(created))
    assert len(window) == densest
    assert f"the densest 24 h of the trace hold {densest}" in bench_whatif.window_words(spec)


def test_on_the_trace_gates_on_make_no_false_scale_up_where_volcano_marking_does():
    """examples/trace.yaml (openb rows 7800-7999, 20x, 3 nodes, queues capped at 30%), gates
    off and on, both with Volcano's marking and Cluster Autoscaler."""
    text = Path(EXAMPLES / "trace.yaml").read_text()
    spec = loads(text)
    off, on = (runner.run_variant(spec, v) for v in spec.variants[:2])
    assert (off["variant"]["gates"], on["variant"]["gates"]) == (False, True)
    assert off["summary"]["false_scale_ups"] > 0
    assert off["summary"]["marked_unschedulable"] > 0
    assert on["summary"]["scale_ups"] == on["summary"]["false_scale_ups"] == 0
    assert on["summary"]["node_hours_bought"] < off["summary"]["node_hours_bought"]
    # The nodes bought without gates shortened no wait: the queues hold the pods back.
    for key in ("pods", "wait_p50", "wait_p95", "wait_max", "never_ran"):
        assert on["summary"][key] == off["summary"][key]
    assert max(s["nodes"] for s in on["samples"]) == 3 < max(s["nodes"] for s in off["samples"])
