"""Binds sent from a process of their own, so that they do not share the scheduler's interpreter.

Volcano's bind workers and kube-scheduler's asynchronous binding send binds while the cycle goes
on, in parallel with it: Go runs them on other cores. In CPython one interpreter runs one thread
at a time, so sixteen bind threads in the scheduler's process take turns with the cycle (and the
informers) for it: through the API, the 10,000 binds of the SchedulingBasic shape cost the
scheduler's process 0.8 s of CPU that the cycle waited behind, and every bind answer woke a
thread that had to win the interpreter back before it could send the next.

Here the Bindings leave from a child process (``python -m scheduler.kube.bind_process``) with the
same number of threads, each on a keep-alive connection of its own (:mod:`scheduler.kube.transport`:
the same TLS, the same headers). The scheduler's process writes one line per bind to the child's
standard input and one thread reads the answers from its standard output; what the answer means
to the cache (the pod is binding; the bind failed and why) is decided in the scheduler's process,
as before.

What stays as it was:

* the QPS limit (``--kube-api-qps`` / ``--kube-api-burst``): the child keeps a token bucket of the
  same rate and burst for the binds; the scheduler's other requests keep theirs. Both saturated
  at once may together send up to twice the rate — Volcano's one client never does; the binds
  are nearly all of a large cycle's writes;
* a 429 or 5xx with Retry-After is sent again after it, at most ten times (client-go's
  ``checkWait``), in the child;
* leader election: nothing is sent unless the scheduler holds the Lease. The scheduler asks
  ``leading()`` before handing a bind over (refused: :class:`~scheduler.kube.leader.NotLeader`,
  counted), and tells the child every ``FENCE_POLL_S`` until when it may send: ``FENCE_GRACE_S``
  past the last time ``leading()`` said yes. The child refuses what is still queued once that
  time passes. So a bind may leave at most ``FENCE_GRACE_S`` after the Lease was lost, well
  inside the gap client-go's leader election keeps between a leader's renew deadline (10 s) and
  the lease's duration (15 s), after which another scheduler may lead;
* a child that dies fails the binds it held (each pod is left to the next cycle, as any failed
  bind); the next bind starts another child.

Both processes compare ``time.monotonic()``: CLOCK_MONOTONIC is one clock for the whole machine
on Linux.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from typing import Any

from scheduler.kube.client import api_error
from scheduler.kube.fencing import NotLeader

log = logging.getLogger(__name__)

FENCE_POLL_S = 0.02  # how often the scheduler tells the child how long it may still send
FENCE_GRACE_S = 0.1  # how long past the last "leading" a bind may still leave
MAX_FAILED_STARTS = 3  # children in a row that answered nothing: bind in-process instead
TLS_SETTINGS = ("host", "tls_server_name", "verify_ssl", "ssl_ca_cert", "ca_cert_data",
                "assert_hostname", "cert_file", "key_file")  # fmt: skip

Done = Callable[[Exception | None], None]


class BindProcessGone(OSError):
    """The bind process ended before it answered for this bind."""


class BindSendError(OSError):
    """The bind process could not send the request or read its answer (connection refused,
    reset, timed out, an answer that is not HTTP/1.1): the same failure as in this process."""


class BindProcess:
    """The scheduler's side: :meth:`submit` hands a Binding to the child, whose answer calls
    ``done`` (None, or the exception the same request sent in this process would raise) from
    the reader thread."""

    def __init__(
        self,
        configuration: Any,
        *,
        workers: int,
        qps: float,
        burst: int,
        headers: Callable[[], dict[str, str]],
        timeout: float,
        leading: Callable[[], bool] | None = None,
        refused: list[int] | None = None,
        command: list[str] | None = None,
    ) -> None:
        self._settings = {
            "tls": {name: getattr(configuration, name, None) for name in TLS_SETTINGS},
            "workers": workers, "qps": qps, "burst": burst, "timeout": timeout,
            "fenced": leading is not None,
        }  # fmt: skip
        self._command = command or [sys.executable, "-m", "scheduler.kube.bind_process"]
        self._headers = headers
        self._leading = leading
        self._refused = refused if refused is not None else [0]
        self._lock = threading.Lock()
        self._process: subprocess.Popen[bytes] | None = None
        # Binds handed over and not answered yet, each with the child that holds it.
        self._pending: dict[int, tuple[str, Done, subprocess.Popen[bytes]]] = {}
        self._next = 0
        self._sent_headers: dict[str, str] | None = None
        self._closed = False
        self._stop = threading.Event()
        self.started = 0  # children started
        self.failed_starts = 0  # children in a row that ended without answering anything
        self._answered = False  # the newest child answered at least once

    # -- the child's life ---------------------------------------------------------------------

    def start(self) -> BindProcess:
        with self._lock:
            self._spawn()
        if self._leading is not None:
            threading.Thread(target=self._fence, name="bind-fence", daemon=True).start()
        return self

    def _spawn(self) -> None:
        """Start a child (the lock held)."""
        process = subprocess.Popen(
            self._command, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
            env={**os.environ, "PYTHONPATH": os.pathsep.join(p for p in sys.path if p)},
        )  # fmt: skip
        assert process.stdin is not None
        self._process = process
        self._sent_headers = None
        self._answered = False
        self.started += 1
        first = _line(self._settings)
        if self._leading is not None:
            first += _line({"fence": self._fence_until()})
        with contextlib.suppress(OSError):  # a child that died at once: its reader says so
            _write(process, first)
        threading.Thread(
            target=self._read, args=(process,), name="bind-answers", daemon=True
        ).start()

    @property
    def pid(self) -> int | None:
        process = self._process
        return process.pid if process is not None else None

    @property
    def usable(self) -> bool:
        """False once ``MAX_FAILED_STARTS`` children in a row ended without answering (a
        Python that cannot run the module...): the binds are then sent in the scheduler's
        own process, as without a bind process."""
        return self.failed_starts < MAX_FAILED_STARTS and not self._closed

    def close(self, timeout: float = 10.0) -> None:
        """The child sends what it holds, then ends; a child still busy after ``timeout`` is
        killed (its binds fail)."""
        self._stop.set()
        with self._lock:
            self._closed = True
            process, self._process = self._process, None
        if process is None:
            return
        assert process.stdin is not None
        with contextlib.suppress(OSError):
            process.stdin.close()
        try:
            process.wait(timeout)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()

    # -- binds -------------------------------------------------------------------------------

    def submit(
        self, namespace: str, name: str, uid: str | None, node_name: str, done: Done
    ) -> bool:
        """Bind pod ``namespace/name`` (of ``uid``) to ``node_name`` from the child; False
        (nothing done, ``done`` not called) when the bind process is not :attr:`usable`."""
        what = f"pod {namespace}/{name}"
        if self._leading is not None and not self._leading():
            self._refused[0] += 1
            done(NotLeader(f"{what}: bind to {node_name}: not the leader (lease lost); "
                           "nothing written"))  # fmt: skip
            return True
        headers = self._headers()
        with self._lock:
            if not self.usable:
                return False
            if self._process is None:
                log.warning("the bind process ended; starting another", extra={"object": what})
                self._spawn()
            process = self._process
            assert process is not None and process.stdin is not None
            self._next += 1
            key = self._next
            self._pending[key] = (what, done, process)
            data = b""
            if headers != self._sent_headers:
                data = _line({"headers": headers})
                self._sent_headers = headers
            data += _line([key, namespace, name, uid, node_name])
            with contextlib.suppress(OSError):  # the child is gone: its reader fails this bind
                _write(process, data)
        return True

    def _read(self, process: subprocess.Popen[bytes]) -> None:
        assert process.stdout is not None
        for raw in process.stdout:
            try:
                answer = json.loads(raw)
                key, status = int(answer[0]), int(answer[1])
            except (ValueError, TypeError, IndexError, KeyError):
                log.error("bind process: not an answer: %r", raw[:200])
                continue
            with self._lock:
                what, done, _ = self._pending.pop(key, ("", None, None))
                self._answered = True
                if status == -1:
                    self._refused[0] += 1
            if done is None:
                continue
            try:
                done(_error(what, status, answer))
            except Exception:  # one bind's bookkeeping must not stop the answers of the others
                log.exception("bind process: handling the answer for %s failed", what)
        code = process.wait()
        with self._lock:
            if self._process is process:
                self._process = None
                self.failed_starts = 0 if self._answered else self.failed_starts + 1
            held = [k for k, (_, _, owner) in self._pending.items() if owner is process]
            lost = [self._pending.pop(k) for k in held]
        if not self._stop.is_set():
            log.error("bind process exited (code %s) holding %d binds", code, len(lost))
        for what, done, _ in lost:
            with contextlib.suppress(Exception):
                done(BindProcessGone(f"{what}: the bind process exited (code {code}) "
                                     "before answering"))  # fmt: skip

    def _fence_until(self) -> float:
        leading = self._leading
        return time.monotonic() + FENCE_GRACE_S if leading is not None and leading() else 0.0

    def _fence(self) -> None:
        while not self._stop.wait(FENCE_POLL_S):
            until = self._fence_until()
            with self._lock:
                process = self._process
                if process is None or process.stdin is None:
                    continue
                with contextlib.suppress(OSError):
                    _write(process, _line({"fence": until}))


def _write(process: subprocess.Popen[bytes], data: bytes) -> None:
    """Write to the child's (buffered) input and send it at once."""
    assert process.stdin is not None
    process.stdin.write(data)
    process.stdin.flush()


def _line(value: Any) -> bytes:
    return json.dumps(value, separators=(",", ":")).encode() + b"\n"


def _error(what: str, status: int, answer: list) -> Exception | None:
    """What the answer ``[id, status, reason, body, error]`` means, as the same request sent
    in this process would have raised it."""
    if 200 <= status < 300:
        return None
    if status == -1:
        return NotLeader(f"{what}: not the leader (lease lost); nothing written")
    if status == 0:
        return BindSendError(f"{what}: {answer[4] if len(answer) > 4 else 'no answer'}")
    reason, body = (answer[2], answer[3]) if len(answer) > 3 else ("", "")
    return api_error(status, str(reason), str(body), what)


# -- the child -------------------------------------------------------------------------------


def main() -> None:
    """The bind process: a settings line, then bind lines ``[id, namespace, name, uid, node]``
    and settings changes (``{"headers": ...}``, ``{"fence": until}``) on standard input; one
    answer line ``[id, status, reason, body, error]`` per bind on standard output (status -1: refused by
    the fence; 0: not sent or not answered, ``error`` says why). Ends once its input ends and
    what it holds is answered."""
    import queue
    from types import SimpleNamespace

    from scheduler.kube.client import RETRY_AFTER_TRIES, binding, binding_path, retry_after
    from scheduler.kube.ratelimit import TokenBucket
    from scheduler.kube.transport import DirectRest

    source, sink = sys.stdin.buffer, sys.stdout.buffer
    settings = json.loads(source.readline())
    configuration = SimpleNamespace(**settings["tls"])
    rest = DirectRest(configuration, timeout=settings["timeout"])
    limiter = TokenBucket(settings["qps"], settings["burst"])
    state: dict[str, Any] = {"headers": {}, "until": 0.0 if settings["fenced"] else float("inf")}
    work: queue.SimpleQueue[list | None] = queue.SimpleQueue()
    answers = threading.Lock()

    def send(key: int, namespace: str, name: str, uid: str | None, node: str) -> list:
        path = binding_path(namespace, name)
        body = json.dumps(binding(namespace, name, uid, node), separators=(",", ":")).encode()
        for attempt in range(RETRY_AFTER_TRIES + 1):
            limiter.acquire()
            if time.monotonic() >= state["until"]:  # after the token's wait: asked last
                return [key, -1]
            response = rest.request("POST", configuration.host + path, state["headers"], body)
            if 200 <= response.status < 300:
                return [key, response.status]
            wait = retry_after(response.status, response.getheader("Retry-After"))
            if wait is None or attempt == RETRY_AFTER_TRIES:
                text = response.data.decode(errors="replace")
                return [key, response.status, response.reason, text]
            time.sleep(wait)
        raise AssertionError("unreachable")  # pragma: no cover

    def worker() -> None:
        while (item := work.get()) is not None:
            try:
                answer = send(*item)
            except Exception as exc:
                answer = [item[0], 0, "", "", f"{type(exc).__name__}: {exc}"]
            data = _line(answer)
            with answers:
                sink.write(data)
                sink.flush()

    threads = [threading.Thread(target=worker, daemon=True) for _ in range(settings["workers"])]
    for thread in threads:
        thread.start()
    for raw in source:
        message = json.loads(raw)
        if isinstance(message, list):
            work.put(message)
        elif "fence" in message:
            state["until"] = float(message["fence"])
        elif "headers" in message:
            state["headers"] = message["headers"]
    for _ in threads:
        work.put(None)
    for thread in threads:
        thread.join()
    rest.close()


if __name__ == "__main__":
    main()
