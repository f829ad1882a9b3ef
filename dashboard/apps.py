from django.apps import AppConfig


class DashboardConfig(AppConfig):
    name = "dashboard"
    verbose_name = "Sluice"

    def ready(self) -> None:
        from dashboard import checks, staticfiles  # noqa: F401  (register their deploy checks)
