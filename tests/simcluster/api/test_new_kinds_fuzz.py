"""Secrets and MutatingWebhookConfigurations of any shape: taken, or refused with a 4xx that
names a field (never an internal error); a configuration taken is one the pod admission can
read (its matching runs on it without error)."""

from __future__ import annotations

import copy
import itertools
import time
from typing import Any

from hypothesis import example, given
from hypothesis import strategies as st

from simcluster.api import Cluster
from simcluster.api.errors import ApiError
from simcluster.api.webhook import Webhook
from simcluster.api.webhook_configurations import pod_create_webhooks, selects
from simcluster.store import Store
from tests.builders import body, namespace, pod
from tests.fuzz.strategies import DELETE, fuzz_settings, json_values, replaced

SECRET: dict[str, Any] = {
    "apiVersion": "v1",
    "kind": "Secret",
    "metadata": {"name": "s", "annotations": {"kubernetes.io/service-account.name": "a"}},
    "type": "kubernetes.io/tls",
    "data": {"tls.crt": "Yw==", "tls.key": "aw=="},
    "stringData": {"ca.crt": "c"},
}
SECRET_PATHS = [
    ("type",), ("data",), ("data", "tls.crt"), ("data", "x y"), ("stringData",),
    ("stringData", "tls.key"), ("immutable",), ("metadata", "annotations"),
]  # fmt: skip
CONFIGURATION: dict[str, Any] = {
    "apiVersion": "admissionregistration.k8s.io/v1",
    "kind": "MutatingWebhookConfiguration",
    "metadata": {"name": "c"},
    "webhooks": [
        {
            "name": "gate.pods.example.com",
            "admissionReviewVersions": ["v1"],
            "sideEffects": "None",
            "failurePolicy": "Ignore",
            "timeoutSeconds": 3,
            "clientConfig": {
                "service": {"name": "hook", "namespace": "hooks", "path": "/m", "port": 443},
                "caBundle": "Yw==",
            },
            "rules": [
                {"operations": ["CREATE"], "apiGroups": [""], "apiVersions": ["v1"],
                 "resources": ["pods"], "scope": "Namespaced"}
            ],
            "namespaceSelector": {"matchLabels": {"team": "a"}},
            "objectSelector": {
                "matchExpressions": [{"key": "tier", "operator": "In", "values": ["batch"]}]
            },
        }
    ],
}  # fmt: skip
HOOK = ("webhooks", 0)
CONFIGURATION_PATHS = [
    ("webhooks",), HOOK, (*HOOK, "name"), (*HOOK, "admissionReviewVersions"),
    (*HOOK, "sideEffects"), (*HOOK, "failurePolicy"), (*HOOK, "matchPolicy"),
    (*HOOK, "timeoutSeconds"), (*HOOK, "reinvocationPolicy"), (*HOOK, "clientConfig"),
    (*HOOK, "clientConfig", "url"), (*HOOK, "clientConfig", "service"),
    (*HOOK, "clientConfig", "service", "port"), (*HOOK, "clientConfig", "service", "path"),
    (*HOOK, "clientConfig", "caBundle"), (*HOOK, "rules"), (*HOOK, "rules", 0),
    (*HOOK, "rules", 0, "operations"), (*HOOK, "rules", 0, "resources"),
    (*HOOK, "rules", 0, "scope"), (*HOOK, "namespaceSelector"),
    (*HOOK, "namespaceSelector", "matchLabels"), (*HOOK, "objectSelector", "matchExpressions"),
    (*HOOK, "objectSelector", "matchExpressions", 0, "operator"),
    (*HOOK, "objectSelector", "matchExpressions", 0, "values"), (*HOOK, "matchConditions"),
]  # fmt: skip
_names = itertools.count()


def mutations(paths: list) -> st.SearchStrategy:
    values = json_values | st.sampled_from([-1, 0, 31, 2**31, 1.5, "", "oops", [], {}, "*"])
    return st.lists(st.tuples(st.sampled_from(paths), st.just(DELETE) | values), max_size=3)


def cluster() -> Cluster:
    running = Cluster(Store(time.time), time.time)
    running.create_object("namespaces", body(namespace("fuzz", labels={"team": "a"})))
    return running


def attempt(plural: str, base: dict, changes: list) -> dict | None:
    obj = copy.deepcopy(base)
    obj["metadata"]["name"] = f"{obj['metadata']['name']}-{next(_names)}"
    for path, value in changes:
        replaced(obj, path, value)
    try:
        return cluster().create_object(plural, obj, "fuzz")
    except ApiError as error:
        assert 400 <= error.code < 500, error.message
        causes = (error.details or {}).get("causes") or []
        assert any(c.get("field") for c in causes), error.message
        return None


@fuzz_settings(200, deadline_ms=5000)
@given(mutations(SECRET_PATHS))
@example([(("data", "tls.crt"), "%%%")])
@example([(("type",), "")])
@example([(("data",), {"k": None})])
def test_a_secret_of_any_shape_is_taken_or_refused_naming_a_field(changes):
    taken = attempt("secrets", SECRET, changes)
    if taken is not None:
        assert "stringData" not in taken and taken["type"]


@fuzz_settings(300, deadline_ms=5000)
@given(mutations(CONFIGURATION_PATHS))
@example([((*HOOK, "timeoutSeconds"), 31)])
@example([((*HOOK, "clientConfig", "caBundle"), "not base64")])
@example([((*HOOK, "rules", 0, "resources"), ["*"])])
def test_a_configuration_of_any_shape_is_taken_or_refused_naming_a_field(changes):
    taken = attempt("mutatingwebhookconfigurations", CONFIGURATION, changes)
    if taken is None:
        return
    candidate = pod("p", namespace="fuzz", labels={"tier": "batch"})
    for hook in pod_create_webhooks([taken]):
        selects(hook, "fuzz", {"team": "a"}, candidate)
        Webhook.from_configuration(hook)
