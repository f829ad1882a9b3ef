"""Mutating admission: AdmissionReview v1 out, JSONPatch back, failure policy and timeout."""

from __future__ import annotations

import base64
import contextlib
import json
import threading
import time
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from kubernetes.client.exceptions import ApiException

from simcluster.api import Webhook
from tests.builders import body, pod
from tests.simcluster.api.conftest import Sim, start_sim

GATE = "scheduling.volcano.sh/queue-allocation-gate"
Reply = Callable[[dict], dict]


@pytest.fixture
def webhook_server() -> Iterator[tuple[str, list[dict], list[Reply]]]:
    """A webhook that records reviews and answers with ``replies[0]``."""
    reviews: list[dict] = []
    replies: list[Reply] = []

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            review = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            reviews.append(review)
            body = json.dumps(replies[0](review)).encode()
            # The timeout test's client gives up before the answer, as it should.
            with contextlib.suppress(BrokenPipeError, ConnectionResetError):
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

        def log_message(self, *args: object) -> None:
            pass

    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=httpd.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}/mutate", reviews, replies
    httpd.shutdown()
    httpd.server_close()


def add_gate(review: dict) -> dict:
    patch = [{"op": "add", "path": "/spec/schedulingGates", "value": [{"name": GATE}]}]
    response = {
        "uid": review["request"]["uid"],
        "allowed": True,
        "patchType": "JSONPatch",
        "patch": base64.b64encode(json.dumps(patch).encode()).decode(),
    }
    return {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "response": response}


def deny(review: dict) -> dict:
    response = {
        "uid": review["request"]["uid"],
        "allowed": False,
        "status": {"code": 403, "message": "queue research is closed"},
    }
    return {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "response": response}


def running(webhook: Webhook) -> Sim:
    return start_sim(webhook=webhook)


def test_pod_create_sends_an_admission_review_and_applies_its_json_patch(webhook_server):
    url, reviews, replies = webhook_server
    replies.append(add_gate)
    sim = running(Webhook(url))
    try:
        created = sim.core.create_namespaced_pod("default", body(pod("web-1")))
    finally:
        sim.server.stop()
    request = reviews[0]["request"]
    assert (
        reviews[0]["apiVersion"] == "admission.k8s.io/v1"
        and reviews[0]["kind"] == "AdmissionReview"
    )
    assert request["operation"] == "CREATE" and request["namespace"] == "default"
    assert request["kind"] == {"group": "", "version": "v1", "kind": "Pod"}
    assert request["resource"] == {"group": "", "version": "v1", "resource": "pods"}
    assert request["object"]["metadata"]["name"] == "web-1" and request["dryRun"] is False
    assert request["uid"] and request["userInfo"]["username"]
    assert [g.name for g in created.spec.scheduling_gates] == [GATE]
    assert (
        next(c for c in created.status.conditions if c.type == "PodScheduled").reason
        == "SchedulingGated"
    )


def test_a_denial_rejects_the_pod_with_the_webhooks_message(webhook_server):
    url, _, replies = webhook_server
    replies.append(deny)
    sim = running(Webhook(url))
    try:
        with pytest.raises(ApiException) as caught:
            sim.core.create_namespaced_pod("default", body(pod("web-1")))
        assert sim.store.list("pods")[0] == []
    finally:
        sim.server.stop()
    assert caught.value.status == 403
    assert (
        "denied the request: queue research is closed" in json.loads(caught.value.body)["message"]
    )


def test_gates_added_by_the_webhook_to_a_bound_pod_are_rejected(webhook_server):
    url, _, replies = webhook_server
    replies.append(add_gate)
    sim = running(Webhook(url))
    try:
        with pytest.raises(ApiException) as caught:
            sim.core.create_namespaced_pod("default", body(pod("web-1", node_name="node-1")))
    finally:
        sim.server.stop()
    assert caught.value.status == 422


@pytest.mark.parametrize(("policy", "created"), [("Fail", False), ("Ignore", True)])
def test_an_unreachable_webhook_follows_the_failure_policy(free_port, policy, created):
    sim = running(
        Webhook(f"http://127.0.0.1:{free_port}/mutate", failure_policy=policy, timeout_seconds=1)
    )
    try:
        if created:
            sim.core.create_namespaced_pod("default", body(pod("web-1")))
        else:
            with pytest.raises(ApiException) as caught:
                sim.core.create_namespaced_pod("default", body(pod("web-1")))
            assert caught.value.status == 500
            assert "failed calling webhook" in json.loads(caught.value.body)["message"]
        assert len(sim.store.list("pods")[0]) == int(created)
    finally:
        sim.server.stop()


def test_a_slow_webhook_times_out(webhook_server):
    url, _, replies = webhook_server
    replies.append(lambda review: (time.sleep(1.5), add_gate(review))[1])
    sim = running(Webhook(url, timeout_seconds=0.3))
    try:
        started = time.monotonic()
        with pytest.raises(ApiException) as caught:
            sim.core.create_namespaced_pod("default", body(pod("web-1")))
        assert time.monotonic() - started < 1.4
    finally:
        sim.server.stop()
    assert caught.value.status == 500


def test_a_response_for_another_request_uid_is_refused(webhook_server):
    url, _, replies = webhook_server
    replies.append(lambda review: add_gate({"request": {"uid": "someone-else"}}))
    sim = running(Webhook(url))
    try:
        with pytest.raises(ApiException) as caught:
            sim.core.create_namespaced_pod("default", body(pod("web-1")))
    finally:
        sim.server.stop()
    assert caught.value.status == 500


def test_in_process_create_goes_through_admission(webhook_server):
    url, _, replies = webhook_server
    replies.append(add_gate)
    sim = running(Webhook(url))
    try:
        created = sim.cluster.create_object("pods", body(pod("web-1")), "default")
    finally:
        sim.server.stop()
    assert created["spec"]["schedulingGates"] == [{"name": GATE}]
