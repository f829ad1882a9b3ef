"""``make screenshots``: a PNG of every page, from the demo scenario, into ``screenshots/``.

Runs everything in this process: a throwaway SQLite database, Django on a free loopback port
(static files served), the simulated cluster's demo scenario with Sluice's webhook and a real
scheduler (tests/browser/demo.py, the same one the browser tests walk), then the system
Chromium through Playwright.
"""

from __future__ import annotations

import os
import sys
import tempfile
import threading
from pathlib import Path
from socketserver import ThreadingMixIn
from wsgiref.simple_server import WSGIRequestHandler, WSGIServer, make_server

ROOT = Path(__file__).resolve().parent.parent
OUTPUT = ROOT / "screenshots"
CHROMIUM = "/usr/bin/chromium"
USERNAME, PASSWORD = "operator", "screenshots-only-1"
PAGES = [
    ("overview", "/"),
    ("queue-tree", "/queues/"),
    ("queue-research", "/queues/research/"),
    ("queue-prod", "/queues/prod/?range=day"),
    ("pods", "/pods/"),
    ("pod-timeline", "/pods/research/notebook-0/"),
    ("namespaces", "/namespaces/"),
    ("namespace-toggle", "/namespaces/batch/opt-in/?enabled=true"),
    ("history", "/history/"),
    ("admission-risk", "/risks/"),
    ("scheduler", "/scheduler/"),
    ("autoscaler", "/autoscaler/"),
]


class _ThreadingServer(ThreadingMixIn, WSGIServer):
    daemon_threads = True


class _QuietHandler(WSGIRequestHandler):
    def log_message(self, format, *args):  # noqa: A002 - the signature is wsgiref's
        pass


def main() -> int:
    sys.path.insert(0, str(ROOT))
    folder = tempfile.mkdtemp(prefix="sluice-screenshots-")
    os.environ["DATABASE_URL"] = f"sqlite:///{folder}/db.sqlite3"
    os.environ.setdefault("SLUICE_DEV_SECRET", "1")
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "dashboard.settings")
    import django

    django.setup()
    from django.contrib.auth.models import Permission, User
    from django.contrib.staticfiles.handlers import StaticFilesHandler
    from django.core.management import call_command
    from django.core.wsgi import get_wsgi_application

    from tests.browser.demo import demo_cluster, store_reports

    call_command("migrate", verbosity=0)
    user = User.objects.create_user(USERNAME, password=PASSWORD)
    user.user_permissions.add(Permission.objects.get(codename="toggle_namespace_opt_in"))
    server = make_server(
        "127.0.0.1", 0, StaticFilesHandler(get_wsgi_application()),
        server_class=_ThreadingServer, handler_class=_QuietHandler,
    )  # fmt: skip
    base = f"http://127.0.0.1:{server.server_port}"
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        with demo_cluster(base + "/webhooks/mutate-pods", Path(folder) / "kubeconfig") as demo:
            store_reports(demo)
            _shoot(base)
    finally:
        server.shutdown()
    print(f"{len(PAGES)} screenshots in {OUTPUT}")
    return 0


def _shoot(base: str) -> None:
    from playwright.sync_api import sync_playwright

    OUTPUT.mkdir(exist_ok=True)
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(
            executable_path=CHROMIUM, headless=True, args=["--no-sandbox", "--disable-gpu"]
        )
        page = browser.new_context(viewport={"width": 1280, "height": 900}).new_page()
        page.goto(base + "/login/")
        page.get_by_label("Username").fill(USERNAME)
        page.get_by_label("Password").fill(PASSWORD)
        page.get_by_role("button", name="Log in").click()
        page.wait_for_load_state("networkidle")
        for name, path in PAGES:
            page.goto(base + path)
            page.wait_for_load_state("networkidle")
            page.screenshot(path=str(OUTPUT / f"{name}.png"), full_page=True)
            print(f"  {name}.png  {path}")
        browser.close()


if __name__ == "__main__":
    sys.exit(main())
