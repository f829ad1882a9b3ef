"""``policy/v1`` PodDisruptionBudgets as kube-apiserver stores them
(pkg/registry/policy/poddisruptionbudget and pkg/apis/policy/validation).

- Create: the status is reset (its four counters 0) and ``metadata.generation`` is 1.
- Update: the status is kept; a changed spec bumps the generation. The status subresource
  keeps the spec and checks the counters are not negative and the conditions well formed.
- Validation (ValidatePodDisruptionBudgetSpec): ``minAvailable`` and ``maxUnavailable`` may not
  both be set (neither is allowed: policy/v1 has no default, and the disruption controller then
  allows no disruption); each is a non-negative integer or a percentage ``"N%"`` of at most 100%;
  the selector is a valid LabelSelector (optional: a null selector selects no pod, ``{}`` every
  pod of the namespace); ``unhealthyPodEvictionPolicy`` is IfHealthyBudget or AlwaysAllow.
  The name is checked as kube-apiserver checks a PDB's: only as a path segment.
- A value of the wrong JSON type is refused as kube-apiserver's decoder refuses it: 400.

Errors name the field and are worded as kube-apiserver words them (``PodDisruptionBudget.policy
"web" is invalid: spec.minAvailable: Invalid value: …``).
"""

from __future__ import annotations

import json
import re

from simcluster.api.errors import ApiError, bad_request
from simcluster.api.validation import QUALIFIED_NAME, qualified_name_error

Cause = tuple[str, str, str]  # field, reason, message

GROUP, KIND = "policy", "PodDisruptionBudget"
POLICIES = ("AlwaysAllow", "IfHealthyBudget")
OPERATORS = ("In", "NotIn", "Exists", "DoesNotExist")
PERCENT = r"[0-9]+%"
PERCENT_MESSAGE = (
    "a valid percent string must be a numeric string followed by an ending '%' "
    f"(e.g. '1%',  or '93%', regex used for validation is '{PERCENT}')"
)
LABEL_VALUE = rf"({QUALIFIED_NAME})?"
LABEL_VALUE_MESSAGE = (
    "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or "
    "'.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or "
    f"'my_value',  or '12345', regex used for validation is '{LABEL_VALUE}')"
)
CONDITION_REASON = r"[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?"
CONDITION_REASON_MESSAGE = (
    "a condition reason must start with alphabetic character, optionally followed by a string "
    "of alphanumeric characters or '_,:', and must end with an alphanumeric character or '_' "
    "(e.g. 'my_name',  or 'MY_NAME',  or 'MyName',  or 'ReasonA,ReasonB',  or "
    f"'ReasonA:ReasonB', regex used for validation is '{CONDITION_REASON}')"
)
STATUS_COUNTERS = ("disruptionsAllowed", "currentHealthy", "desiredHealthy", "expectedPods")


def empty_status() -> dict:
    """``PodDisruptionBudgetStatus{}`` as policy/v1 serializes it."""
    return {counter: 0 for counter in STATUS_COUNTERS}


# -- the registry strategy ---------------------------------------------------------------------


def prepare_create(obj: dict) -> None:
    """PrepareForCreate, then Validate, then the generic object-meta check, as BeforeCreate."""
    _check_decodable(obj)
    obj["status"] = empty_status()
    obj["metadata"]["generation"] = 1
    name = obj["metadata"].get("name") or ""
    causes = validate_spec(obj.get("spec"))
    if causes:
        raise invalid(name, causes)
    causes = _meta_causes(obj["metadata"])
    if causes:
        raise invalid(name, causes)


def prepare_update(current: dict, new: dict, subresource: str) -> None:
    """PrepareForUpdate and ValidateUpdate of the main resource or of ``status``."""
    name = new["metadata"].get("name") or ""
    if subresource == "status":
        _check_status_decodable(new.get("status"))
        new["status"] = new.get("status") or {}
        causes = validate_status(new["status"])
    else:
        _check_decodable(new)
        generation = current["metadata"].get("generation") or 1
        if _normalized(current.get("spec")) != _normalized(new.get("spec")):
            generation += 1
        new["metadata"]["generation"] = generation
        causes = validate_spec(new.get("spec"))
    if causes:
        raise invalid(name, causes)


def _normalized(value: object) -> object:
    """For Semantic.DeepEqual: a missing, null or empty map or list are all the same."""
    if isinstance(value, dict):
        kept = {k: _normalized(v) for k, v in value.items()}
        return {k: v for k, v in kept.items() if v not in (None, {}, [])}
    if isinstance(value, list):
        return [_normalized(v) for v in value]
    return value


def invalid(name: str, causes: list[Cause]) -> ApiError:
    """``errors.NewInvalid(policy.Kind("PodDisruptionBudget"), name, errs)``."""
    messages: list[str] = []
    for field, _, message in causes:
        text = f"{field}: {message}"
        if text not in messages:
            messages.append(text)
    summary = messages[0] if len(messages) == 1 else "[" + ", ".join(messages) + "]"
    details = {
        "name": name,
        "group": GROUP,
        "kind": KIND,
        "causes": [
            {"reason": reason, "message": message, "field": field}
            for field, reason, message in causes
        ],
    }
    return ApiError(422, f'{KIND}.{GROUP} "{name}" is invalid: {summary}', details=details)


# -- validation --------------------------------------------------------------------------------


def validate_spec(spec: object) -> list[Cause]:
    spec = spec if isinstance(spec, dict) else {}
    causes: list[Cause] = []
    min_available, max_unavailable = spec.get("minAvailable"), spec.get("maxUnavailable")
    if min_available is not None and max_unavailable is not None:
        causes.append(
            _invalid("spec", _go_spec(spec), "minAvailable and maxUnavailable cannot be both set")
        )
    for field, value in (("minAvailable", min_available), ("maxUnavailable", max_unavailable)):
        if value is not None:
            causes.extend(_int_or_percent_causes(f"spec.{field}", value))
    causes.extend(_selector_causes(spec.get("selector"), "spec.selector"))
    policy = spec.get("unhealthyPodEvictionPolicy")
    if policy is not None and policy not in POLICIES:
        causes.append(_not_supported("spec.unhealthyPodEvictionPolicy", policy, POLICIES))
    return causes


def _int_or_percent_causes(field: str, value: int | str) -> list[Cause]:
    """ValidatePositiveIntOrPercent and IsNotMoreThan100Percent."""
    if isinstance(value, int):
        if value < 0:
            return [(field, "FieldValueInvalid", f"Invalid value: {value}: {NEGATIVE}")]
        return []
    if not re.fullmatch(PERCENT, value):
        return [_invalid(field, _go_int_or_string(value), PERCENT_MESSAGE)]
    if int(value[:-1]) > 100:
        return [_invalid(field, _go_int_or_string(value), "must not be greater than 100%")]
    return []


NEGATIVE = "must be greater than or equal to 0"


def _selector_causes(selector: object, path: str) -> list[Cause]:
    """ValidateLabelSelector (a null selector is valid)."""
    if not isinstance(selector, dict):
        return []
    causes: list[Cause] = []
    for key, value in sorted((selector.get("matchLabels") or {}).items()):
        causes.extend(_label_name_causes(key, f"{path}.matchLabels"))
        causes.extend(
            _invalid(f"{path}.matchLabels", _go_string(value), message)
            for message in _label_value_errors(value)
        )
    for index, requirement in enumerate(selector.get("matchExpressions") or []):
        causes.extend(_requirement_causes(requirement, f"{path}.matchExpressions[{index}]"))
    return causes


def _requirement_causes(requirement: dict, path: str) -> list[Cause]:
    """ValidateLabelSelectorRequirement."""
    causes: list[Cause] = []
    operator, values = requirement.get("operator") or "", requirement.get("values") or []
    if operator in ("In", "NotIn") and not values:
        causes.append(
            _required(f"{path}.values", "must be specified when `operator` is 'In' or 'NotIn'")
        )
    elif operator in ("Exists", "DoesNotExist") and values:
        causes.append(
            (
                f"{path}.values",
                "FieldValueForbidden",
                "Forbidden: may not be specified when `operator` is 'Exists' or 'DoesNotExist'",
            )
        )
    elif operator not in OPERATORS:
        causes.append(
            _invalid(f"{path}.operator", _go_string(operator), "not a valid selector operator")
        )
    causes.extend(_label_name_causes(requirement.get("key") or "", f"{path}.key"))
    for index, value in enumerate(values):
        causes.extend(
            _invalid(f"{path}.values[{index}]", _go_string(value), message)
            for message in _label_value_errors(value)
        )
    return causes


def _label_name_causes(key: str, field: str) -> list[Cause]:
    error = qualified_name_error(key)
    return [_invalid(field, _go_string(key), error)] if error else []


def _label_value_errors(value: str) -> list[str]:
    errors = []
    if len(value) > 63:
        errors.append("must be no more than 63 characters")
    if not re.fullmatch(LABEL_VALUE, value):
        errors.append(LABEL_VALUE_MESSAGE)
    return errors


def _meta_causes(metadata: dict) -> list[Cause]:
    """ValidateObjectMetaAccessor with path.ValidatePathSegmentName, the only name check
    kube-apiserver makes of a PDB."""
    name = metadata.get("name") or ""
    if not name:
        return [_required("metadata.name", "name or generateName is required")]
    if name in (".", ".."):
        return [_invalid("metadata.name", _go_string(name), f"may not be '{name}'")]
    return [
        _invalid("metadata.name", _go_string(name), f"may not contain '{bad}'")
        for bad in ("/", "%")
        if bad in name
    ]


def validate_status(status: dict) -> list[Cause]:
    """ValidatePodDisruptionBudgetStatusUpdate (policy/v1)."""
    causes = _conditions_causes(status.get("conditions") or [], "status.conditions")
    for counter in STATUS_COUNTERS:
        value = status.get(counter) or 0
        if value < 0:
            causes.append(
                (f"status.{counter}", "FieldValueInvalid", f"Invalid value: {value}: {NEGATIVE}")
            )
    return causes


def _conditions_causes(conditions: list, path: str) -> list[Cause]:
    """ValidateConditions (metav1.Condition)."""
    causes: list[Cause] = []
    seen: set[str] = set()
    for index, cond in enumerate(conditions):
        field = f"{path}[{index}]"
        kind = cond.get("type") or ""
        causes.extend(_label_name_causes(kind, f"{field}.type"))
        if cond.get("status") not in ("True", "False", "Unknown"):
            causes.append(
                _not_supported(
                    f"{field}.status", cond.get("status") or "", ("False", "True", "Unknown")
                )
            )
        if not cond.get("lastTransitionTime"):
            causes.append(_required(f"{field}.lastTransitionTime", "must be set"))
        reason = cond.get("reason") or ""
        if not reason:
            causes.append(_required(f"{field}.reason", "must be set"))
        elif not re.fullmatch(CONDITION_REASON, reason):
            causes.append(_invalid(f"{field}.reason", _go_string(reason), CONDITION_REASON_MESSAGE))
        if kind in seen:
            causes.append(
                (f"{field}.type", "FieldValueDuplicate", f"Duplicate value: {_go_string(kind)}")
            )
        seen.add(kind)
    return causes


# -- field errors as field.Error.ErrorBody prints them -----------------------------------------


def _invalid(field: str, shown: str, detail: str) -> Cause:
    return field, "FieldValueInvalid", f"Invalid value: {shown}: {detail}"


def _required(field: str, detail: str) -> Cause:
    return field, "FieldValueRequired", f"Required value: {detail}"


def _not_supported(field: str, value: str, supported: tuple[str, ...]) -> Cause:
    listed = ", ".join(_go_string(v) for v in supported)
    message = f"Unsupported value: {_go_string(value)}: supported values: {listed}"
    return field, "FieldValueNotSupported", message


def _go_string(value: str) -> str:
    """Go's %q, close enough: JSON's quoting keeps printable characters as they are."""
    return json.dumps(value, ensure_ascii=False)


def _go_int_or_string(value: int | str) -> str:
    """%#v of an intstr.IntOrString (a value, so its pointer-receiver String() is not used)."""
    if isinstance(value, int):
        return f'intstr.IntOrString{{Type:0, IntVal:{value}, StrVal:""}}'
    return f"intstr.IntOrString{{Type:1, IntVal:0, StrVal:{_go_string(value)}}}"


def _go_spec(spec: dict) -> str:
    """%#v of the internal PodDisruptionBudgetSpec: pointers print as addresses, which differ
    from run to run in kube-apiserver; these are fixed stand-ins."""

    def pointer(type_name: str, value: object, address: str) -> str:
        return f"(*{type_name})({'nil' if value is None else address})"

    return (
        "policy.PodDisruptionBudgetSpec{"
        f"MinAvailable:{pointer('intstr.IntOrString', spec.get('minAvailable'), '0xc000a4c0a0')}, "
        f"Selector:{pointer('v1.LabelSelector', spec.get('selector'), '0xc000a4c0c0')}, "
        f"MaxUnavailable:{pointer('intstr.IntOrString', spec.get('maxUnavailable'), '0xc000a4c0b0')}, "
        "UnhealthyPodEvictionPolicy:"
        f"{pointer('policy.UnhealthyPodEvictionPolicyType', spec.get('unhealthyPodEvictionPolicy'), '0xc000a4c0d0')}"
        "}"
    )


# -- decoding ----------------------------------------------------------------------------------


def _check_decodable(obj: dict) -> None:
    """What decoding into policy/v1 Go structs refuses: 400, worded as kube-apiserver's."""
    spec = obj.get("spec")
    if spec is None:
        return
    if not isinstance(spec, dict):
        _undecodable(spec, "PodDisruptionBudget.spec", "v1.PodDisruptionBudgetSpec")
    for field in ("minAvailable", "maxUnavailable"):
        value = spec.get(field)
        if value is not None and (isinstance(value, bool) or not isinstance(value, int | str)):
            _undecodable(value, f"PodDisruptionBudgetSpec.spec.{field}", "int32")
    policy = spec.get("unhealthyPodEvictionPolicy")
    if policy is not None and not isinstance(policy, str):
        _undecodable(
            policy,
            "PodDisruptionBudgetSpec.spec.unhealthyPodEvictionPolicy",
            "v1.UnhealthyPodEvictionPolicyType",
        )
    selector = spec.get("selector")
    if selector is None:
        return
    if not isinstance(selector, dict):
        _undecodable(selector, "PodDisruptionBudgetSpec.spec.selector", "v1.LabelSelector")
    labels = selector.get("matchLabels")
    if labels is not None and not isinstance(labels, dict):
        _undecodable(labels, "LabelSelector.spec.selector.matchLabels", "map[string]string")
    for value in (labels or {}).values():
        if not isinstance(value, str):
            _undecodable(value, "LabelSelector.spec.selector.matchLabels", "string")
    expressions = selector.get("matchExpressions")
    if expressions is not None and not isinstance(expressions, list):
        _undecodable(
            expressions,
            "LabelSelector.spec.selector.matchExpressions",
            "[]v1.LabelSelectorRequirement",
        )
    for requirement in expressions or []:
        if not isinstance(requirement, dict):
            _undecodable(
                requirement,
                "LabelSelector.spec.selector.matchExpressions",
                "v1.LabelSelectorRequirement",
            )
        for field in ("key", "operator"):
            value = requirement.get(field)
            if value is not None and not isinstance(value, str):
                _undecodable(
                    value,
                    f"LabelSelectorRequirement.spec.selector.matchExpressions.{field}",
                    "string",
                )
        values = requirement.get("values")
        if values is not None and (
            not isinstance(values, list) or not all(isinstance(v, str) for v in values)
        ):
            _undecodable(
                values, "LabelSelectorRequirement.spec.selector.matchExpressions.values", "string"
            )


def _check_status_decodable(status: object) -> None:
    if status is None:
        return
    if not isinstance(status, dict):
        _undecodable(status, "PodDisruptionBudget.status", "v1.PodDisruptionBudgetStatus")
    for counter in (*STATUS_COUNTERS, "observedGeneration"):
        value = status.get(counter)
        if value is not None and (isinstance(value, bool) or not isinstance(value, int)):
            _undecodable(value, f"PodDisruptionBudgetStatus.status.{counter}", "int32")
    if not isinstance(status.get("conditions") or [], list) or not all(
        isinstance(c, dict) for c in status.get("conditions") or []
    ):
        _undecodable(
            status.get("conditions"),
            "PodDisruptionBudgetStatus.status.conditions",
            "[]v1.Condition",
        )


def _undecodable(value: object, field: str, go_type: str) -> None:
    raise bad_request(
        f'{KIND} in version "v1" cannot be handled as a {KIND}: json: cannot unmarshal '
        f"{_json_type(value)} into Go struct field {field} of type {go_type}"
    )


def _json_type(value: object) -> str:
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int | float):
        return f"number {json.dumps(value)}"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    return "object"
