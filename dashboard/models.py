"""Scheduling history: one row per cycle, a sample per queue per cycle, one row per pod
transition (never one row per pod per cycle), and the audit of namespace opt-in changes."""

from __future__ import annotations

from django.conf import settings
from django.db import models

from scheduler.api.report import PodState, TransitionKind

POD_STATES = [(state.value, state.label) for state in PodState]
TRANSITION_KINDS = [(kind.value, kind.value.replace("_", " ")) for kind in TransitionKind]


class Cycle(models.Model):
    """One scheduling cycle, identified by its cluster and its start (the database enforces it:
    a report stored twice — a redelivered task, two workers — is one cycle).

    ``level`` says which chart resolutions the cycle opens a time bucket for (see
    ``dashboard.selectors.sampling``): charts over a week read level-4 rows only, so their
    cost does not grow with the number of cycles.
    """

    started_at = models.DateTimeField(db_index=True)
    duration_ms = models.FloatField()
    mode = models.CharField(max_length=16)
    decisions = models.PositiveIntegerField(default=0)
    action_durations_ms = models.JSONField(default=dict)
    error = models.TextField(blank=True)
    # The cycle raised: ``error`` says why, and it decided nothing (no samples, no counts).
    failed = models.BooleanField(default=False)
    level = models.PositiveSmallIntegerField(default=0)
    counts = models.JSONField(default=dict)  # pods by state over every queue
    gates = models.JSONField(default=dict)  # gate removals queued / at bind
    notices = models.JSONField(default=list)
    # The cluster the cycle ran against: its kube-system namespace's UID ("" when unknown).
    # ``started_at`` is that cluster's clock: two clusters' times do not compare (a simulated
    # cluster may run sped up), so "the latest" is always the latest of one cluster.
    cluster = models.CharField(max_length=64, blank=True, default="", db_default="")
    # When the report was stored, on the storing process's wall clock (None before 0007): how
    # old a report is when the web's clock is not its cluster's.
    stored_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-started_at"]
        indexes = [models.Index(fields=["level", "started_at"])]
        constraints = [
            # Also the index of a cluster's cycles by start (the latest of one cluster).
            models.UniqueConstraint(
                fields=["cluster", "started_at"], name="dashboard_cycle_cluster_started_at"
            ),
        ]

    def __str__(self) -> str:
        return f"cycle at {self.started_at:%Y-%m-%d %H:%M:%S} ({self.duration_ms:.1f} ms)"


class QueueSample(models.Model):
    """A queue's figures at the end of one cycle; resources are engine units by name."""

    cycle = models.ForeignKey(Cycle, on_delete=models.CASCADE, related_name="samples")
    at = models.DateTimeField()
    queue = models.CharField(max_length=253)
    capability = models.JSONField(default=dict)
    deserved = models.JSONField(default=dict)
    allocated = models.JSONField(default=dict)
    reserved = models.JSONField(default=dict)
    inqueue = models.JSONField(default=dict)
    # Pods by state (scheduler.api.report.COUNTED_STATES), the queue's own jobs only.
    running = models.PositiveIntegerField(default=0)
    gated = models.PositiveIntegerField(default=0)
    waiting = models.PositiveIntegerField(default=0)
    pipelined = models.PositiveIntegerField(default=0)
    unschedulable = models.PositiveIntegerField(default=0)
    share = models.FloatField(default=0.0)
    level = models.PositiveSmallIntegerField(default=0)  # copied from the cycle
    cluster = models.CharField(max_length=64, blank=True, default="", db_default="")  # the cycle's

    class Meta:
        indexes = [
            models.Index(fields=["queue", "at"]),
            models.Index(fields=["queue", "level", "at"]),
        ]

    def __str__(self) -> str:
        return f"queue {self.queue} at {self.at:%H:%M:%S}"


class PodTransition(models.Model):
    cycle = models.ForeignKey(
        Cycle, on_delete=models.CASCADE, related_name="transitions", null=True, blank=True
    )
    at = models.DateTimeField(db_index=True)
    namespace = models.CharField(max_length=253)
    name = models.CharField(max_length=253)
    uid = models.CharField(max_length=64, db_index=True)
    queue = models.CharField(max_length=253, blank=True)
    kind = models.CharField(max_length=32, choices=TRANSITION_KINDS)
    from_state = models.CharField(max_length=32, choices=POD_STATES, blank=True)  # "": created
    to_state = models.CharField(max_length=32, choices=POD_STATES)
    node = models.CharField(max_length=253, blank=True)
    message = models.TextField(blank=True)

    class Meta:
        ordering = ["at", "id"]
        indexes = [
            models.Index(fields=["namespace", "name"]),
            models.Index(fields=["queue", "at"]),
        ]

    def __str__(self) -> str:
        return f"pod {self.namespace}/{self.name}: {self.from_state} -> {self.to_state}"


class NamespaceOptInChange(models.Model):
    """Who switched a namespace's queue-allocation gate opt-in, and when."""

    namespace = models.CharField(max_length=253, db_index=True)
    enabled = models.BooleanField()
    changed_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, related_name="+"
    )
    changed_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-changed_at"]
        permissions = [
            ("toggle_namespace_opt_in", "Can switch a namespace's queue-allocation gate opt-in"),
        ]

    def __str__(self) -> str:
        state = "on" if self.enabled else "off"
        return f"namespace {self.namespace} opt-in {state}"


class TrackedPod(models.Model):
    """One pod of one cluster and its current state, one row per pod (its UID): the Pods page
    reads it. Each report's pods reconcile it (``dashboard.tasks.history``): a pod gone from
    the cluster is marked ``deleted`` once and leaves the current lists; the pods of another
    cluster than the latest report's are not current."""

    uid = models.CharField(max_length=64, unique=True)
    cluster = models.CharField(max_length=64, blank=True, default="", db_default="")
    namespace = models.CharField(max_length=253)
    name = models.CharField(max_length=253)
    queue = models.CharField(max_length=253, blank=True)
    state = models.CharField(max_length=32, choices=POD_STATES)
    node = models.CharField(max_length=253, blank=True)
    message = models.TextField(blank=True)
    since = models.DateTimeField()
    # Sluice lifted this pod's queue-allocation gate (a gate_removed transition was stored).
    gate_removed = models.BooleanField(default=False)
    # What a replay of the workload needs (CycleReport.pod_facts: requests, PodGroup and its
    # minMember, priorities), as the scheduler first reported the pod; None when no report
    # carried them (a scheduler before pod_facts, or the report was lost).
    facts = models.JSONField(null=True, blank=True, default=None)

    class Meta:
        indexes = [
            models.Index(fields=["namespace", "name"]),
            models.Index(fields=["queue", "state"]),
            models.Index(fields=["cluster", "state"]),
        ]

    def __str__(self) -> str:
        return f"pod {self.namespace}/{self.name} {self.state}"


class LiveState(models.Model):
    """The latest cycle's "now" figures, replaced every cycle (never history).

    Key ``cycle`` holds the queues, counts, risks and notices; ``queue:<name>`` the pods
    waiting in that queue, so a queue page parses only its own pods.
    """

    key = models.CharField(max_length=300, unique=True)
    cycle = models.ForeignKey(Cycle, on_delete=models.SET_NULL, null=True, related_name="+")
    data = models.JSONField(default=dict)

    def __str__(self) -> str:
        return f"live state {self.key}"


# What-if experiments live in their own module (dashboard/whatif/); imported here so Django
# registers them with the app.
from dashboard.whatif.models import Experiment, VariantResult  # noqa: E402, F401
