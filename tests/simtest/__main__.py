"""``python -m tests.simtest --seeds N`` (``make simtest SEEDS=N``) or ``--seed n`` (replay one).

Prints a line per seed, every violation (seed, cycle, invariant, objects, the command that
replays it) and a total; exits 1 when any invariant was violated.
"""

from __future__ import annotations

import argparse
import logging
import sys
import time
from collections import Counter

from tests.simtest.runner import CYCLES, fault_config, run


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.simtest", description=__doc__)
    which = parser.add_mutually_exclusive_group()
    which.add_argument("--seed", type=int, help="replay this one seed")
    which.add_argument("--seeds", type=int, default=20, help="seeds 0..N-1 (default 20)")
    parser.add_argument("--first", type=int, default=0, help="the first seed of --seeds")
    parser.add_argument("--cycles", type=int, default=CYCLES, help=f"per seed (default {CYCLES})")
    parser.add_argument(
        "--faults",
        default=None,
        help="'all' (the default: every kind), 'none', 'all=0.05' or 'conflict=0.05,watchGone=0.5,…'",
    )
    parser.add_argument("--no-restarts", action="store_true", help="no scheduler restarts")
    parser.add_argument("--no-churn", action="store_true", help="no deleted pods, no queue changes")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.CRITICAL)  # the scheduler logs every injected fault
    seeds = [args.seed] if args.seed is not None else range(args.first, args.first + args.seeds)
    totals: Counter[str] = Counter()
    cycles = violations = 0
    started = time.perf_counter()
    for seed in seeds:
        text = "" if args.faults == "none" else args.faults
        result = run(
            seed,
            cycles=args.cycles,
            faults=fault_config(seed, text),
            restarts=not args.no_restarts,
            churn=not args.no_churn,
        )
        print(result.line(), flush=True)
        for found in result.violations:
            print(found.describe(), flush=True)
        totals.update(result.faults)
        totals.update({f"churn: {k}": v for k, v in result.churn.items()})
        cycles += result.cycles
        violations += len(result.violations)
    print(
        f"simtest: {len(seeds)} seed(s), {cycles} cycles, {violations} violation(s), "
        f"{time.perf_counter() - started:.0f} s"
    )
    print("injected: " + ", ".join(f"{k} {v}" for k, v in sorted(totals.items())))
    return 1 if violations else 0


if __name__ == "__main__":
    sys.exit(main())
