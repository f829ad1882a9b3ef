"""``make run`` on the whole Alibaba openb trace: cycles against the period, pages against
their target, while the stack runs.

Starts what ``SLUICE_SCENARIO=openb make run`` starts (``scripts/run_local.py --fresh``:
supervisord, the simulated cluster with the ``openb`` scenario — 1,523 nodes, 8,152 pods
submitted at the start, each running its trace lifetime —, the Celery scheduler worker leading
on its Lease in act mode at the default period, the gates worker, beat, the development web
server, embedded Redis), in a temporary run directory with its own SQLite database, listening
on 127.0.0.1 only. Then:

1. waits until the backlog is placed: every pod of the trace exists and ``SETTLE_CYCLES``
   stored cycles in a row decided nothing (no bind, no pipeline, no eviction: what fits is
   placed, the rest waits for pods to finish; at most ``BACKLOG_TIMEOUT`` s);
2. for ``WINDOW`` s, logged in as the local admin, requests each dashboard page in turn, one
   request at a time, each on a new connection (Overview, Queues, a queue, Pods, a pod,
   Scheduler, History, Namespaces, Risks, Autoscaler) and times each from request to the last
   byte of the answer;
3. reads every cycle that started in that window from the dashboard's database (the cycle's
   own duration, as the Scheduler and History pages show it) and compares it with the period
   (``SLUICE_CYCLE_PERIOD``, start to start);
4. reads each process's CPU time (``/proc``, with its children) at both ends of the window:
   the machine is shared, and wall-clock figures grow with whatever else runs on it, while
   the CPU a cycle or a page view costs does not.

Prints p50/p95 per page against the pages' target (p95 < 50 ms, the dashboard's, see
``bench_dashboard``), the cycles' p50/p95/max, how many ran over the period, and the CPU
seconds of each process per cycle and per page view. ``BENCH_OPENB_RUN_DIR`` keeps the run
directory (database, logs) at that path instead of a temporary one.
Data: Alibaba clusterdata ``cluster-trace-gpu-v2023`` (Weng et al., USENIX ATC 2023).
"""

from __future__ import annotations

import json
import os
import re
import signal
import socket
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import datetime
from http import client
from pathlib import Path

import requests

ROOT = Path(__file__).resolve().parent.parent
PERIOD_S = float(os.environ.get("SLUICE_CYCLE_PERIOD", "1"))
WINDOW = float(os.environ.get("BENCH_OPENB_WINDOW", "90"))
BACKLOG_TIMEOUT = 480.0
SETTLE_CYCLES = 5
PAGE_TARGET_MS = 50.0
TRACE_PODS = 8152
PAGES = [
    ("overview", "/"),
    ("queues", "/queues/"),
    ("queue openb-q0", "/queues/openb-q0/"),
    ("pods", "/pods/"),
    ("pod openb-pod-0000", "/pods/openb/openb-pod-0000/"),
    ("scheduler", "/scheduler/"),
    ("history", "/history/"),
    ("namespaces", "/namespaces/"),
    ("risks", "/risks/"),
    ("autoscaler", "/autoscaler/"),
]
PENDING = ("unschedulable", "waiting", "gated", "pipelined")
# Each timed request on a connection of its own, as bench_health's: on a kept-alive
# connection the development server's answers waited ~40 ms each for the client's delayed
# ACK (its headers and body leave in separate writes), a floor that is TCP's, not the page's.
NEW_CONNECTION = {"Connection": "close"}
PROGRAMS = ("scheduler", "gates", "web", "sim", "beat", "redis")
TICKS = os.sysconf("SC_CLK_TCK")


def _cpu_seconds(pid: int) -> float:
    """User + system CPU of ``pid`` and its live descendants (``/proc``)."""
    children: dict[int, list[int]] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        children.setdefault(int(fields[1]), []).append(int(stat.parent.name))
    total, todo = 0.0, [pid]
    while todo:
        current = todo.pop()
        try:
            fields = Path(f"/proc/{current}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        total += (int(fields[11]) + int(fields[12])) / TICKS
        todo += children.get(current, [])
    return total


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class Stack:
    """``scripts/run_local.py --fresh`` in a run directory of its own."""

    def __init__(self, run_dir: Path) -> None:
        self.run_dir = run_dir
        self.port = _free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.env = dict(os.environ)
        self.env.update(
            SLUICE_SCENARIO="openb",
            SLUICE_RUN_DIR=str(run_dir),
            SLUICE_WEB_PORT=str(self.port),
            DATABASE_URL=f"sqlite:///{run_dir / 'db.sqlite3'}",
        )
        for name in ("SLUICE_KUBECONFIG", "SLUICE_SIM_STATE", "REDIS_URL", "SLUICE_SIM_PORT"):
            self.env.pop(name, None)
        manage = [sys.executable, str(ROOT / "manage.py")]
        subprocess.run(
            [*manage, "migrate", "--noinput"], env=self.env, cwd=ROOT, check=True,
            stdout=subprocess.DEVNULL,
        )  # fmt: skip
        self.log = (run_dir / "make-run.out").open("w")
        self.process = subprocess.Popen(
            [sys.executable, str(ROOT / "scripts" / "run_local.py"), "--fresh"],
            env=self.env, cwd=ROOT, stdout=self.log, stderr=subprocess.STDOUT,
            start_new_session=True,
        )  # fmt: skip

    def wait_for_web(self, timeout: float = 120.0) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"make run stopped; see {self.log.name}")
            try:
                if requests.get(f"{self.url}/healthz", timeout=2).status_code == 200:
                    return
            except requests.RequestException:
                pass
            time.sleep(1)
        raise RuntimeError(f"the web server did not answer within {timeout:g} s")

    def session(self) -> requests.Session:
        """Logged in as the local admin (``manage.py ensure_admin``'s password file)."""
        password = (self.run_dir / "admin_password").read_text().strip()
        http = requests.Session()
        page = http.get(f"{self.url}/login/", timeout=10)
        token = http.cookies.get("csrftoken") or re.search(
            r'name="csrfmiddlewaretoken" value="([^"]+)"', page.text
        ).group(1)  # type: ignore[union-attr]
        answer = http.post(
            f"{self.url}/login/",
            data={"username": "admin", "password": password, "csrfmiddlewaretoken": token},
            headers={"Referer": f"{self.url}/login/"},
            timeout=10,
        )
        if answer.status_code != 200 or "/login/" in answer.url:
            raise RuntimeError(f"login failed: HTTP {answer.status_code} at {answer.url}")
        return http

    def pods_created(self) -> int:
        """Pods of the trace in the simulated cluster (its API, through the kubeconfig)."""
        from kubernetes import client, config

        api = config.new_client_from_config(str(self.run_dir / "kubeconfig"))
        try:
            listed = client.CoreV1Api(api).list_namespaced_pod("openb", _preload_content=False)
            return len(json.loads(listed.data)["items"])
        finally:
            api.close()

    def cycles(self, since: datetime | None = None) -> list[dict]:
        with sqlite3.connect(self.run_dir / "db.sqlite3", timeout=10) as db:
            rows = db.execute(
                "SELECT started_at, duration_ms, counts, failed, decisions FROM dashboard_cycle"
                " ORDER BY started_at"
            ).fetchall()
        out = []
        for started, duration, counts, failed, decisions in rows:
            at = datetime.fromisoformat(started)
            if since is None or at >= since:
                out.append({"at": at, "ms": duration, "counts": json.loads(counts or "{}"),
                            "failed": bool(failed), "decisions": decisions})  # fmt: skip
        return out

    def pid(self, name: str) -> int:
        """The process id supervisord gives for program ``name`` (0: not running)."""
        ctl = [sys.executable, "-m", "supervisor.supervisorctl",
               "-c", str(self.run_dir / "supervisord.conf")]  # fmt: skip
        answer = subprocess.run([*ctl, "pid", name], capture_output=True, text=True).stdout
        return int(answer) if answer.strip().isdigit() else 0

    def cpu(self) -> dict[str, float]:
        """CPU seconds of each program supervisord runs, with its children."""
        return {name: _cpu_seconds(pid) for name in PROGRAMS if (pid := self.pid(name))}

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)  # run_local passes it to supervisord
            try:
                self.process.wait(60)
            except subprocess.TimeoutExpired:
                os.killpg(self.process.pid, signal.SIGKILL)
                self.process.wait(10)
        self.log.close()


def _pending(cycle: dict) -> int:
    return sum(int(cycle["counts"].get(k, 0)) for k in PENDING)


def wait_for_backlog(stack: Stack) -> tuple[float, list[dict]]:
    """Seconds until the backlog is placed (see the module's docstring), and the cycles."""
    started = time.monotonic()
    created = 0
    while time.monotonic() - started < BACKLOG_TIMEOUT:
        time.sleep(5)
        if created < TRACE_PODS:
            try:
                created = stack.pods_created()
            except Exception:  # the cluster is starting; ask again
                continue
            continue
        cycles = [c for c in stack.cycles() if not c["failed"]]
        last = cycles[-SETTLE_CYCLES:]
        if len(last) == SETTLE_CYCLES and not any(c["decisions"] for c in last):
            return time.monotonic() - started, cycles
    raise RuntimeError(
        f"the backlog was not placed within {BACKLOG_TIMEOUT:g} s ({created} pods created)"
    )


def _pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))] if ordered else float("nan")


def measure(stack: Stack) -> tuple[dict[str, list[float]], list[dict], dict[str, float]]:
    http = stack.session()
    for _, path in PAGES:  # each page answers at all, before timing
        answer = http.get(stack.url + path, timeout=30)
        if answer.status_code != 200:
            raise RuntimeError(f"{path}: HTTP {answer.status_code}")
    cookie = "; ".join(f"{k}={v}" for k, v in http.cookies.items())
    clock_start = stack.cycles()[-1]["at"]
    times: dict[str, list[float]] = {name: [] for name, _ in PAGES}
    web_cpu = dict.fromkeys(times, 0.0)  # the web server's CPU during each page's requests
    web = stack.pid("web")
    cpu_before = stack.cpu()
    started = time.monotonic()
    while time.monotonic() - started < WINDOW:
        for name, path in PAGES:
            c0, t0 = _cpu_seconds(web), time.perf_counter()
            connection = client.HTTPConnection("127.0.0.1", stack.port, timeout=30)
            connection.request("GET", path, headers={"Cookie": cookie, **NEW_CONNECTION})
            answer = connection.getresponse()
            answer.read()
            connection.close()
            times[name].append((time.perf_counter() - t0) * 1000)
            web_cpu[name] += _cpu_seconds(web) - c0
            if answer.status != 200:
                raise RuntimeError(f"{path}: HTTP {answer.status}")
    cpu_after = stack.cpu()
    time.sleep(2 * PERIOD_S + 2)  # the window's last cycles reach the database
    window = [c for c in stack.cycles(since=clock_start) if c["at"] > clock_start]
    cpu = {k: cpu_after[k] - v for k, v in cpu_before.items() if k in cpu_after}
    cpu.update({f"page {k}": v for k, v in web_cpu.items()})
    return times, window, cpu


def main() -> None:
    print(f"make run on the openb trace (1,523 nodes, {TRACE_PODS:,} pods), period "
          f"{PERIOD_S:g} s; window {WINDOW:g} s; machine shared: figures vary between runs")  # fmt: skip
    keep = os.environ.get("BENCH_OPENB_RUN_DIR")
    if keep:
        Path(keep).mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="sluice-bench-openb-") as tmp:
        stack = Stack(Path(keep or tmp))
        try:
            stack.wait_for_web()
            waited, cycles = wait_for_backlog(stack)
            last = cycles[-1]
            print(f"backlog placed after {waited:.0f} s, {len(cycles)} cycles: "
                  f"{last['counts'].get('running', 0):,} running, {_pending(last)} waiting "
                  f"for room ({json.dumps(last['counts'])})")  # fmt: skip
            times, window, cpu = measure(stack)
        finally:
            stack.stop()
    print(f"pages, one request at a time over HTTP from the development server "
          f"(target p95 < {PAGE_TARGET_MS:g} ms; cpu: the web server's CPU per request, mean,"
          f" /proc's 10 ms ticks):")  # fmt: skip
    missed = []
    for name, values in times.items():
        p95 = _pct(values, 0.95)
        if p95 >= PAGE_TARGET_MS:
            missed.append(name)
        page_cpu = cpu.pop(f"page {name}") * 1000 / max(len(values), 1)
        print(f"  {name:<20} n={len(values):>4}  p50 {_pct(values, 0.5):6.1f} ms  "
              f"p95 {p95:6.1f} ms  max {max(values):6.1f} ms  cpu {page_cpu:5.1f} ms")  # fmt: skip
    durations = [c["ms"] / 1000 for c in window]
    gaps = [(b["at"] - a["at"]).total_seconds() for a, b in zip(window, window[1:], strict=False)]
    over = sum(d > PERIOD_S for d in durations)
    print(f"cycles in the window: {len(window)} stored, duration p50 {_pct(durations, 0.5):.3f} s"
          f", p95 {_pct(durations, 0.95):.3f} s, max {max(durations, default=float('nan')):.3f}"
          f" s; {over} over the {PERIOD_S:g} s period; start to start p50 "
          f"{statistics.median(gaps) if gaps else float('nan'):.2f} s, max "
          f"{max(gaps, default=float('nan')):.2f} s")  # fmt: skip
    views = sum(len(v) for v in times.values())
    print(f"CPU over the window ({WINDOW:g} s, {len(window)} cycles, {views} page views): "
          + ", ".join(f"{k} {v:.1f} s" for k, v in cpu.items())
          + f"; scheduler worker {cpu.get('scheduler', 0) / max(len(window), 1):.3f} s a cycle"
          f" (its informers and the report's sending included), report storing (gates worker)"
          f" {cpu.get('gates', 0) / max(len(window), 1):.3f} s a cycle, web "
          f"{cpu.get('web', 0) * 1000 / max(views, 1):.1f} ms a page view")  # fmt: skip
    print(f"pages over target: {', '.join(missed) or 'none'}; cycles over the period: {over}")


if __name__ == "__main__":
    main()
