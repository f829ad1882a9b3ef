"""Leader election for the dashboard's scheduler entry points (the Celery scheduler worker and
``manage.py schedule --leader-elect``): the settings made into a ``scheduler.kube.leader``
configuration. The elector itself knows nothing of Django or Celery."""

from __future__ import annotations

from collections.abc import Sequence

from django.conf import settings

from scheduler.kube.leader import ElectionConfig


def component_name(scheduler_names: Sequence[str]) -> str:
    """Volcano's GenerateComponentName (pkg/util/util.go): the scheduler name when there is one,
    else "volcano"; the Lease's name unless SLUICE_LEADER_ELECT_RESOURCE_NAME says otherwise."""
    return scheduler_names[0] if len(scheduler_names) == 1 else "volcano"


def election_config(
    scheduler_names: Sequence[str] | None = None,
    *,
    lease_duration: float | None = None,
    renew_deadline: float | None = None,
    retry_period: float | None = None,
    namespace: str | None = None,
    name: str | None = None,
) -> ElectionConfig:
    """From the SLUICE_LEADER_ELECT_* settings, each overridable (the command's options);
    ValueError when the timings do not hold together."""
    names = list(scheduler_names or settings.SLUICE_SCHEDULER_NAMES)
    return ElectionConfig(
        namespace=namespace or settings.SLUICE_LEADER_ELECT_RESOURCE_NAMESPACE,
        name=name or settings.SLUICE_LEADER_ELECT_RESOURCE_NAME or component_name(names),
        lease_duration=lease_duration or settings.SLUICE_LEADER_ELECT_LEASE_DURATION,
        renew_deadline=renew_deadline or settings.SLUICE_LEADER_ELECT_RENEW_DEADLINE,
        retry_period=retry_period or settings.SLUICE_LEADER_ELECT_RETRY_PERIOD,
    )
