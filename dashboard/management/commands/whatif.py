"""``manage.py whatif FILE``: play an exported what-if experiment from the command line.

Prints each variant's figures and the verdict; ``--output`` writes every result (figures,
samples, pods, scale-ups) as JSON, the same for every run of the same file (wall times
left out); ``--save`` also stores it as an experiment the dashboard lists.
"""

from __future__ import annotations

import json
import logging
import time
from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from dashboard.whatif import present, runner, service
from dashboard.whatif.spec import SpecError, resolve_and_load


class Command(BaseCommand):
    help = "Play a what-if experiment file (exported from the What-if lab) in virtual time."

    def add_arguments(self, parser) -> None:
        parser.add_argument("file", help="the experiment file (YAML)")
        parser.add_argument("--output", help="write the results as JSON to this file")
        parser.add_argument("--save", action="store_true", help="store it for the dashboard")

    def handle(self, *args, file: str, output: str | None, save: bool, **options) -> None:
        path = Path(file)
        try:
            # A recorded window or a copy of the connected cluster not frozen in the file yet
            # is read here, from this dashboard's history and cluster.
            spec = resolve_and_load(path.read_text(encoding="utf-8"), source=str(path))
        except OSError as exc:
            raise CommandError(f"{path}: cannot be read: {exc.strerror or exc}") from None
        except SpecError as exc:
            raise CommandError(str(exc)) from None
        self.stdout.write(f"{spec.name}: {spec.workload_words()}; seed {spec.seed}, "
                          f"{spec.horizon:g} s per variant, a cycle every {spec.step:g} s")  # fmt: skip
        started = time.perf_counter()
        quiet = logging.getLogger("scheduler")  # its per-pod info lines, thousands per run
        level = quiet.level
        quiet.setLevel(logging.WARNING)
        try:
            results = runner.run(spec)
        finally:
            quiet.setLevel(level)
        wall = time.perf_counter() - started
        for r in results:
            s = r["summary"]
            self.stdout.write(
                f"{r['name']}: {s['scale_ups']} scale-ups ({s['false_scale_ups']} false), "
                f"{s['node_hours_bought']} node-hours bought ({s['node_hours_wasted']} wasted), "
                f"wait p50/p95/max {s['wait_p50']}/{s['wait_p95']}/{s['wait_max']} s, "
                f"{s['evictions']} evictions, {s['never_ran']} of {s['pods']} pods never ran"
            )
        self.stdout.write(present.verdict(results))
        self.stdout.write(
            f"simulated {spec.horizon * len(spec.variants):g} s in {wall:.1f} s of wall time "
            f"({spec.horizon * len(spec.variants) / wall:.0f}x)"
        )
        if output:
            Path(output).write_text(
                json.dumps(runner.comparable(results), indent=1, sort_keys=True) + "\n"
            )
        if save:
            experiment = service.create(spec)
            service.store_results(experiment, results)
            experiment.status = experiment.Status.DONE
            experiment.done = experiment.total
            experiment.wall_seconds = round(wall, 3)
            experiment.save()
            self.stdout.write(f"stored as experiment {experiment.pk}")
