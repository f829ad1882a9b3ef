"""``coordination.k8s.io/v1`` Lease, as kube-apiserver validates it
(``pkg/apis/coordination/validation.ValidateLeaseSpec``, Kubernetes v1.32).

Leader election (client-go ``tools/leaderelection/resourcelock.LeaseLock``; kube-scheduler and
Volcano's ``--leader-elect``) reads and writes one Lease per component. The store's optimistic
concurrency (``resourceVersion``, 409 Conflict on a stale update) is what makes two candidates
that both saw an expired Lease end with one holder.
"""

from __future__ import annotations

from datetime import datetime

from simcluster.api.errors import ApiError, invalid, invalid_field
from simcluster.api.resources import COORDINATION_GROUP


def validate_lease(obj: dict) -> None:
    """422 naming the field for what ValidateLeaseSpec refuses; the JSON decoder's type errors
    (a string where an integer goes) are 400, as kube-apiserver's."""
    name = str((obj.get("metadata") or {}).get("name") or "")
    spec = obj.get("spec")
    if spec is None:
        return
    if not isinstance(spec, dict):
        raise ApiError(400, "Lease in version \"v1\" cannot be handled as a Lease: spec: "
                       "expected an object")  # fmt: skip
    causes = []
    for field in ("leaseDurationSeconds", "leaseTransitions"):
        value = spec.get(field)
        if value is None:
            continue
        if isinstance(value, bool) or not isinstance(value, int):
            raise ApiError(400, f'Lease in version "v1" cannot be handled as a Lease: '
                           f"spec.{field}: expected an integer")  # fmt: skip
        if field == "leaseDurationSeconds" and value <= 0:
            causes.append(invalid_field(f"spec.{field}", value, "must be greater than 0"))
        if field == "leaseTransitions" and value < 0:
            causes.append(invalid_field(f"spec.{field}", value,
                                        "must be greater than or equal to 0"))  # fmt: skip
    for field in ("holderIdentity", "acquireTime", "renewTime"):
        value = spec.get(field)
        if value is not None and not isinstance(value, str):
            raise ApiError(400, f'Lease in version "v1" cannot be handled as a Lease: '
                           f"spec.{field}: expected a string")  # fmt: skip
    for field in ("acquireTime", "renewTime"):
        value = spec.get(field)
        if value and _micro_time(value) is None:
            raise ApiError(400, f'Lease in version "v1" cannot be handled as a Lease: '
                           f"spec.{field}: {value!r} is not an RFC 3339 time")  # fmt: skip
    if causes:
        raise invalid("Lease", name, causes, group=COORDINATION_GROUP)


def _micro_time(value: str) -> datetime | None:
    """metav1.MicroTime is RFC 3339 with microseconds; plain RFC 3339 decodes too."""
    try:
        return datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None
