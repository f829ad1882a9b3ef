"""Long-lived scheduler cache fed by watch events, and the ClusterClient it writes through."""

from scheduler.cache.cache import ClusterSnapshot, SchedulerCache
from scheduler.cache.client import ClusterClient

__all__ = ["ClusterClient", "ClusterSnapshot", "SchedulerCache"]
