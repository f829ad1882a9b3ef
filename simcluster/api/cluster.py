"""The API's operations over the Store, with Kubernetes' rules and mutating admission.

Everything here is plain Python; ``server.py`` maps HTTP onto it, and in-process callers (the
scenario player) use ``Cluster.create_object`` so their pods pass the same admission and rules.
"""

from __future__ import annotations

import contextlib
import copy
import dataclasses
import secrets
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from simcluster.api import (
    leases,
    poddisruptionbudgets,
    pods,
    priority,
    validation,
    webhook_configurations,
)
from simcluster.api import secrets as secret_rules
from simcluster.api.decoding import BINDING, EVICTION, decode, decode_as
from simcluster.api.errors import (
    ApiError,
    bad_request,
    conflict,
    object_details,
    qualified,
    store_error,
)
from simcluster.api.eviction import evict_pod
from simcluster.api.patch import apply_patch
from simcluster.api.resources import RESOURCES, Resource
from simcluster.api.selectors import equality_terms, field_value, selector_match
from simcluster.api.structural import default_custom, validate_custom
from simcluster.api.webhook import Webhook, mutate_pod, service_host
from simcluster.disruption import DisruptionController
from simcluster.store import KINDS, InvalidContinue, Page, Store, StoreError

if TYPE_CHECKING:
    from simcluster.faults import Faults

SERVER_MANAGED_META = (
    "uid",
    "creationTimestamp",
    "deletionTimestamp",
    "deletionGracePeriodSeconds",
)


# Fields a list's field selector is answered from an index for (Store.add_index): the
# dashboard's Autoscaler page lists events by reason (one list per reason), and a cluster
# keeps an event or more for every pod it ran.
INDEXED_FIELDS: dict[str, tuple[str, ...]] = {"events": ("reason",)}


def _field_of(path: str) -> Callable[[dict], str]:
    return lambda obj: field_value(obj, path)


def resource_for(plural: str) -> Resource:
    if plural not in RESOURCES:
        raise ApiError(404, f"the server could not find the requested resource ({plural})")
    return RESOURCES[plural]


@dataclass
class Cluster:
    """``webhook`` is a webhook configured at start (``--webhook-url``): an implicit
    configuration that every pod CREATE reaches, in every namespace, before the
    MutatingWebhookConfigurations stored in the cluster (``_admit_pod``).
    ``webhook_services`` stands in for the cluster's DNS and Service endpoints: a stored
    webhook's ``clientConfig.service`` ``<name>.<namespace>.svc`` is called at 127.0.0.1 on the
    port given here (``--webhook-service``); a Service not listed has no endpoints."""

    store: Store
    now: Callable[[], float]
    webhook: Webhook | None = None
    webhook_services: dict[str, int] = dataclasses.field(default_factory=dict)
    webhook_faults: Faults | None = None  # seeded faults for the stored webhooks' calls too

    def __post_init__(self) -> None:
        for pc in priority.system_classes():  # kube-apiserver creates them at start
            with contextlib.suppress(StoreError):
                self.store.create("priorityclasses", pc)
        self.disruption = DisruptionController.attach(self.store, self.now)
        for kind, paths in INDEXED_FIELDS.items():
            for path in paths:
                self.store.add_index(kind, path, _field_of(path))

    # -- reads -------------------------------------------------------------------------------

    def get(self, plural: str, namespace: str, name: str) -> dict:
        resource_for(plural)
        try:
            return self.store.get(plural, namespace, name)
        except StoreError as error:
            raise store_error(error, plural, name) from None

    def list(
        self,
        plural: str,
        namespace: str | None,
        labels: str | None = None,
        fields: str | None = None,
    ) -> tuple[list[dict], int]:
        page = self.list_page(plural, namespace, labels, fields)
        return page.items, page.resource_version

    def list_page(
        self,
        plural: str,
        namespace: str | None,
        labels: str | None = None,
        fields: str | None = None,
        *,
        limit: int = 0,
        continue_: str = "",
    ) -> Page:
        """A page of a list, as ``GET`` with ``limit`` and ``continue`` serves it; selectors
        filter before the limit counts, as kube-apiserver's do."""
        resource_for(plural)
        match = selector_match(plural, labels, fields)
        indexed = INDEXED_FIELDS.get(plural, ())
        term = next((t for t in equality_terms(fields) if t[0] in indexed), None)
        try:
            return self.store.list_page(
                plural,
                namespace or None,
                match=match,
                limit=limit,
                continue_=continue_,
                indexed=term,
            )
        except InvalidContinue as error:
            raise bad_request(str(error)) from None

    # -- create ------------------------------------------------------------------------------

    def create_object(self, plural: str, obj: dict, namespace: str | None = None) -> dict:
        """Admit, validate and store a new object, exactly as a POST does. Raises ``ApiError``."""
        resource = resource_for(plural)
        obj = _checked_body(
            resource, default_custom(resource, decode(resource, _checked_object(obj)))
        )
        validation.validate_quantities_decode(resource, obj)
        validation.validate_binary_data_decode(resource, obj)
        if plural == "priorityclasses":
            priority.decode_priority_class(obj)
        meta = obj.setdefault("metadata", {})
        if resource.namespaced:
            namespace = _request_namespace(namespace, meta)
            meta["namespace"] = namespace
            self._require_namespace(namespace)
        if not meta.get("name") and meta.get("generateName"):
            meta["name"] = meta["generateName"] + secrets.token_hex(3)[:5]
        # Identity, version and deletion are the server's: kube-apiserver ignores them on create.
        for field in (
            "uid",
            "creationTimestamp",
            "resourceVersion",
            "deletionTimestamp",
            "deletionGracePeriodSeconds",
        ):
            meta.pop(field, None)
        if plural == "pods":
            obj = self._admit_pod(namespace or "", obj)
        elif plural == "poddisruptionbudgets":
            poddisruptionbudgets.prepare_create(obj)
        else:
            validation.validate_name(resource, obj)
            _default_status(plural, obj)
        if plural == "secrets":
            secret_rules.validate(secret_rules.prepare(obj))
        if plural == "mutatingwebhookconfigurations":
            webhook_configurations.validate(webhook_configurations.default(obj))
        if plural == "priorityclasses":
            priority.validate_priority_class(obj)
        if plural == "configmaps":
            validation.validate_config_map(obj)
        if plural == "leases":
            leases.validate_lease(obj)
        validate_custom(resource, obj)
        validation.validate_labels(resource, obj)
        if plural == "priorityclasses":  # validating admission, after validation
            priority.admit_priority_class(obj, self.store, update=False)
        try:
            return self.store.create(plural, obj)
        except StoreError as error:
            raise store_error(error, plural, meta["name"]) from None

    def _admit_pod(self, namespace: str, pod: dict) -> dict:
        pod = mutate_pod(self.webhook, namespace, pod)
        configurations = self.store.peek_all("mutatingwebhookconfigurations")
        if configurations:
            stored = self.store.peek("namespaces", "", namespace) or {}
            labels = (stored.get("metadata") or {}).get("labels") or {}
            for hook in webhook_configurations.pod_create_webhooks(configurations):
                if webhook_configurations.selects(hook, namespace, labels, pod):
                    pod = mutate_pod(self._stored_webhook(hook), namespace, pod)
        validation.validate_name(RESOURCES["pods"], pod)
        priority.admit_pod_priority(pod, self.store)
        pods.prepare_pod_create(pod, self.now())
        validation.validate_pod_create(pod)
        return pod

    def _stored_webhook(self, hook: dict) -> Webhook:
        """One webhook of a stored configuration, its Service reached through
        ``webhook_services``."""
        service = (hook.get("clientConfig") or {}).get("service")
        dial = None
        if service is not None and service_host(service) in self.webhook_services:
            dial = ("127.0.0.1", self.webhook_services[service_host(service)])
        webhook = Webhook.from_configuration(hook, dial=dial)
        return dataclasses.replace(webhook, faults=self.webhook_faults)

    def _require_namespace(self, namespace: str) -> None:
        try:
            self.store.get("namespaces", "", namespace)
        except StoreError:
            raise ApiError(
                404,
                f'namespaces "{namespace}" not found',
                details=object_details("namespaces", namespace),
            ) from None

    # -- update and patch --------------------------------------------------------------------

    def update(
        self, plural: str, namespace: str, name: str, body: dict, subresource: str = ""
    ) -> dict:
        resource = resource_for(plural)
        body = _checked_body(resource, body)
        meta = body.setdefault("metadata", {})
        if meta.get("name") != name:
            raise bad_request(
                f"the name of the object ({meta.get('name')}) does not match the name on the URL ({name})"
            )
        if resource.namespaced:
            meta["namespace"] = _request_namespace(namespace, meta)
        current = self.get(plural, namespace, name)
        return self._write(resource, current, body, subresource)

    def patch(
        self,
        plural: str,
        namespace: str,
        name: str,
        content_type: str,
        patch: bytes,
        subresource: str = "",
    ) -> dict:
        """Read, patch, check and write under the store's lock, so concurrent patches that
        carry no resourceVersion never conflict; one that carries a stale version gets 409."""
        resource = resource_for(plural)

        def change(obj: dict) -> None:
            patched = apply_patch(content_type, obj, patch, custom=resource.custom)
            if not isinstance(patched.get("metadata", {}), dict):
                raise bad_request("metadata must be an object")
            meta = patched.setdefault("metadata", {})
            if meta.get("name") != name or (
                resource.namespaced and meta.get("namespace") != namespace
            ):
                raise bad_request(
                    "metadata.name and metadata.namespace cannot be changed by a patch"
                )
            sent = meta.get("resourceVersion")
            if sent and sent != obj["metadata"]["resourceVersion"]:
                raise conflict(plural, name)
            prepared = self._prepare(resource, obj, patched, subresource)
            obj.clear()
            obj.update(prepared)

        return self._mutate(plural, namespace, name, change)

    def _write(self, resource: Resource, current: dict, new: dict, subresource: str) -> dict:
        new = self._prepare(resource, current, new, subresource)
        try:
            return self.store.update(resource.plural, new, check_version=True)
        except StoreError as error:
            raise store_error(error, resource.plural, current["metadata"]["name"]) from None

    def _prepare(self, resource: Resource, current: dict, new: dict, subresource: str) -> dict:
        """``new`` as it will be stored: status and spec split by subresource, rules checked."""
        new = copy.deepcopy(new)
        if subresource == "status":
            status = new.get("status")
            version = new["metadata"].get("resourceVersion")
            new = copy.deepcopy(current)
            new["status"] = status if status is not None else {}
            new["metadata"]["resourceVersion"] = version
        elif subresource:
            raise ApiError(405, f"{subresource} does not support update or patch")
        else:
            new = default_custom(resource, decode(resource, new))
            validation.validate_quantities_decode(resource, new)
            validation.validate_binary_data_decode(resource, new)
            if resource.plural == "priorityclasses":
                priority.decode_priority_class(new)
            if resource.plural != "events" and "status" in current:
                new["status"] = current["status"]
            for field in SERVER_MANAGED_META:
                _copy_field(current["metadata"], new["metadata"], field)
            if resource.plural == "pods":
                validation.validate_pod_update(current, new)
            if resource.plural == "configmaps":
                validation.validate_config_map(new)
            if resource.plural == "leases":
                leases.validate_lease(new)
            if resource.plural == "secrets":
                secret_rules.validate_update(current, secret_rules.prepare(new))
            if resource.plural == "mutatingwebhookconfigurations":
                webhook_configurations.validate(webhook_configurations.default(new))
            validate_custom(resource, new, current)
            validation.validate_labels(resource, new)
            if resource.plural == "priorityclasses":
                priority.validate_priority_class_update(current, new)
                priority.admit_priority_class(new, self.store, update=True)
        if resource.plural == "poddisruptionbudgets":
            poddisruptionbudgets.prepare_update(current, new, subresource)
        return new

    # -- subresources ------------------------------------------------------------------------

    def bind(self, namespace: str, name: str, binding: dict) -> None:
        binding = decode_as(BINDING_BODY, BINDING, _checked_object(binding))
        if (binding.get("metadata") or {}).get("name", name) != name:
            raise bad_request(f"name in URL does not match name in Binding object ({name})")

        def change(pod: dict) -> None:
            node = validation.validate_binding(pod, binding)
            annotations = (binding.get("metadata") or {}).get("annotations")
            pods.bind_pod(pod, node, self.now(), annotations)

        self._mutate("pods", namespace, name, change)

    def evict(self, namespace: str, name: str, eviction: dict) -> None:
        eviction = decode_as(EVICTION_BODY, EVICTION, _checked_object(eviction))
        if (eviction.get("metadata") or {}).get("name", name) != name:
            raise bad_request(f"name in URL does not match name in Eviction object ({name})")
        evict_pod(self, namespace, name, eviction)

    def _mutate(
        self, plural: str, namespace: str, name: str, change: Callable[[dict], None]
    ) -> dict:
        try:
            return self.store.mutate(plural, namespace, name, change)
        except StoreError as error:
            raise store_error(error, plural, name) from None

    # -- delete ------------------------------------------------------------------------------

    def delete(self, plural: str, namespace: str, name: str, options: dict | None = None) -> dict:
        resource_for(plural)
        if plural == "priorityclasses":
            priority.check_delete(name)
        options = options or {}
        current = self.get(plural, namespace, name)
        _check_preconditions(plural, current, options.get("preconditions") or {})
        try:
            if plural == "pods":
                return pods.delete_pod(
                    self.store, namespace, name, options.get("gracePeriodSeconds"), self.now()
                )
            if plural == "namespaces":
                self._delete_namespace_contents(name)
            return self.store.delete(plural, namespace, name)
        except StoreError as error:
            raise store_error(error, plural, name) from None

    def _delete_namespace_contents(self, namespace: str) -> None:
        """A simplification: kube's namespace controller empties the namespace over time."""
        for kind, namespaced in KINDS.items():
            if namespaced:
                for obj in self.store.list(kind, namespace)[0]:
                    self.store.delete(kind, namespace, obj["metadata"]["name"])


def _copy_field(source: dict, target: dict, field: str) -> None:
    if field in source:
        target[field] = source[field]
    else:
        target.pop(field, None)


# The subresources' bodies, named as kube-apiserver's decoder names them in its 400.
BINDING_BODY = Resource("bindings", "Binding", "", "v1", True)
EVICTION_BODY = Resource("evictions", "Eviction", "policy", "v1", True)


def _checked_object(body: object) -> dict:
    if not isinstance(body, dict):
        raise bad_request("the request body must be a JSON object")
    return copy.deepcopy(body)


def _checked_body(resource: Resource, body: object) -> dict:
    body = _checked_object(body)
    kind, api_version = body.get("kind"), body.get("apiVersion")
    if kind and kind != resource.kind or api_version and api_version != resource.api_version:
        raise bad_request(
            f"the API version in the data ({api_version}) and kind ({kind}) do not match the "
            f"endpoint ({resource.api_version}, {resource.kind})"
        )
    body["kind"], body["apiVersion"] = resource.kind, resource.api_version
    if not isinstance(body.get("metadata", {}), dict):
        raise bad_request("metadata must be an object")
    return body


def _request_namespace(namespace: str | None, meta: dict) -> str:
    sent = meta.get("namespace")
    if namespace and sent and sent != namespace:
        raise bad_request(
            "the namespace of the provided object does not match the namespace sent on the request"
        )
    return namespace or sent or "default"


def _default_status(plural: str, obj: dict) -> None:
    if plural == "namespaces":
        obj["status"] = {"phase": "Active"}
    elif plural == "queues" and isinstance(obj.setdefault("status", {}), dict):
        obj["status"].setdefault("state", "Open")  # a status of another type: 422 below


def _check_preconditions(plural: str, current: dict, preconditions: dict) -> None:
    meta = current["metadata"]
    for field in ("uid", "resourceVersion"):
        expected = preconditions.get(field)
        if expected and expected != meta.get(field):
            raise ApiError(
                409,
                f'Operation cannot be fulfilled on {qualified(plural)} "{meta["name"]}": '
                f"Precondition failed: {field} in precondition: {expected}, {field} in object meta: {meta.get(field)}",
            )
