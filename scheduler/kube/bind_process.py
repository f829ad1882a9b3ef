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
  ``leading()`` before handing a bind over (refused: :class:`~scheduler.kube.fencing.NotLeader`,
  counted), and tells the child with each bind, and every ``FENCE_POLL_S`` while it holds
  binds, until when it may send: ``FENCE_GRACE_S`` past the last time ``leading()`` said yes. The child refuses what it
  still holds once that time passes; a bind so refused while ``leading()`` still says yes (the
  scheduler's interpreter was busy, not the Lease lost) is handed over again. So a bind may
  leave at most ``FENCE_GRACE_S`` after the Lease was lost, well inside the gap client-go's
  leader election keeps between a leader's renew deadline (10 s) and the lease's duration
  (15 s), after which another scheduler may lead;
* a child that dies fails the binds it held (each pod is left to the next cycle, as any failed
  bind); the next bind starts another child. One that holds binds and says nothing for
  ``SILENCE_S`` (stopped, wedged: it says it is alive every ``HEARTBEAT_S``) is killed, so no
  cycle waits on it for ever; what is written to it goes through a thread of its own, so a
  child that stopped reading holds up nothing else;
* stopping waits up to ``CLOSE_TIMEOUT_S`` for the child to send what it holds.

Both processes compare ``time.monotonic()``: CLOCK_MONOTONIC is one clock for the whole machine
on Linux.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import queue
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from typing import Any

from scheduler.kube.client import api_error
from scheduler.kube.fencing import NotLeader

log = logging.getLogger(__name__)

FENCE_POLL_S = 0.1  # how often the scheduler tells a child holding binds how long it may send
FENCE_GRACE_S = 0.5  # how long past the last "leading" a bind may still leave
MAX_FAILED_STARTS = 3  # children in a row that answered nothing: bind in-process instead
MAX_RETURNED = 20  # times a bind refused by a lapsed window is sent again while still leading
HEARTBEAT_S = 0.5  # the child says it is alive this often
SILENCE_S = 2.0  # a child holding binds and silent this long is killed (stopped, wedged)
CLOSE_TIMEOUT_S = 30.0  # how long stopping waits for the child to send what it holds
TLS_SETTINGS = ("host", "tls_server_name", "verify_ssl", "ssl_ca_cert", "ca_cert_data",
                "assert_hostname", "cert_file", "key_file")  # fmt: skip

Done = Callable[[Exception | None], None]


class BindProcessGone(OSError):
    """The bind process ended before it answered for this bind."""


class BindSendError(OSError):
    """The bind process could not send the request or read its answer (connection refused,
    reset, timed out, an answer that is not HTTP/1.1): the same failure as in this process."""


class _Child:
    """One child process: what is written to it goes through its own writer thread (a child
    that stopped reading blocks that thread only, never the cycle nor a lock), and when it was
    last heard from (an answer or its heartbeat)."""

    def __init__(self, process: subprocess.Popen[bytes]) -> None:
        self.process = process
        self.outbox: queue.SimpleQueue[bytes | None] = queue.SimpleQueue()
        self.heard = time.monotonic()
        self.answered = False
        self.sent_headers: dict[str, str] | None = None
        self.fence_sent = 0.0  # when a fence line was last queued for it (time.monotonic)
        self.held = 0  # binds handed over and not answered

    def send(self, data: bytes | None) -> None:
        """Queue ``data`` for the child's input; None: close its input after what is queued."""
        self.outbox.put(data)

    def write(self) -> None:
        """The writer thread: what is queued, in order, in as few writes as it takes."""
        stdin = self.process.stdin
        assert stdin is not None
        with contextlib.suppress(OSError, ValueError):  # the child is gone: its reader says so
            while True:
                chunks = [self.outbox.get()]
                with contextlib.suppress(queue.Empty):
                    while chunks[-1] is not None:
                        chunks.append(self.outbox.get_nowait())
                stdin.write(b"".join(c for c in chunks if c is not None))
                stdin.flush()
                if chunks[-1] is None:
                    break
        with contextlib.suppress(OSError, ValueError):
            stdin.close()


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
        silence_s: float = SILENCE_S,
        close_timeout: float = CLOSE_TIMEOUT_S,
    ) -> None:
        self._settings = {
            "tls": {name: getattr(configuration, name, None) for name in TLS_SETTINGS},
            "workers": workers, "qps": qps, "burst": burst, "timeout": timeout,
            "fenced": leading is not None, "heartbeat": HEARTBEAT_S,
        }  # fmt: skip
        self._command = command or [sys.executable, "-m", "scheduler.kube.bind_process"]
        self._headers = headers
        self._leading = leading
        self._refused = refused if refused is not None else [0]
        self._silence_s = silence_s
        self._close_timeout = close_timeout
        self._lock = threading.Lock()
        self._child: _Child | None = None
        # Binds handed over and not answered yet: what, done, the child that holds it, the bind
        # itself and how many times a lapsed fence window sent it back.
        self._pending: dict[int, tuple[str, Done, _Child, tuple, int]] = {}
        self._next = 0
        self._closed = False
        self._stop = threading.Event()
        self.started = 0  # children started
        self.failed_starts = 0  # children in a row that ended without answering anything
        self.silenced = 0  # children killed for holding binds while saying nothing

    # -- the child's life ---------------------------------------------------------------------

    def start(self) -> BindProcess:
        with self._lock:
            self._spawn()
        threading.Thread(target=self._keep, name="bind-keeper", daemon=True).start()
        return self

    def _spawn(self) -> _Child:
        """Start a child (the lock held)."""
        process = subprocess.Popen(
            self._command, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
            env={**os.environ, "PYTHONPATH": os.pathsep.join(p for p in sys.path if p)},
        )  # fmt: skip
        child = self._child = _Child(process)
        self.started += 1
        child.send(_line(self._settings))
        if self._leading is not None:
            child.send(_line({"fence": self._fence_until()}))
            child.fence_sent = time.monotonic()
        threading.Thread(target=child.write, name="bind-requests", daemon=True).start()
        threading.Thread(target=self._read, args=(child,), name="bind-answers",
                         daemon=True).start()  # fmt: skip
        return child

    @property
    def pid(self) -> int | None:
        child = self._child
        return child.process.pid if child is not None else None

    @property
    def usable(self) -> bool:
        """False once ``MAX_FAILED_STARTS`` children in a row ended without answering (a
        Python that cannot run the module...): the binds are then sent in the scheduler's
        own process, as without a bind process."""
        return self.failed_starts < MAX_FAILED_STARTS and not self._closed

    def close(self) -> None:
        """The child sends what it holds (each bind within its request timeout), then ends; one
        still busy after ``close_timeout`` is killed, and the binds it held fail."""
        self._stop.set()
        with self._lock:
            self._closed = True
            child, self._child = self._child, None
        if child is None:
            return
        child.send(None)
        try:
            child.process.wait(self._close_timeout)
        except subprocess.TimeoutExpired:
            log.error("bind process still busy %g s after the scheduler stopped: killed",
                      self._close_timeout)  # fmt: skip
            child.process.kill()
            child.process.wait()

    # -- binds -------------------------------------------------------------------------------

    def submit(
        self, namespace: str, name: str, uid: str | None, node_name: str, done: Done
    ) -> bool:
        """Bind pod ``namespace/name`` (of ``uid``) to ``node_name`` from the child; False
        (nothing done, ``done`` not called) when the bind process is not :attr:`usable`."""
        return self._hand_over((namespace, name, uid, node_name), done, 0)

    def _hand_over(self, bind: tuple, done: Done, returned: int) -> bool:
        namespace, name, _, node_name = bind
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
            child = self._child
            if child is None:
                log.warning("the bind process ended; starting another", extra={"object": what})
                child = self._spawn()
            self._next += 1
            key = self._next
            self._pending[key] = (what, done, child, bind, returned)
            child.held += 1
            data = b""
            if headers != child.sent_headers:
                data = _line({"headers": headers})
                child.sent_headers = headers
            if self._leading is not None:
                # leading() just said yes: the child's window starts from here, whatever the
                # keeper thread last managed to tell it (a busy interpreter delays it).
                now = time.monotonic()
                if now - child.fence_sent > FENCE_POLL_S / 2:
                    data += _line({"fence": now + FENCE_GRACE_S})
                    child.fence_sent = now
            child.send(data + _line([key, *bind]))
        return True

    def _read(self, child: _Child) -> None:
        stdout = child.process.stdout
        assert stdout is not None
        for raw in stdout:
            child.heard = time.monotonic()
            try:
                answer = json.loads(raw)
                key, status = int(answer[0]), int(answer[1]) if len(answer) > 1 else 0
            except (ValueError, TypeError, IndexError, KeyError):
                log.error("bind process: not an answer: %r", raw[:200])
                continue
            if key == 0:
                continue  # its heartbeat
            with self._lock:
                entry = self._pending.pop(key, None)
                child.answered = True
                if entry is not None:
                    child.held -= 1
            if entry is None:
                continue
            what, done, _, bind, returned = entry
            # Refused by a window that lapsed while this process was busy, not by the Lease:
            # sent again, with a window that starts now.
            if (
                status == -1
                and returned < MAX_RETURNED
                and self._still_leading()
                and self._hand_over(bind, done, returned + 1)
            ):
                continue
            if status == -1:
                self._refused[0] += 1
            try:
                done(_error(what, status, answer))
            except Exception:  # one bind's bookkeeping must not stop the answers of the others
                log.exception("bind process: handling the answer for %s failed", what)
        code = child.process.wait()
        child.send(None)  # its writer ends too
        with self._lock:
            if self._child is child:
                self._child = None
                self.failed_starts = 0 if child.answered else self.failed_starts + 1
            held = [k for k, entry in self._pending.items() if entry[2] is child]
            lost = [self._pending.pop(k) for k in held]
        if lost or not self._stop.is_set():
            log.error("bind process exited (code %s) holding %d binds", code, len(lost))
        for what, done, *_ in lost:
            with contextlib.suppress(Exception):
                done(BindProcessGone(f"{what}: the bind process exited (code {code}) "
                                     "before answering"))  # fmt: skip

    def _still_leading(self) -> bool:
        return self._leading is not None and self._leading()

    def _fence_until(self) -> float:
        return time.monotonic() + FENCE_GRACE_S if self._still_leading() else 0.0

    def _keep(self) -> None:
        """Every ``FENCE_POLL_S`` (fenced) or ``HEARTBEAT_S``, while the child holds binds: tell
        it how long it may still send (an idle child needs no window: each bind brings one,
        and a scheduler that is mostly idle between cycles is not woken for nothing); kill it
        if it has said nothing for ``silence_s`` (stopped, wedged): its reader then fails what
        it held, and the next bind starts another."""
        tick = FENCE_POLL_S if self._leading is not None else HEARTBEAT_S
        while not self._stop.wait(tick):
            with self._lock:
                child = self._child
                if child is None or child.held == 0:
                    continue
            until = self._fence_until() if self._leading is not None else None
            with self._lock:
                if until is not None:
                    child.send(_line({"fence": until}))
                    child.fence_sent = time.monotonic()
                silent = child.held > 0 and time.monotonic() - child.heard > self._silence_s
            if silent:
                self.silenced += 1
                log.error("bind process silent for %g s holding %d binds: killed",
                          self._silence_s, child.held)  # fmt: skip
                with contextlib.suppress(OSError):
                    child.process.kill()


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
    answer line ``[id, status, reason, body, error]`` per bind on standard output (status -1:
    refused by the fence; 0: not sent or not answered, ``error`` says why), and ``[0]`` every
    ``heartbeat`` seconds. Ends once its input ends and what it holds is answered."""
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

    def answer(data: bytes) -> None:
        with answers:
            sink.write(data)
            sink.flush()

    def worker() -> None:
        while (item := work.get()) is not None:
            try:
                result = send(*item)
            except Exception as exc:  # what the same request in the scheduler's process raised
                result = [item[0], 0, "", "", str(exc) or type(exc).__name__]
            answer(_line(result))

    def heartbeat() -> None:  # the scheduler kills a child that holds binds and says nothing
        with contextlib.suppress(OSError, ValueError):
            while True:
                time.sleep(settings["heartbeat"])
                answer(b"[0]\n")

    threads = [threading.Thread(target=worker, daemon=True) for _ in range(settings["workers"])]
    for thread in threads:
        thread.start()
    threading.Thread(target=heartbeat, daemon=True).start()
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
