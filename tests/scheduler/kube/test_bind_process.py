"""Binds sent from a process of their own (scheduler.kube.bind_process): the same TLS,
credentials, retries and errors as a bind sent in the scheduler's process; a child that dies
fails what it held and another takes over; one that cannot run leaves the binds to the
scheduler's process."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import threading
import time
from concurrent.futures import Future

import pytest
from kubernetes import client

from scheduler.kube.bind_process import (
    MAX_FAILED_STARTS,
    BindProcess,
    BindProcessGone,
    BindSendError,
)
from scheduler.kube.client import RETRY_AFTER_TRIES, ApiError, Conflict, KubeClusterClient
from scheduler.kube.config import api_client_from_kubeconfig
from scheduler.kube.fencing import NotLeader
from tests.conftest import wait_until
from tests.scheduler.kube.test_transport import kubeconfig, make_pods, node_of, plain_cluster


def with_binder(cluster: KubeClusterClient, **kw) -> BindProcess:  # noqa: ANN003
    options = {"workers": 2, "qps": 1000.0, "burst": 1000, "timeout": 10.0, **kw}
    cluster.binder = BindProcess(cluster.api.configuration, headers=cluster.post_headers,
                                 **options).start()  # fmt: skip
    return cluster.binder


def bind(cluster: KubeClusterClient, name: str, timeout: float = 20.0) -> Exception | None:
    """One bind through the bind process; what its answer meant (None: bound)."""
    answered: Future[Exception | None] = Future()
    pod = {"metadata": {"namespace": "default", "name": name}}
    assert cluster.bind_async(pod, "n1", answered.set_result)
    return answered.result(timeout)


def test_binds_leave_from_the_child_with_the_kubeconfigs_certificate_and_token_over_tls(
    sim, tls_front, cluster_ca, scheduler_identity, tmp_path
):
    path = kubeconfig(tmp_path, f"https://127.0.0.1:{tls_front.port}", cluster_ca,
                      scheduler_identity, "s3cret")  # fmt: skip
    cluster = KubeClusterClient(api_client_from_kubeconfig(path))
    binder = with_binder(cluster)
    make_pods(sim, "a", "b", "c")
    try:
        assert [bind(cluster, name) for name in ("a", "b", "c")] == [None, None, None]
    finally:
        cluster.close()
    assert [node_of(sim, n) for n in ("a", "b", "c")] == ["n1", "n1", "n1"]
    binds = [s for s in tls_front.seen if s.path.endswith("/binding")]
    assert {(s.authorization, s.client_name) for s in binds} == {
        ("Bearer s3cret", "system:kube-scheduler")
    }
    # Nothing was sent from this process: its own bind connections were never opened.
    assert cluster.direct.connections_opened == 0
    assert binder.started == 1


def test_a_new_token_goes_with_the_next_bind(sim, plain_front):
    cluster = plain_cluster(plain_front)
    cluster.api.configuration.api_key = {"authorization": "Bearer one"}
    with_binder(cluster)
    make_pods(sim, "a", "b")
    try:
        assert bind(cluster, "a") is None
        cluster.api.configuration.api_key = {"authorization": "Bearer two"}  # refreshed
        assert bind(cluster, "b") is None
    finally:
        cluster.close()
    seen = [s.authorization for s in plain_front.seen if s.path.endswith("/binding")]
    assert seen == ["Bearer one", "Bearer two"]


def test_retry_after_is_honoured_and_refusals_read_as_they_do_in_process(sim, plain_front):
    make_pods(sim, "a", "b", "c", "d")
    plain_front.answers = {
        "a": [(429, {"Retry-After": "0"}), (503, {"Retry-After": "0"})],
        "b": [(429, {"Retry-After": "0"})] * (RETRY_AFTER_TRIES + 1),
        "c": [(409, {})],
        "d": [(409, {})],
    }
    cluster = plain_cluster(plain_front)
    with_binder(cluster)
    try:
        assert bind(cluster, "a") is None
        too_many = bind(cluster, "b")
        conflict = bind(cluster, "c")
    finally:
        cluster.close()
    assert isinstance(too_many, ApiError) and too_many.status == 429
    assert len([s for s in plain_front.seen if "/b/" in s.path]) == RETRY_AFTER_TRIES + 1
    assert isinstance(conflict, Conflict)
    with pytest.raises(Conflict) as in_process:  # the same refusal, sent from this process
        plain_cluster(plain_front).bind({"metadata": {"namespace": "default", "name": "d"}}, "n1")
    assert str(conflict) == str(in_process.value).replace("default/d", "default/c")
    assert len([s for s in plain_front.seen if "/c/" in s.path]) == 1  # a 409 is not sent again
    assert (node_of(sim, "a"), node_of(sim, "b"), node_of(sim, "c")) == ("n1", None, None)


def test_a_server_that_cannot_be_reached_fails_the_bind_with_why():
    with socket.socket() as spare:
        spare.bind(("127.0.0.1", 0))
        port = spare.getsockname()[1]  # closed again: nothing listens there
    cluster = KubeClusterClient(
        client.ApiClient(client.Configuration(host=f"http://127.0.0.1:{port}"))
    )
    with_binder(cluster)
    try:
        failed = bind(cluster, "a")
    finally:
        cluster.close()
    assert isinstance(failed, BindSendError) and isinstance(failed, OSError)
    assert "pod default/a: [Errno 111] Connection refused" in str(failed)


def test_a_killed_child_fails_what_it_held_and_the_next_bind_starts_another(sim, plain_front):
    make_pods(sim, "a", "b", "c", "d")
    release = threading.Event()
    arrived = threading.Event()

    class Hold:  # the simulated API server's fault hook: holds every Binding until released
        def serve(self, method, path, query, answer, body=b""):
            if path.endswith("/binding"):
                arrived.set()
                release.wait(10)
            return answer()

    sim.server.faults = Hold()
    cluster = plain_cluster(plain_front)
    binder = with_binder(cluster, workers=1)
    answers: list[Future[Exception | None]] = [Future() for _ in range(3)]
    try:
        for name, answered in zip("abc", answers, strict=True):
            assert cluster.bind_async({"metadata": {"namespace": "default", "name": name}}, "n1",
                                      answered.set_result)  # fmt: skip
        assert arrived.wait(10)
        os.kill(binder.pid, signal.SIGKILL)
        outcomes = [a.result(10) for a in answers]
        release.set()
        assert all(isinstance(o, BindProcessGone) for o in outcomes), outcomes
        assert "the bind process exited (code -9) before answering" in str(outcomes[2])
        sim.server.faults = None
        assert bind(cluster, "d") is None
    finally:
        release.set()
        cluster.close()
    assert binder.started == 2
    assert node_of(sim, "d") == "n1"


def test_a_child_that_cannot_run_leaves_the_binds_to_this_process(sim, plain_front):
    make_pods(sim, "a", "b")
    cluster = plain_cluster(plain_front)
    binder = with_binder(cluster, command=[sys.executable, "-c", "import sys; sys.exit(3)"])
    outcomes = []
    try:
        for _ in range(MAX_FAILED_STARTS + 2):
            answered: Future[Exception | None] = Future()
            pod = {"metadata": {"namespace": "default", "name": "a"}}
            if not cluster.bind_async(pod, "n1", answered.set_result):
                break
            outcomes.append(answered.result(10))
            time.sleep(0.05)  # the reader saw the child end
        assert not binder.usable
        assert cluster.bind_async({"metadata": {"namespace": "default", "name": "b"}}, "n1",
                                  lambda exc: None) is False  # fmt: skip
    finally:
        cluster.close()
    assert outcomes and all(isinstance(o, BindProcessGone) for o in outcomes)
    assert binder.started == MAX_FAILED_STARTS


ECHO = """
import json, sys
sys.stdin.readline()  # the settings
for line in sys.stdin:
    message = json.loads(line)
    if isinstance(message, list):
        sys.stdout.write("not json\\n" + json.dumps([message[0], 201]) + "\\n")
        sys.stdout.flush()
"""


def test_a_line_that_is_no_answer_or_a_failing_callback_does_not_stop_the_answers():
    configuration = client.Configuration(host="http://127.0.0.1:9")
    binder = BindProcess(configuration, workers=1, qps=10.0, burst=10, headers=dict,
                         timeout=5.0, command=[sys.executable, "-c", ECHO]).start()  # fmt: skip
    second: Future[Exception | None] = Future()

    def explode(exc: Exception | None) -> None:
        raise RuntimeError("the cache's bookkeeping failed")

    try:
        assert binder.submit("default", "a", None, "n1", explode)
        assert binder.submit("default", "b", None, "n1", second.set_result)
        assert second.result(10) is None
    finally:
        binder.close()


def test_nothing_is_handed_over_when_not_leading_and_it_is_counted():
    refused = [0]
    configuration = client.Configuration(host="http://127.0.0.1:9")
    binder = BindProcess(configuration, workers=1, qps=10.0, burst=10, headers=dict, timeout=5.0,
                         leading=lambda: False, refused=refused).start()  # fmt: skip
    answered: Future[Exception | None] = Future()
    try:
        assert binder.submit("default", "a", None, "n1", answered.set_result)
        assert isinstance(answered.result(1), NotLeader)
    finally:
        binder.close()
    assert refused == [1]


ORPHAN = """
import time
from kubernetes import client
from scheduler.kube.bind_process import BindProcess
binder = BindProcess(client.Configuration(host="http://127.0.0.1:9"), workers=2, qps=10.0,
                     burst=10, headers=dict, timeout=5.0).start()
print(binder.pid, flush=True)
time.sleep(60)
"""


def _ended(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().rsplit(")", 1)[1].split()[0] == "Z"  # exited, not yet reaped
    except FileNotFoundError:
        return True


def test_the_child_ends_when_the_scheduler_is_killed():
    """A scheduler worker killed with SIGKILL (supervisord starts another) leaves no bind
    process behind: the child's input ends with its parent, and so does the child."""
    parent = subprocess.Popen([sys.executable, "-c", ORPHAN], stdout=subprocess.PIPE, text=True)
    assert parent.stdout is not None
    child = int(parent.stdout.readline())
    try:
        assert not _ended(child)
        parent.kill()
        parent.wait(10)
        wait_until(lambda: _ended(child), timeout=10)
    finally:
        if not _ended(child):
            os.kill(child, signal.SIGKILL)
