"""The README's what-if picture: one experiment's comparison page, as the dashboard shows it,
cut to its heading, verdict, side-by-side figures and nodes-over-time chart, as a PNG.

    python scripts/whatif_picture.py [EXPERIMENT] [--output PNG]

EXPERIMENT defaults to ``dashboard/whatif/examples/trace-day.yaml``, played here as the
Celery task plays it (``service.execute``); ``--output`` defaults to
``docs/whatif-comparison.png``. Runs in this process: a throwaway SQLite database, Django on a free loopback port (static files served,
Plotly included), the system Chromium through Playwright.
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
import tempfile
import threading
from pathlib import Path
from socketserver import ThreadingMixIn
from wsgiref.simple_server import WSGIRequestHandler, WSGIServer, make_server

ROOT = Path(__file__).resolve().parent.parent
EXPERIMENT = ROOT / "dashboard/whatif/examples/trace-day.yaml"
OUTPUT = ROOT / "docs/whatif-comparison.png"
CHROMIUM = "/usr/bin/chromium"
WIDTH = 1100


class _ThreadingServer(ThreadingMixIn, WSGIServer):
    daemon_threads = True


class _QuietHandler(WSGIRequestHandler):
    def log_message(self, format, *args):  # noqa: A002 - the signature is wsgiref's
        pass


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("experiment", nargs="?", default=str(EXPERIMENT))
    parser.add_argument("--output", default=str(OUTPUT))
    args = parser.parse_args(argv)

    sys.path.insert(0, str(ROOT))
    folder = tempfile.mkdtemp(prefix="sluice-whatif-picture-")
    os.environ["DATABASE_URL"] = f"sqlite:///{folder}/db.sqlite3"
    os.environ.setdefault("SLUICE_DEV_SECRET", "1")
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "dashboard.settings")
    import django

    django.setup()
    from django.contrib.staticfiles.handlers import StaticFilesHandler
    from django.core.management import call_command
    from django.core.wsgi import get_wsgi_application

    from dashboard.whatif import service
    from dashboard.whatif.models import Experiment
    from dashboard.whatif.spec import loads

    call_command("migrate", verbosity=0)
    spec = loads(Path(args.experiment).read_text(), source=args.experiment)
    experiment = service.create(spec)
    print(f"playing {spec.name} ({len(spec.variants)} variants)", flush=True)
    logging.getLogger("scheduler").setLevel(logging.WARNING)  # per-pod info lines, thousands
    experiment = service.execute(experiment.pk)
    if experiment.status != Experiment.Status.DONE:
        print(f"the experiment did not finish: {experiment.status} {experiment.error}")
        return 1
    for r in experiment.results.all():
        s = r.summary
        print(f"  {r.name}: scale-ups {s['scale_ups']} ({s['false_scale_ups']} false), "
              f"node-hours {s['node_hours_bought']} ({s['node_hours_wasted']} wasted), "
              f"wait p50/p95 {s['wait_p50']}/{s['wait_p95']} s, never ran {s['never_ran']}, "
              f"{r.wall_seconds:.0f} s wall")  # fmt: skip

    server = make_server(
        "127.0.0.1", 0, StaticFilesHandler(get_wsgi_application()),
        server_class=_ThreadingServer, handler_class=_QuietHandler,
    )  # fmt: skip
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        _shoot(f"http://127.0.0.1:{server.server_port}/whatif/{experiment.pk}/", args.output)
    finally:
        server.shutdown()
    print(f"{args.output}: {Path(args.output).stat().st_size / 1024:.0f} KB")
    return 0


def _shoot(url: str, output: str) -> None:
    from playwright.sync_api import sync_playwright

    Path(output).parent.mkdir(parents=True, exist_ok=True)
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(
            executable_path=CHROMIUM, headless=True, args=["--no-sandbox", "--disable-gpu"]
        )
        page = browser.new_context(viewport={"width": WIDTH, "height": 900}).new_page()
        page.goto(url)
        page.wait_for_load_state("networkidle")
        page.locator("#whatif-nodes .main-svg").first.wait_for()
        # The page from its heading to the nodes chart: the other charts, the per-queue
        # table and the experiment's text stay on the page, out of the picture.
        top = page.locator("h1").bounding_box()
        chart = page.locator("#whatif-nodes").bounding_box()
        assert top is not None and chart is not None
        page.screenshot(
            path=output,
            clip={"x": 0, "y": top["y"] - 2, "width": WIDTH,
                  "height": chart["y"] + chart["height"] - top["y"] + 6},
            full_page=True,
        )  # fmt: skip
        browser.close()


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
