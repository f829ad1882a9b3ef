"""System checks of Sluice's own settings (``manage.py check --deploy``)."""

from __future__ import annotations

from django.conf import settings
from django.core import checks


@checks.register(checks.Tags.security, deploy=True)
def check_secret_key_is_not_generated(app_configs: object = None, **kwargs: object) -> list:
    """Outside production a missing SECRET_KEY is generated into the run directory (settings):
    right for one workstation, wrong for replicas that must share sessions and signatures."""
    if not settings.SLUICE_GENERATED_SECRET_KEY:
        return []
    return [
        checks.Warning(
            "SECRET_KEY is the development key generated into SLUICE_RUN_DIR/secret_key: each "
            "machine or container has its own, and it changes when that directory is lost",
            hint="set SECRET_KEY (the same for every replica) and SLUICE_ENV=production",
            id="sluice.W002",
        )
    ]
