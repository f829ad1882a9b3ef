"""The what-if lab at full size: 24 simulated hours of the Alibaba openb trace on all 1,523 of
its nodes, each variant timed. Target: under 10 minutes of wall time per variant.

The experiment is ``dashboard/whatif/examples/trace-24h.yaml`` (``manage.py whatif`` plays
the same file): trace rows 7270-8020, the trace's densest 24 hours (751 pods; no 24-hour
stretch of the trace holds more, so 24 hours of it at its own pace fit the lab's 2,000-pod
bound without scaling), real time (``timeCompression: 1``), a cycle every 60 simulated
seconds (1,440 cycles; 24 h at 10 s would be 8,640, above the lab's 2,000-cycle bound).

Each variant runs in a process of its own, stopped after 10 minutes: a variant that has not
finished by then did not meet the target and is reported so. Prints, per variant, the wall
time, the cycles run, the ratio of simulated to wall time and the experiment's figures.
"""

from __future__ import annotations

import bisect
import csv
import json
import subprocess
import sys
import time
from pathlib import Path

EXPERIMENT = Path(__file__).resolve().parent.parent / "dashboard/whatif/examples/trace-24h.yaml"
LIMIT_S = 600.0


def _spec():
    from dashboard.whatif.spec import loads

    return loads(EXPERIMENT.read_text(), source=str(EXPERIMENT))


def window_words(spec) -> str:
    """What the trace window holds, read from the trace itself."""
    from dashboard.whatif.spec import trace_arguments
    from simcluster.trace import POD_CSV

    t = trace_arguments(spec.workload["trace"])
    with open(POD_CSV, newline="") as handle:
        created = [int(r["creation_time"]) for r in csv.DictReader(handle)]
    rows = created[t["skipPods"] : t["skipPods"] + t["pods"]]
    span_h = (rows[-1] - rows[0]) / 3600
    densest = max(bisect.bisect_left(created, c + 86_400) - i for i, c in enumerate(created))
    in_day = bisect.bisect_left(created, rows[0] + 86_400) - t["skipPods"]
    return (
        f"trace rows {t['skipPods']}-{t['skipPods'] + len(rows) - 1}: {len(rows)} pods created "
        f"over {span_h:.1f} h ({in_day} in the 24 h from the first; the densest 24 h of the "
        f"trace hold {densest}), {t['timeCompression']:g}x, on {t['nodes']} nodes, "
        f"{t['queues']} queues each capped at {t['queueShare']:.2%} of the nodes' CPU and GPUs"
    )


def play(index: int) -> dict:
    """One variant, in this process: its figures and timing as plain data."""
    from dashboard.whatif import runner

    spec = _spec()
    result = runner.run_variant(spec, spec.variants[index])
    return {
        "name": result["name"],
        "description": result["description"],
        "wall_seconds": result["wall_seconds"],
        "cycles": len(result["samples"]),
        "summary": result["summary"],
    }


def _seconds(value: float | None) -> str:
    return "-" if value is None else f"{value:g}"


def main() -> None:
    spec = _spec()
    print(f"{spec.name}: {window_words(spec)}")
    print(f"{spec.horizon / 3600:g} simulated hours a variant, a cycle every {spec.step:g} s "
          f"({spec.cycles} cycles), seed {spec.seed}; target: under {LIMIT_S / 60:g} min "
          "of wall time per variant")  # fmt: skip
    met = True
    for index, variant in enumerate(spec.variants):
        started = time.perf_counter()
        try:
            done = subprocess.run(
                [sys.executable, "-m", "bench.bench_whatif", "--variant", str(index)],
                capture_output=True,
                text=True,
                timeout=LIMIT_S,
            )
        except subprocess.TimeoutExpired:
            met = False
            print(f"{variant.name}: stopped after {time.perf_counter() - started:.0f} s of wall "
                  f"time: did NOT meet the {LIMIT_S / 60:g}-minute target")  # fmt: skip
            continue
        if done.returncode:
            met = False
            print(f"{variant.name}: failed (exit {done.returncode})\n{done.stderr[-3000:]}")
            continue
        r = json.loads(done.stdout.strip().splitlines()[-1])
        s, wall = r["summary"], r["wall_seconds"]
        under = wall < LIMIT_S
        met = met and under
        print(
            f"{r['name']} ({r['description']}): {wall:.1f} s wall, {r['cycles']} cycles "
            f"({wall / max(1, r['cycles']) * 1000:.0f} ms each), simulated/wall "
            f"{spec.horizon / wall:.0f}x, {'under' if under else 'NOT under'} "
            f"{LIMIT_S / 60:g} min"
        )
        print(
            f"  pods {s['pods']}, ran {s['ran']}, never ran {s['never_ran']}; wait p50/p95/max "
            f"{_seconds(s['wait_p50'])}/{_seconds(s['wait_p95'])}/{_seconds(s['wait_max'])} s; "
            f"scale-ups {s['scale_ups']} ({s['false_scale_ups']} false), node-hours bought "
            f"{s['node_hours_bought']:g} ({s['node_hours_wasted']:g} wasted); marked "
            f"Unschedulable {s['marked_unschedulable']}; evictions {s['evictions']}"
        )
    print("every variant under the target" if met else "target NOT met")


if __name__ == "__main__":
    if sys.argv[1:2] == ["--variant"]:
        print(json.dumps(play(int(sys.argv[2]))))
    else:
        main()
