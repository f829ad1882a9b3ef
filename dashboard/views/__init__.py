"""Page views, one module per page; reads go through selectors, views stay thin."""

from dashboard.views.autoscaler import autoscaler
from dashboard.views.health import healthz
from dashboard.views.history import history
from dashboard.views.namespaces import namespace_toggle, namespaces
from dashboard.views.overview import overview
from dashboard.views.pods import pod_detail, pods
from dashboard.views.queues import queue_detail, queue_tree
from dashboard.views.risks import risks
from dashboard.views.scheduler import scheduler, scheduler_banner

__all__ = [
    "autoscaler",
    "healthz",
    "history",
    "namespace_toggle",
    "namespaces",
    "overview",
    "pod_detail",
    "pods",
    "queue_detail",
    "queue_tree",
    "risks",
    "scheduler",
    "scheduler_banner",
]
