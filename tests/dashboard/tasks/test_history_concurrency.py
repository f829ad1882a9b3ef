"""Reports stored at the same time by several Celery workers, on PostgreSQL as production runs
it (`docker-compose.yml`: four workers on the default queue): one at a time, so two reports
never reconcile the same pods from the same rows — no cycle lost to a unique-UID conflict, a
pod created once and marked gone once.

A real PostgreSQL server (the system's `initdb` and `postgres`, run as the `postgres` user in a
temporary directory); the two stores run in a process of their own, as two threads with their
own database connections, each made to pause after reading the pods so that they overlap.
"""

from __future__ import annotations

import json
import os
import pwd
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from tests.conftest import pick_free_port, poll

ROOT = Path(__file__).resolve().parents[3]

pytestmark = pytest.mark.skipif(
    not (shutil.which("initdb") and shutil.which("postgres")),
    reason="PostgreSQL's initdb and postgres are not installed",
)

# Run in the child process: migrate, store a first report, then two more at once.
STORE_TWO_AT_ONCE = """
import json, sys, threading, time
import django
django.setup()
from django.core.management import call_command
from django.db import connection
call_command("migrate", verbosity=0)

from dashboard.models import Cycle, PodTransition, TrackedPod
from dashboard.services import pod_states
from dashboard.tasks.history import store_cycle_report
from scheduler.api.report import PodState
from tests.builders import T0, cycle_report, pod_record

def report(at, *names):
    pods = [pod_record(n, PodState.RUNNING, node="cpu-1", created=int(T0) - 30) for n in names]
    return cycle_report(at, cluster="c", pods=pods)

store_cycle_report(report(T0, "old"))

read = pod_states._rows
def slow_rows(pods):  # both stores read the pods, then both write
    rows = read(pods)
    time.sleep(1.0)
    return rows
pod_states._rows = slow_rows

stored = {}
def store(at):
    try:
        stored[at] = store_cycle_report(report(at, "new"))
    finally:
        connection.close()

threads = [threading.Thread(target=store, args=(T0 + i,)) for i in (1, 2)]
for t in threads:
    t.start()
    time.sleep(0.2)
for t in threads:
    t.join()
print(json.dumps({
    "stored": sorted(at for at, cycle in stored.items() if cycle is not None),
    "cycles": Cycle.objects.count(),
    "pods": sorted(TrackedPod.objects.values_list("name", "state")),
    "transitions": sorted(PodTransition.objects.values_list("name", "kind")),
}))
"""


@pytest.fixture
def postgres():
    """A PostgreSQL server of its own; its database URL."""
    try:
        user = pwd.getpwnam("postgres")
    except KeyError:
        pytest.skip("no postgres user to run the server as")
    # Outside pytest's temporary directories: the server's user must reach its data.
    data = Path(tempfile.mkdtemp(prefix="sluice-postgres-"))
    as_postgres = {}
    if os.getuid() == 0:  # PostgreSQL refuses to run as root
        os.chown(data, user.pw_uid, user.pw_gid)
        as_postgres = {"user": user.pw_uid, "group": user.pw_gid, "extra_groups": []}
    initdb = subprocess.run(["initdb", "-D", str(data), "-U", "postgres", "--auth=trust",
                             "-E", "UTF8"], capture_output=True, text=True, **as_postgres)  # fmt: skip
    assert initdb.returncode == 0, initdb.stderr
    port = pick_free_port()
    server = subprocess.Popen(
        ["postgres", "-D", str(data), "-p", str(port), "-k", str(data),
         "-c", "listen_addresses=127.0.0.1", "-c", "fsync=off"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, **as_postgres,
    )  # fmt: skip
    try:
        import psycopg

        def connect():
            try:
                return psycopg.connect(f"postgresql://postgres@127.0.0.1:{port}/postgres",
                                       autocommit=True)  # fmt: skip
            except psycopg.OperationalError:
                return None

        admin = poll(connect, timeout=30, interval=0.1)
        assert admin is not None, "PostgreSQL did not start"
        with admin:
            admin.execute("CREATE DATABASE sluice")
        yield f"postgres://postgres@127.0.0.1:{port}/sluice"
    finally:
        server.terminate()
        server.wait(timeout=30)
        shutil.rmtree(data, ignore_errors=True)


def test_reports_stored_at_once_are_stored_one_after_the_other(postgres, tmp_path):
    env = {**os.environ, "DATABASE_URL": postgres, "SLUICE_DEV_SECRET": "1",
           "DJANGO_SETTINGS_MODULE": "dashboard.settings", "PYTHONPATH": str(ROOT),
           "SLUICE_KUBECONFIG": str(tmp_path / "absent-kubeconfig")}  # fmt: skip
    done = subprocess.run([sys.executable, "-c", STORE_TWO_AT_ONCE], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=120)  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    result = json.loads(done.stdout.strip().splitlines()[-1])

    assert len(result["stored"]) == 2, "a cycle was lost"
    assert result["cycles"] == 3
    assert result["pods"] == [["new", "running"], ["old", "deleted"]]
    assert result["transitions"] == [
        ["new", "created"],
        ["new", "observed"],
        ["old", "created"],
        ["old", "deleted"],  # once
        ["old", "observed"],
    ]
