"""Static files in production: WhiteNoise's compressed, hashed storage, and a deploy check.

`manage.py collectstatic` copies the CSS, htmx and Plotly into ``STATIC_ROOT`` under hashed
names (``sluice.3f2a….css``) with gzip copies and a manifest; WhiteNoise serves them with
far-future cache headers. Before collectstatic has run — tests, ``runserver`` — there is no
manifest: names are served unhashed (from the finders, as Django does under ``DEBUG``) rather
than every page failing, and ``check --deploy`` says the files were never collected.
"""

from __future__ import annotations

import logging
from urllib.parse import unquote, urlsplit

from django.conf import settings
from django.core import checks
from whitenoise.storage import CompressedManifestStaticFilesStorage

log = logging.getLogger(__name__)


class StaticFilesStorage(CompressedManifestStaticFilesStorage):
    manifest_strict = False

    def stored_name(self, name: str) -> str:
        if not self.hashed_files:
            return name  # no manifest: collectstatic has not run into STATIC_ROOT
        path = urlsplit(unquote(name)).path.strip()
        if self.hashed_files.get(self.hash_key(self.clean_name(path))) is None:
            # Not collected (added since the last collectstatic, or a name WhiteNoise probes
            # when it tells hashed files from others): unhashed rather than a failed page.
            log.debug("static file %s is not in the manifest", name)
            return name
        return super().stored_name(name)


@checks.register(checks.Tags.staticfiles, deploy=True)
def check_static_files_collected(app_configs: object = None, **kwargs: object) -> list:
    """With DEBUG off, pages name hashed files that only collectstatic writes."""
    backend = settings.STORAGES.get("staticfiles", {}).get("BACKEND")
    if settings.DEBUG or backend != f"{__name__}.StaticFilesStorage":
        return []
    if StaticFilesStorage().hashed_files:
        return []
    return [
        checks.Warning(
            f"no static files collected in STATIC_ROOT ({settings.STATIC_ROOT}): pages would be "
            "served without CSS, htmx or Plotly",
            hint="run `python manage.py collectstatic --noinput` before starting gunicorn",
            id="sluice.W001",
        )
    ]
