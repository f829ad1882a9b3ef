"""RBAC as kube-apiserver's authorizer applies it (k8s.io/kubernetes plugin/pkg/auth/authorizer/
rbac: ``RuleAllows``), over the rules rendered from deploy/, for a recorded request."""

from __future__ import annotations

import threading
from collections.abc import Iterable
from dataclasses import dataclass

from simcluster.api.audit import RequestAttributes

WRITE_VERBS = frozenset({"create", "update", "patch", "delete", "deletecollection"})


class Recorder:
    """The simulated API server's ``recorder``: every request's RBAC attributes, in order."""

    def __init__(self) -> None:
        self.requests: list[RequestAttributes] = []
        self._lock = threading.Lock()

    def __call__(self, request: RequestAttributes) -> None:
        with self._lock:
            self.requests.append(request)

    def taken(self) -> list[RequestAttributes]:
        """The requests recorded since the last call, and forget them."""
        with self._lock:
            taken, self.requests = self.requests, []
        return taken

    def used(self) -> set[tuple[str, str, str]]:
        """(group, resource, verb) of every resource request recorded."""
        with self._lock:
            return {(r.group, r.resource, r.verb) for r in self.requests if r.is_resource_request}


@dataclass(frozen=True)
class Grant:
    """One (group, resource, verb) of a rule, with the namespace it applies in ("" for a
    ClusterRole: every namespace and the cluster scope) and its resourceNames."""

    group: str
    resource: str
    verb: str
    namespace: str = ""
    names: frozenset[str] = frozenset()

    def allows(self, request: RequestAttributes) -> bool:
        return (
            request.group == self.group
            and request.resource == self.resource
            and request.verb == self.verb
            and (not self.namespace or request.namespace == self.namespace)
            and (not self.names or request.name in self.names)
        )

    @property
    def key(self) -> tuple[str, str, str]:
        return (self.group, self.resource, self.verb)


def grants(rules: Iterable[dict], namespace: str = "") -> list[Grant]:
    out = []
    for rule in rules:
        assert "*" not in rule.get("verbs", []) and "*" not in rule.get("resources", []), rule
        for group in rule["apiGroups"]:
            for resource in rule["resources"]:
                for verb in rule["verbs"]:
                    out.append(
                        Grant(
                            group,
                            resource,
                            verb,
                            namespace,
                            frozenset(rule.get("resourceNames") or ()),
                        )
                    )
    return out


def account_grants(docs: tuple[dict, ...], account: str, namespace: str) -> list[Grant]:
    """Every grant the rendered objects give service account ``namespace/account``."""
    roles = {(d["kind"], d["metadata"]["name"]): d for d in docs if d["kind"].endswith("Role")}
    out: list[Grant] = []
    for binding in docs:
        if binding["kind"] not in ("ClusterRoleBinding", "RoleBinding"):
            continue
        subject = {"kind": "ServiceAccount", "name": account, "namespace": namespace}
        if subject not in binding["subjects"]:
            continue
        role = roles[(binding["roleRef"]["kind"], binding["roleRef"]["name"])]
        scope = binding["metadata"]["namespace"] if binding["kind"] == "RoleBinding" else ""
        out.extend(grants(role["rules"], scope))
    return out


def denied(requests: Iterable[RequestAttributes], allowed: list[Grant]) -> set:
    """(group, resource, verb) of the requests no grant allows."""
    return {
        (r.group, r.resource, r.verb)
        for r in requests
        if r.is_resource_request and not any(g.allows(r) for g in allowed)
    }
