"""MutatingWebhookConfigurations in the simulated cluster: stored with kube-apiserver's defaults
and refusals, patched as the certificate Job patches them, and read at every pod CREATE to call
the webhooks whose rules and selectors match, over HTTPS with each one's own caBundle."""

from __future__ import annotations

import base64
import copy
import json
import ssl
import tempfile
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from kubernetes import client
from kubernetes.client.rest import ApiException

from dashboard.management.commands.simcluster import Command
from dashboard.webhook_certificate import WebhookCertificates, generate, service_dns_names
from simcluster.api import Webhook
from simcluster.api.app import SimClusterOptions, build, parse_webhook_services, start_journal
from tests.builders import body, namespace, pod
from tests.simcluster.api.conftest import Sim, start_sim
from tests.simcluster.api.helpers import http

PATH = "/apis/admissionregistration.k8s.io/v1/mutatingwebhookconfigurations"
LABEL = "team.example.com/gated"


def hook(name: str = "gate.pods.example.com", **fields: object) -> dict:
    entry = {
        "name": name,
        "admissionReviewVersions": ["v1"],
        "sideEffects": "None",
        "clientConfig": {"service": {"name": "hook", "namespace": "hooks", "path": "/mutate"}},
        "rules": [
            {"operations": ["CREATE"], "apiGroups": [""], "apiVersions": ["v1"],
             "resources": ["pods"]}
        ],
    }  # fmt: skip
    entry.update(fields)
    return entry


def configuration(name: str, *hooks: dict) -> dict:
    return {
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "MutatingWebhookConfiguration",
        "metadata": {"name": name},
        "webhooks": list(hooks) or [hook()],
    }


# -- storage, defaults, validation ---------------------------------------------------------


def test_defaults_are_stored_as_kube_apiserver_stores_them(sim: Sim) -> None:
    status, created = http(sim.server.url, "POST", PATH, configuration("gate"))
    assert status == 201, created
    (stored,) = created["webhooks"]
    assert stored["failurePolicy"] == "Fail"
    assert stored["matchPolicy"] == "Equivalent"
    assert stored["timeoutSeconds"] == 10
    assert stored["reinvocationPolicy"] == "Never"
    assert stored["namespaceSelector"] == {} and stored["objectSelector"] == {}
    assert stored["rules"][0]["scope"] == "*"
    assert stored["clientConfig"]["service"]["port"] == 443
    api = client.AdmissionregistrationV1Api(sim.api_client)
    read = api.read_mutating_webhook_configuration("gate")
    assert read.webhooks[0].client_config.service.name == "hook"
    assert [c.metadata.name for c in api.list_mutating_webhook_configuration().items] == ["gate"]


@pytest.mark.parametrize(
    ("change", "field", "message"),
    [
        ({"name": "gate"}, "webhooks[0].name",
         "should be a domain with at least three segments separated by dots"),
        ({"name": ""}, "webhooks[0].name", "Required value"),
        ({"sideEffects": None}, "webhooks[0].sideEffects",
         "Required value: must specify one of None, NoneOnDryRun"),
        ({"sideEffects": "Some"}, "webhooks[0].sideEffects",
         'Unsupported value: "Some": supported values: "None", "NoneOnDryRun"'),
        ({"admissionReviewVersions": []}, "webhooks[0].admissionReviewVersions",
         "Required value: must specify one of v1, v1beta1"),
        ({"admissionReviewVersions": ["v2"]}, "webhooks[0].admissionReviewVersions",
         'Invalid value: []string{"v2"}: must include at least one of v1, v1beta1'),
        ({"failurePolicy": "Sometimes"}, "webhooks[0].failurePolicy",
         'Unsupported value: "Sometimes": supported values: "Fail", "Ignore"'),
        ({"matchPolicy": "Loose"}, "webhooks[0].matchPolicy",
         'Unsupported value: "Loose": supported values: "Equivalent", "Exact"'),
        ({"timeoutSeconds": 31}, "webhooks[0].timeoutSeconds",
         "Invalid value: 31: the timeout value must be between 1 and 30 seconds"),
        ({"timeoutSeconds": 0}, "webhooks[0].timeoutSeconds", "between 1 and 30 seconds"),
        ({"clientConfig": {}}, "webhooks[0].clientConfig",
         "Required value: exactly one of url or service is required"),
        ({"clientConfig": {"url": "https://h/x",
                           "service": {"name": "s", "namespace": "n"}}},
         "webhooks[0].clientConfig", "exactly one of url or service is required"),
        ({"clientConfig": {"url": "http://hook.example.com/mutate"}},
         "webhooks[0].clientConfig.url", "'https' is the only allowed URL scheme"),
        ({"clientConfig": {"url": "https://hook.example.com/mutate?x=1"}},
         "webhooks[0].clientConfig.url", "query parameters are not permitted in the URL"),
        ({"clientConfig": {"service": {"name": "s", "namespace": "n", "port": 70000}}},
         "webhooks[0].clientConfig.service.port", "port is not valid"),
        ({"clientConfig": {"service": {"namespace": "n"}}},
         "webhooks[0].clientConfig.service.name", "service name is required"),
        ({"clientConfig": {"service": {"name": "s", "namespace": "n", "path": "mutate"}}},
         "webhooks[0].clientConfig.service.path", "must start with a '/'"),
        ({"rules": [{"operations": ["CREATE", "*"], "apiGroups": [""], "apiVersions": ["v1"],
                     "resources": ["pods"]}]},
         "webhooks[0].rules[0].operations", "if '*' is present, must not specify other"),
        ({"rules": [{"operations": ["PATCH"], "apiGroups": [""], "apiVersions": ["v1"],
                     "resources": ["pods"]}]},
         "webhooks[0].rules[0].operations[0]", 'Unsupported value: "PATCH"'),
        ({"rules": [{"operations": ["CREATE"], "apiGroups": [""], "apiVersions": ["v1"],
                     "resources": []}]},
         "webhooks[0].rules[0].resources", "Required value"),
        ({"rules": [{"operations": ["CREATE"], "apiGroups": [""], "apiVersions": ["v1"],
                     "resources": ["pods"], "scope": "Everywhere"}]},
         "webhooks[0].rules[0].scope", 'Unsupported value: "Everywhere"'),
        ({"namespaceSelector": {"matchExpressions": [{"key": LABEL, "operator": "In"}]}},
         "webhooks[0].namespaceSelector.matchExpressions[0].values",
         "must be specified when `operator` is 'In' or 'NotIn'"),
        ({"objectSelector": {"matchExpressions": [{"key": LABEL, "operator": "Is"}]}},
         "webhooks[0].objectSelector.matchExpressions[0].operator",
         "not a valid selector operator"),
        ({"objectSelector": {"matchExpressions": [{"key": LABEL, "operator": "Exists",
                                                   "values": ["x"]}]}},
         "webhooks[0].objectSelector.matchExpressions[0].values", "may not be specified"),
        ({"reinvocationPolicy": "Always"}, "webhooks[0].reinvocationPolicy",
         'Unsupported value: "Always"'),
        ({"matchConditions": [{"name": "c", "expression": "true"}]},
         "webhooks[0].matchConditions", "does not evaluate CEL"),
    ],
)  # fmt: skip
def test_what_kube_apiserver_refuses_is_422_naming_the_field(
    sim: Sim, change: dict, field: str, message: str
) -> None:
    entry = hook()
    for key, value in change.items():
        if value is None:
            entry.pop(key)
        else:
            entry[key] = value
    status, answer = http(sim.server.url, "POST", PATH, configuration("bad", entry))
    assert status == 422, answer
    causes = {c["field"]: c["message"] for c in answer["details"]["causes"]}
    assert field in causes, causes
    assert message in causes[field]
    assert answer["message"].startswith(
        'MutatingWebhookConfiguration.admissionregistration.k8s.io "bad" is invalid: '
    )
    assert sim.store.list("mutatingwebhookconfigurations")[0] == []


def test_duplicate_webhook_names_and_a_bad_update_are_refused(sim: Sim) -> None:
    status, answer = http(sim.server.url, "POST", PATH, configuration("dup", hook(), hook()))
    assert status == 422
    assert answer["details"]["causes"][0]["field"] == "webhooks[1].name"
    assert "Duplicate value" in answer["details"]["causes"][0]["message"]
    http(sim.server.url, "POST", PATH, configuration("gate"))
    with pytest.raises(ApiException) as refused:
        client.AdmissionregistrationV1Api(sim.api_client).patch_mutating_webhook_configuration(
            "gate", [{"op": "replace", "path": "/webhooks/0/timeoutSeconds", "value": 60}]
        )
    assert refused.value.status == 422
    assert "webhooks[0].timeoutSeconds" in refused.value.body


def test_json_patch_writes_the_ca_bundle_as_the_certificate_job_does(sim: Sim) -> None:
    http(sim.server.url, "POST", PATH, configuration("gate", hook("a.gate.example.com"),
                                                     hook("b.gate.example.com")))  # fmt: skip
    bundle = base64.b64encode(b"-----BEGIN CERTIFICATE-----\n").decode()
    patch = [
        {"op": "test", "path": "/webhooks/1/name", "value": "b.gate.example.com"},
        {"op": "add", "path": "/webhooks/1/clientConfig/caBundle", "value": bundle},
    ]
    status, patched = http(
        sim.server.url, "PATCH", f"{PATH}/gate", patch, content_type="application/json-patch+json"
    )
    assert status == 200, patched
    assert patched["webhooks"][1]["clientConfig"]["caBundle"] == bundle
    assert "caBundle" not in patched["webhooks"][0]["clientConfig"]
    # The test of a name that is not there any more refuses the whole patch.
    patch[0]["value"] = "c.gate.example.com"
    status, answer = http(
        sim.server.url, "PATCH", f"{PATH}/gate", patch, content_type="application/json-patch+json"
    )
    assert status == 422, answer
    # caBundle is a []byte: not base64 is the decoder's 400, naming the field in details.
    bad = [{"op": "add", "path": "/webhooks/0/clientConfig/caBundle", "value": "not base64!"}]
    status, answer = http(
        sim.server.url, "PATCH", f"{PATH}/gate", bad, content_type="application/json-patch+json"
    )
    assert status == 400
    assert answer["message"].endswith("illegal base64 data at input byte 3")
    assert answer["details"]["causes"][0]["field"] == "webhooks.clientConfig.caBundle"


@pytest.mark.kubectl
def test_kubectl_applies_and_lists_a_configuration(sim: Sim, kubectl) -> None:
    manifest = json.dumps(configuration("gate", hook("a.gate.example.com")))
    assert "created" in kubectl("apply", "-f", "-", stdin=manifest).stdout
    changed = configuration("gate", hook("a.gate.example.com", timeoutSeconds=3),
                            hook("b.gate.example.com"))  # fmt: skip
    assert "configured" in kubectl("apply", "-f", "-", stdin=json.dumps(changed)).stdout
    stored = sim.store.get("mutatingwebhookconfigurations", "", "gate")["webhooks"]
    assert [(h["name"], h["timeoutSeconds"]) for h in stored] == [
        ("a.gate.example.com", 3),
        ("b.gate.example.com", 10),
    ]
    lines = kubectl("get", "mutatingwebhookconfigurations").stdout.splitlines()
    assert lines[0].split() == ["NAME", "WEBHOOKS", "AGE"]
    assert lines[1].split()[:2] == ["gate", "2"]


# -- admission through stored configurations -----------------------------------------------


class HttpsWebhook:
    """An HTTPS webhook for ``hook.hooks.svc`` that records each review's pod and answers by
    adding the label ``<name>=called`` (so the next webhooks see it)."""

    def __init__(self, name: str, certificates: WebhookCertificates) -> None:
        self.name = name
        self.pods: list[str] = []
        webhook = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                review = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                request = review["request"]
                webhook.pods.append(f"{request['namespace']}/{request['name']}")
                labels = request["object"]["metadata"].get("labels")
                patch = (
                    [{"op": "add", "path": f"/metadata/labels/{webhook.name}", "value": "called"}]
                    if labels
                    else [{"op": "add", "path": "/metadata/labels",
                           "value": {webhook.name: "called"}}]
                )  # fmt: skip
                answer = json.dumps(
                    {
                        "apiVersion": "admission.k8s.io/v1",
                        "kind": "AdmissionReview",
                        "response": {
                            "uid": request["uid"],
                            "allowed": True,
                            "patchType": "JSONPatch",
                            "patch": base64.b64encode(json.dumps(patch).encode()).decode(),
                        },
                    }
                ).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(answer)))
                self.end_headers()
                self.wfile.write(answer)

            def log_message(self, *args: object) -> None:
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(*_files(certificates))
        self.httpd.socket = context.wrap_socket(self.httpd.socket, server_side=True)
        self.port = self.httpd.server_address[1]
        threading.Thread(target=self.httpd.serve_forever, args=(0.05,), daemon=True).start()

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


def _files(certificates: WebhookCertificates) -> tuple[str, str]:
    directory = tempfile.mkdtemp()
    cert, key = f"{directory}/tls.crt", f"{directory}/tls.key"
    with open(cert, "wb") as out:
        out.write(certificates.certificate)
    with open(key, "wb") as out:
        out.write(certificates.key)
    return cert, key


@pytest.fixture(scope="module")
def certificates() -> WebhookCertificates:
    return generate(service_dns_names("hook", "hooks"))


@pytest.fixture(scope="module")
def local_certificates() -> WebhookCertificates:
    return generate(["localhost"])


@pytest.fixture
def webhooks(
    certificates: WebhookCertificates, local_certificates: WebhookCertificates
) -> Iterator[dict[str, HttpsWebhook]]:
    """``first`` serves as the Service hook.hooks.svc, ``second`` at https://localhost."""
    servers = {
        "first": HttpsWebhook("first", certificates),
        "second": HttpsWebhook("second", local_certificates),
    }
    yield servers
    for server in servers.values():
        server.close()


@pytest.fixture
def admitting(webhooks: dict[str, HttpsWebhook]) -> Iterator[Sim]:
    """A simulated cluster whose ``hook.hooks.svc`` reaches webhook ``first``; namespaces
    ``in`` (labelled opted-in), ``out`` and ``kube-system``."""
    running = start_sim()
    running.cluster.webhook_services = parse_webhook_services(
        [f"hook.hooks.svc={webhooks['first'].port}"]
    )
    for name, labels in (("in", {LABEL: "true"}), ("out", None), ("kube-system", None)):
        running.cluster.create_object("namespaces", body(namespace(name, labels=labels)))
    yield running
    running.api_client.close()
    running.server.stop()


def with_bundle(entry: dict, certificates: WebhookCertificates) -> dict:
    entry = copy.deepcopy(entry)
    entry["clientConfig"]["caBundle"] = base64.b64encode(certificates.ca).decode()
    return entry


def create(sim: Sim, name: str, ns: str, labels: dict | None = None) -> dict:
    sim.core.create_namespaced_pod(ns, body(pod(name, namespace=ns, labels=labels)))
    return sim.store.get("pods", ns, name)


def test_namespace_and_object_selectors_decide_which_pods_reach_the_webhook(
    admitting: Sim, webhooks: dict[str, HttpsWebhook], certificates: WebhookCertificates
) -> None:
    by_namespace = hook(
        "namespace.gate.example.com",
        namespaceSelector={"matchLabels": {LABEL: "true"}},
        failurePolicy="Fail",
    )
    by_object = hook(
        "object.gate.example.com",
        namespaceSelector={"matchExpressions": [
            {"key": LABEL, "operator": "NotIn", "values": ["true"]},
            {"key": "kubernetes.io/metadata.name", "operator": "NotIn",
             "values": ["kube-system"]},
        ]},
        objectSelector={"matchExpressions": [
            {"key": "opt-in", "operator": "Exists"},
            {"key": "tier", "operator": "In", "values": ["batch", "ml"]},
            {"key": "skip", "operator": "DoesNotExist"},
        ]},
        failurePolicy="Fail",
    )  # fmt: skip
    admitting.cluster.create_object(
        "mutatingwebhookconfigurations",
        configuration(
            "gate", with_bundle(by_namespace, certificates), with_bundle(by_object, certificates)
        ),
    )
    first = webhooks["first"]

    assert create(admitting, "a", "in")["metadata"]["labels"]["first"] == "called"
    assert "first" not in (create(admitting, "b", "out")["metadata"].get("labels") or {})
    batch = {"opt-in": "", "tier": "batch"}
    assert create(admitting, "c", "out", batch)["metadata"]["labels"]["first"] == "called"
    create(admitting, "d", "out", {"opt-in": "", "tier": "web"})  # In: not batch or ml
    create(admitting, "e", "out", {**batch, "skip": "yes"})  # DoesNotExist
    create(admitting, "f", "out", {"tier": "ml"})  # Exists
    # kube-system carries kubernetes.io/metadata.name (kube-apiserver sets it on every
    # namespace): NotIn [kube-system] keeps its pods away even when they opt in.
    create(admitting, "g", "kube-system", batch)
    # In the opted-in namespace the object webhook's NotIn excludes it: called once, not twice.
    create(admitting, "h", "in", batch)

    assert first.pods == ["in/a", "out/c", "in/h"]


def test_configurations_are_called_in_name_order_each_seeing_the_pod_as_left_before(
    admitting: Sim,
    webhooks: dict[str, HttpsWebhook],
    certificates: WebhookCertificates,
    local_certificates: WebhookCertificates,
) -> None:
    """``b-second`` reaches webhook ``second`` by URL, and selects only pods that ``a-first``
    (through the Service) has labelled: kube-apiserver's objectSelector sees the object as
    the webhooks before it mutated it."""
    second = webhooks["second"]
    by_url = hook(
        "second.gate.example.com",
        clientConfig={"url": f"https://localhost:{second.port}/mutate"},
        objectSelector={"matchLabels": {"first": "called"}},
    )
    by_url = with_bundle(by_url, local_certificates)
    admitting.cluster.create_object("mutatingwebhookconfigurations",
                                    configuration("b-second", by_url))  # fmt: skip
    first_only = hook("first.gate.example.com", namespaceSelector={"matchLabels": {LABEL: "true"}})
    admitting.cluster.create_object(
        "mutatingwebhookconfigurations",
        configuration("a-first", with_bundle(first_only, certificates)),
    )
    created = create(admitting, "p", "in")
    assert created["metadata"]["labels"] == {"first": "called", "second": "called"}
    assert create(admitting, "q", "out")["metadata"].get("labels") in (None, {})
    assert webhooks["first"].pods == ["in/p"] and second.pods == ["in/p"]


def test_failure_policy_timeout_and_ca_bundle_are_each_webhooks_own(
    admitting: Sim, webhooks: dict[str, HttpsWebhook], certificates: WebhookCertificates
) -> None:
    other_ca = generate(service_dns_names("hook", "hooks"))
    untrusted = with_bundle(hook("untrusted.gate.example.com", failurePolicy="Ignore"), other_ca)
    admitting.cluster.create_object(
        "mutatingwebhookconfigurations", configuration("untrusted", untrusted)
    )
    assert "labels" not in create(admitting, "ignored", "in")["metadata"]  # Ignore: let in
    assert webhooks["first"].pods == []  # the TLS handshake failed before any request

    strict = {**untrusted, "failurePolicy": "Fail"}
    admitting.cluster.store.delete("mutatingwebhookconfigurations", "", "untrusted")
    admitting.cluster.create_object("mutatingwebhookconfigurations",
                                    configuration("untrusted", strict))  # fmt: skip
    with pytest.raises(ApiException) as refused:
        create(admitting, "refused", "in")
    assert refused.value.status == 500
    assert 'failed calling webhook \\"untrusted.gate.example.com\\"' in refused.value.body
    assert "CERTIFICATE_VERIFY_FAILED" in refused.value.body
    assert [p["metadata"]["name"] for p in admitting.store.list("pods", "in")[0]] == ["ignored"]


def test_a_service_without_endpoints_fails_the_call_as_kube_apiserver_does(
    admitting: Sim, certificates: WebhookCertificates
) -> None:
    admitting.cluster.webhook_services.clear()
    strict = with_bundle(hook("strict.gate.example.com"), certificates)  # failurePolicy Fail
    admitting.cluster.create_object("mutatingwebhookconfigurations", configuration("s", strict))
    with pytest.raises(ApiException) as refused:
        create(admitting, "p", "in")
    assert refused.value.status == 500
    assert 'no endpoints available for service \\"hook\\"' in refused.value.body
    assert admitting.store.list("pods", "in")[0] == []


def test_the_configured_webhook_is_an_implicit_configuration_called_first(
    webhooks: dict[str, HttpsWebhook],
    certificates: WebhookCertificates,
    local_certificates: WebhookCertificates,
) -> None:
    """``--webhook-url`` reaches every pod CREATE in every namespace, before the stored
    configurations: the stored one selects on the label the configured one added."""
    configured = Webhook(
        f"https://localhost:{webhooks['second'].port}/mutate",
        "Fail",
        5.0,
        ca_bundle=local_certificates.ca,
    )
    sim = start_sim(webhook=configured)
    try:
        sim.cluster.webhook_services["hook.hooks.svc"] = webhooks["first"].port
        after = hook("after.gate.example.com", objectSelector={"matchLabels": {"second": "called"}})
        sim.cluster.create_object(
            "mutatingwebhookconfigurations", configuration("z", with_bundle(after, certificates))
        )
        created = create(sim, "p", "default")
        assert created["metadata"]["labels"] == {"second": "called", "first": "called"}
        assert webhooks["second"].pods == ["default/p"] and webhooks["first"].pods == ["default/p"]
    finally:
        sim.api_client.close()
        sim.server.stop()


def test_rules_for_other_operations_or_resources_are_not_called(
    admitting: Sim, webhooks: dict[str, HttpsWebhook], certificates: WebhookCertificates
) -> None:
    rules = [
        {"operations": ["UPDATE", "DELETE"], "apiGroups": [""], "apiVersions": ["v1"],
         "resources": ["pods"]},
        {"operations": ["CREATE"], "apiGroups": ["apps"], "apiVersions": ["v1"],
         "resources": ["deployments"]},
        {"operations": ["CREATE"], "apiGroups": [""], "apiVersions": ["v1"],
         "resources": ["pods/status"]},
        {"operations": ["*"], "apiGroups": ["*"], "apiVersions": ["*"], "resources": ["*"],
         "scope": "Cluster"},
    ]  # fmt: skip
    others = with_bundle(hook("others.gate.example.com", rules=rules), certificates)
    admitting.cluster.create_object("mutatingwebhookconfigurations", configuration("o", others))
    create(admitting, "p", "in")
    assert webhooks["first"].pods == []
    wildcard = {"operations": ["*"], "apiGroups": ["*"], "apiVersions": ["*"], "resources": ["*"]}
    everything = with_bundle(hook("all.gate.example.com", rules=[wildcard]), certificates)
    admitting.cluster.create_object("mutatingwebhookconfigurations", configuration("w", everything))
    create(admitting, "q", "in")
    assert webhooks["first"].pods == ["in/q"]


def test_the_simcluster_option_names_a_service_and_a_port() -> None:
    assert parse_webhook_services(["sluice-webhook.sluice.svc=8443"]) == {
        "sluice-webhook.sluice.svc": 8443
    }
    for bad in ("sluice-webhook=8443", "sluice-webhook.sluice.svc=", "a.b.svc=0", "a.b.c.svc=1"):
        with pytest.raises(ValueError, match="--webhook-service"):
            parse_webhook_services([bad])


def test_manage_py_simcluster_passes_the_services_and_state_keeps_both_kinds(tmp_path) -> None:
    """``--webhook-service`` reaches the cluster; ``--state`` brings Secrets and configurations
    back after a stop."""
    parsed = vars(
        Command().create_parser("manage.py", "simcluster").parse_args(
            ["--scenario", "empty", "--state", str(tmp_path / "state.json"),
             "--webhook-service", "sluice-webhook.sluice.svc=8443",
             "--webhook-service", "hook.hooks.svc=9443"]
        )
    )  # fmt: skip
    fields = SimClusterOptions.__dataclass_fields__
    options = SimClusterOptions(**{k: v for k, v in parsed.items() if k in fields})
    first = build(options)
    assert first.cluster.webhook_services == {
        "sluice-webhook.sluice.svc": 8443,
        "hook.hooks.svc": 9443,
    }
    start_journal(first)
    first.cluster.create_object("namespaces", body(namespace("team")))
    first.cluster.create_object(
        "secrets", {"metadata": {"name": "s"}, "stringData": {"k": "v"}}, "team"
    )
    first.cluster.create_object("mutatingwebhookconfigurations", configuration("gate"))
    first.stop()
    again = build(options)
    try:
        assert again.store.get("secrets", "team", "s")["data"] == {"k": "dg=="}
        assert (
            again.store.get("mutatingwebhookconfigurations", "", "gate")["webhooks"][0][
                "timeoutSeconds"
            ]
            == 10
        )
    finally:
        again.stop()
