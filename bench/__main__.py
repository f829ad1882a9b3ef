"""``make bench``: run every benchmark module in bench/ and print its figures.

``python -m bench`` runs them all; ``python -m bench engine admission`` runs the named ones.
Each module ``bench/bench_<name>.py`` exposes ``main()`` that prints its own figures. Each runs
in a process of its own: what one leaves in memory (the dashboard's week of history, say)
would otherwise slow the next one's garbage collections and skew its figures.
"""

from __future__ import annotations

import importlib
import pkgutil
import subprocess
import sys
import time
from pathlib import Path


def available() -> list[str]:
    folder = Path(__file__).parent
    return sorted(
        m.name[len("bench_") :]
        for m in pkgutil.iter_modules([str(folder)])
        if m.name.startswith("bench_")
    )


def main(names: list[str]) -> int:
    names = names or available()
    unknown = sorted(set(names) - set(available()))
    if unknown:
        print(f"unknown benchmark(s): {', '.join(unknown)}; available: {', '.join(available())}")
        return 2
    if len(names) > 1:
        failed = [n for n in names if subprocess.run([sys.executable, "-m", "bench", n]).returncode]
        if failed:
            print(f"failed: {', '.join(failed)}")
        return 1 if failed else 0
    name = names[0]
    print(f"\n=== bench {name} ===", flush=True)
    started = time.perf_counter()
    importlib.import_module(f"bench.bench_{name}").main()
    print(f"=== bench {name}: {time.perf_counter() - started:.1f} s ===", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
