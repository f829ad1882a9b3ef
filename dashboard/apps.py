from django.apps import AppConfig


class DashboardConfig(AppConfig):
    name = "dashboard"
    verbose_name = "Sluice"

    def ready(self) -> None:
        from dashboard import staticfiles  # noqa: F401  (registers the static files deploy check)
