"""``admissionregistration.k8s.io/v1`` MutatingWebhookConfiguration: defaulted and validated as
kube-apiserver does (Kubernetes v1.32), and read at a pod's CREATE to pick the webhooks to call.

Defaults (``pkg/apis/admissionregistration/v1/defaults.go``): failurePolicy ``Fail``,
matchPolicy ``Equivalent``, namespaceSelector and objectSelector ``{}``, timeoutSeconds 10,
reinvocationPolicy ``Never``, a rule's scope ``*``, a service's port 443.

Validation (``pkg/apis/admissionregistration/validation``: ``validateMutatingWebhook``,
``validateRuleWithOperations``, ``validateAdmissionReviewVersions``; k8s.io/apiserver
``pkg/util/webhook``: ``ValidateWebhookURL``, ``ValidateWebhookService``): 422 naming each
field. On update the rules are those of a create, as when the stored configuration already
meets them (kube-apiserver relaxes sideEffects, admissionReviewVersions and duplicate names
only for a configuration stored before those rules existed). ``matchConditions`` (CEL) are
refused: the simulated cluster does not evaluate CEL, and calling such a webhook for every
pod would be wrong.

Matching (k8s.io/apiserver ``pkg/admission/plugin/webhook``: ``rules.Matcher``,
``predicates/namespace`` and ``predicates/object``): a webhook is called for a pod's CREATE
when one of its rules names the operation, the group ``""``, the version ``v1`` and the
resource ``pods`` (or ``*``, ``*/*``) in a namespaced scope, its namespaceSelector matches the
labels of the pod's namespace and its objectSelector the pod's labels, with label-selector
semantics (``scheduler.api.disruption_budget.selector_matches``). Every namespace carries the
label ``kubernetes.io/metadata.name`` with its name (kube-apiserver sets it on each write); the
matcher reads it so, whether or not the simulated namespace was written with it. Configurations
are called in name order, their webhooks in order, each seeing the pod as the ones before it
left it (``reinvocationPolicy: IfNeeded`` is not honoured: no webhook is called twice).
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping

from scheduler.api.disruption_budget import selector_matches
from simcluster.api.errors import (
    forbidden_field,
    invalid,
    invalid_field,
    unsupported_field,
)
from simcluster.api.resources import ADMISSION_GROUP
from simcluster.api.validation import (
    DNS1123_SUBDOMAIN,
    QUALIFIED_NAME,
    SUBDOMAIN_MESSAGE,
    qualified_name_error,
)

KIND = "MutatingWebhookConfiguration"
NAMESPACE_NAME_LABEL = "kubernetes.io/metadata.name"
FAILURE_POLICIES = ("Fail", "Ignore")
MATCH_POLICIES = ("Equivalent", "Exact")
SIDE_EFFECTS = ("None", "NoneOnDryRun")  # what a v1 configuration may say
REINVOCATION_POLICIES = ("IfNeeded", "Never")
OPERATIONS = ("*", "CONNECT", "CREATE", "DELETE", "UPDATE")
SCOPES = ("*", "Cluster", "Namespaced")
SELECTOR_OPERATORS = ("In", "NotIn", "Exists", "DoesNotExist")
REVIEW_VERSIONS = ("v1", "v1beta1")
DNS1035_LABEL = r"[a-z]([-a-z0-9]*[a-z0-9])?"
DNS1035_MESSAGE = (
    "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an "
    "alphabetic character, and end with an alphanumeric character (e.g. 'my-name',  or "
    f"'abc-123', regex used for validation is '{DNS1035_LABEL}')"
)
URL_FORM = "; desired format: https://host[/path]"

Cause = tuple[str, str, str]


class GoValue:
    """A value printed as Go's ``%#v`` prints it in a field error (``[]string{"v2"}``)."""

    def __init__(self, text: str) -> None:
        self.text = text

    def __str__(self) -> str:
        return self.text


def _go_strings(values: list) -> GoValue:
    return GoValue("[]string{" + ", ".join(f'"{v}"' for v in values) + "}")


def _required(field: str, detail: str = "") -> Cause:
    return field, "FieldValueRequired", "Required value" + (f": {detail}" if detail else "")


# -- defaults ------------------------------------------------------------------------------


def default(obj: dict) -> dict:
    """SetDefaults_MutatingWebhook, SetDefaults_Rule and SetDefaults_ServiceReference."""
    for hook in obj.get("webhooks") or []:
        if not isinstance(hook, dict):
            continue
        hook.setdefault("failurePolicy", "Fail")
        hook.setdefault("matchPolicy", "Equivalent")
        hook.setdefault("namespaceSelector", {})
        hook.setdefault("objectSelector", {})
        hook.setdefault("timeoutSeconds", 10)
        hook.setdefault("reinvocationPolicy", "Never")
        for rule in hook.get("rules") or []:
            if isinstance(rule, dict):
                rule.setdefault("scope", "*")
        service = (hook.get("clientConfig") or {}).get("service")
        if isinstance(service, dict):
            service.setdefault("port", 443)
    return obj


# -- validation ----------------------------------------------------------------------------


def validate(obj: dict) -> None:
    causes: list[Cause] = []
    names: set[str] = set()
    for i, hook in enumerate(obj.get("webhooks") or []):
        path = f"webhooks[{i}]"
        causes.extend(_webhook_causes(hook, path))
        causes.extend(_review_version_causes(hook.get("admissionReviewVersions") or [], path))
        name = hook.get("name") or ""
        if name and name in names:
            causes.append((f"{path}.name", "FieldValueDuplicate", f'Duplicate value: "{name}"'))
        names.add(name)
    if causes:
        raise invalid(KIND, str(obj["metadata"].get("name") or ""), causes, ADMISSION_GROUP)


def _webhook_causes(hook: dict, path: str) -> Iterator[Cause]:
    yield from _fully_qualified_name(hook.get("name") or "", f"{path}.name")
    for i, rule in enumerate(hook.get("rules") or []):
        yield from _rule_causes(rule, f"{path}.rules[{i}]")
    for field, supported in (
        ("failurePolicy", FAILURE_POLICIES),
        ("matchPolicy", MATCH_POLICIES),
    ):
        if field in hook and hook[field] not in supported:
            yield unsupported_field(f"{path}.{field}", hook[field], supported)
    side_effects = hook.get("sideEffects")
    if side_effects is None:
        yield _required(f"{path}.sideEffects", f"must specify one of {', '.join(SIDE_EFFECTS)}")
    elif side_effects not in SIDE_EFFECTS:
        yield unsupported_field(f"{path}.sideEffects", side_effects, SIDE_EFFECTS)
    timeout = hook.get("timeoutSeconds")
    if timeout is not None and not 1 <= timeout <= 30:
        message = "the timeout value must be between 1 and 30 seconds"
        yield invalid_field(f"{path}.timeoutSeconds", timeout, message)
    for field in ("namespaceSelector", "objectSelector"):
        if hook.get(field) is not None:
            yield from _selector_causes(hook[field], f"{path}.{field}")
    policy = hook.get("reinvocationPolicy")
    if policy is not None and policy not in REINVOCATION_POLICIES:
        yield unsupported_field(f"{path}.reinvocationPolicy", policy, REINVOCATION_POLICIES)
    yield from _client_config_causes(hook.get("clientConfig") or {}, f"{path}.clientConfig")
    if hook.get("matchConditions"):
        yield forbidden_field(
            f"{path}.matchConditions",
            "the simulated cluster does not evaluate CEL match conditions",
        )


def _fully_qualified_name(name: str, field: str) -> Iterator[Cause]:
    """k8s.io/apimachinery ``validation.IsFullyQualifiedName``."""
    if not name:
        yield _required(field)
    elif len(name) > 253 or not re.fullmatch(DNS1123_SUBDOMAIN, name):
        message = "must be no more than 253 characters" if len(name) > 253 else SUBDOMAIN_MESSAGE
        yield invalid_field(field, name, message)
    elif len(name.split(".")) < 3:
        message = "should be a domain with at least three segments separated by dots"
        yield invalid_field(field, name, message)


def _wildcard_with_others(values: list, field: str, what: str) -> Iterator[Cause]:
    if len(values) > 1 and "*" in values:
        message = f"if '*' is present, must not specify other {what}"
        yield invalid_field(field, _go_strings(values), message)


def _rule_causes(rule: dict, path: str) -> Iterator[Cause]:
    operations = rule.get("operations") or []
    if not operations:
        yield _required(f"{path}.operations")
    yield from _wildcard_with_others(operations, f"{path}.operations", "operations")
    for i, operation in enumerate(operations):
        if operation not in OPERATIONS:
            yield unsupported_field(f"{path}.operations[{i}]", operation, OPERATIONS)
    groups, versions = rule.get("apiGroups") or [], rule.get("apiVersions") or []
    if not groups:
        yield _required(f"{path}.apiGroups")
    yield from _wildcard_with_others(groups, f"{path}.apiGroups", "API groups")
    if not versions:
        yield _required(f"{path}.apiVersions")
    yield from _wildcard_with_others(versions, f"{path}.apiVersions", "API versions")
    for i, version in enumerate(versions):
        if not version:
            yield _required(f"{path}.apiVersions[{i}]")
    resources = rule.get("resources") or []
    if not resources:
        yield _required(f"{path}.resources")
    for i, resource in enumerate(resources):
        if not resource:
            yield _required(f"{path}.resources[{i}]")
    if len(resources) > 1 and "*/*" in resources:
        message = "if '*/*' is present, must not specify other resources"
        yield invalid_field(f"{path}.resources", _go_strings(resources), message)
    if "*" in resources and any(r != "*" and "/" not in r for r in resources):
        message = "if '*' is present, must not specify other resources without subresources"
        yield invalid_field(f"{path}.resources", _go_strings(resources), message)
    scope = rule.get("scope")
    if scope is not None and scope not in SCOPES:
        yield unsupported_field(f"{path}.scope", scope, SCOPES)


def _selector_causes(selector: dict, path: str) -> Iterator[Cause]:
    """metav1validation.ValidateLabelSelector."""
    for key, value in (selector.get("matchLabels") or {}).items():
        error = qualified_name_error(str(key))
        if error:
            yield invalid_field(f"{path}.matchLabels", key, error)
        elif len(value) > 63 or (value and not re.fullmatch(QUALIFIED_NAME, value)):
            message = (
                "a valid label must be an empty string or consist of alphanumeric characters, "
                "'-', '_' or '.'"
            )
            yield invalid_field(f"{path}.matchLabels", value, message)
    for i, requirement in enumerate(selector.get("matchExpressions") or []):
        where = f"{path}.matchExpressions[{i}]"
        operator, values = requirement.get("operator"), requirement.get("values") or []
        if operator in ("In", "NotIn") and not values:
            yield _required(
                f"{where}.values", "must be specified when `operator` is 'In' or 'NotIn'"
            )
        elif operator in ("Exists", "DoesNotExist") and values:
            yield forbidden_field(
                f"{where}.values",
                "may not be specified when `operator` is 'Exists' or 'DoesNotExist'",
            )
        elif operator not in SELECTOR_OPERATORS:
            yield invalid_field(f"{where}.operator", operator, "not a valid selector operator")
        error = qualified_name_error(str(requirement.get("key") or ""))
        if error:
            yield invalid_field(f"{where}.key", requirement.get("key") or "", error)


def _client_config_causes(config: dict, path: str) -> Iterator[Cause]:
    url, service = config.get("url"), config.get("service")
    if (url is None) == (service is None):
        yield _required(path, "exactly one of url or service is required")
    elif url is not None:
        yield from _url_causes(url, f"{path}.url")
    else:
        yield from _service_causes(service, f"{path}.service")


def _url_causes(url: str, field: str) -> Iterator[Cause]:
    scheme, _, rest = url.partition("://")
    if not rest:
        scheme, rest = "", url
    authority = re.split(r"[/?#]", rest, maxsplit=1)[0]
    if scheme != "https":
        yield invalid_field(field, scheme, "'https' is the only allowed URL scheme" + URL_FORM)
    host = authority.rpartition("@")[2]
    if not host:
        yield invalid_field(field, host, "host must be provided" + URL_FORM)
    if "@" in authority:
        yield invalid_field(
            field, authority.rpartition("@")[0], "user information is not permitted in the URL"
        )
    before_fragment, _, fragment = url.partition("#")
    if fragment:
        yield invalid_field(field, fragment, "fragments are not permitted in the URL")
    query = before_fragment.partition("?")[2]
    if query:
        yield invalid_field(field, query, "query parameters are not permitted in the URL")


def _service_causes(service: dict, path: str) -> Iterator[Cause]:
    if not service.get("name"):
        yield _required(f"{path}.name", "service name is required")
    if not service.get("namespace"):
        yield _required(f"{path}.namespace", "service namespace is required")
    port = service.get("port", 443)
    if not 1 <= port <= 65535:
        message = "port is not valid: must be between 1 and 65535, inclusive"
        yield invalid_field(f"{path}.port", port, message)
    url_path = service.get("path")
    if url_path in (None, "", "/"):
        return
    if url_path == "//":
        yield invalid_field(f"{path}.path", url_path, "segment[0] may not be empty")
        return
    if not url_path.startswith("/"):
        yield invalid_field(f"{path}.path", url_path, "must start with a '/'")
    for i, step in enumerate(url_path[1:].removesuffix("/").split("/")):
        if not step:
            yield invalid_field(f"{path}.path", url_path, f"segment[{i}] may not be empty")
        elif len(step) > 253 or not re.fullmatch(DNS1123_SUBDOMAIN, step):
            yield invalid_field(f"{path}.path", url_path, f"segment[{i}]: {SUBDOMAIN_MESSAGE}")


def _review_version_causes(versions: list, path: str) -> Iterator[Cause]:
    field = f"{path}.admissionReviewVersions"
    if not versions:
        yield _required(field, f"must specify one of {', '.join(REVIEW_VERSIONS)}")
        return
    seen: set[str] = set()
    for i, version in enumerate(versions):
        if version in seen:
            yield invalid_field(f"{field}[{i}]", version, "duplicate version")
            continue
        seen.add(version)
        if len(version) > 63 or not re.fullmatch(DNS1035_LABEL, version):
            yield invalid_field(f"{field}[{i}]", version, DNS1035_MESSAGE)
    if not seen & set(REVIEW_VERSIONS):
        message = f"must include at least one of {', '.join(REVIEW_VERSIONS)}"
        yield invalid_field(field, _go_strings(versions), message)


# -- matching ------------------------------------------------------------------------------


def pod_create_webhooks(configurations: list[dict]) -> Iterator[dict]:
    """The webhooks whose rules match a pod's CREATE, in the order kube-apiserver calls them:
    configurations by name, then each one's webhooks in order."""
    for configuration in sorted(configurations, key=lambda c: c["metadata"]["name"]):
        for hook in configuration.get("webhooks") or []:
            if any(_rule_matches_pod_create(rule) for rule in hook.get("rules") or []):
                yield hook


def _rule_matches_pod_create(rule: dict) -> bool:
    def names(field: str, value: str) -> bool:
        listed = rule.get(field) or []
        return "*" in listed or value in listed

    resources = rule.get("resources") or []
    return (
        names("operations", "CREATE")
        and names("apiGroups", "")
        and names("apiVersions", "v1")
        and any(r in ("pods", "*", "*/*") for r in resources)
        and rule.get("scope", "*") in ("*", "Namespaced")
    )


def selects(hook: dict, namespace: str, namespace_labels: Mapping[str, str], pod: dict) -> bool:
    """Whether ``hook``'s namespaceSelector matches the pod's namespace and its objectSelector
    the pod (a selector left out, or ``{}``, matches everything)."""
    labels = {**namespace_labels, NAMESPACE_NAME_LABEL: namespace}
    pod_labels = (pod.get("metadata") or {}).get("labels") or {}
    return selector_matches(hook.get("namespaceSelector") or {}, labels) and selector_matches(
        hook.get("objectSelector") or {}, pod_labels
    )
