"""What-if experiments and their results (one row per variant), kept to compare later."""

from __future__ import annotations

from django.db import models


class Experiment(models.Model):
    class Status(models.TextChoices):
        QUEUED = "queued", "queued"
        RUNNING = "running", "running"
        DONE = "done", "done"
        FAILED = "failed", "failed"
        CANCELLED = "cancelled", "cancelled"

    name = models.CharField(max_length=200)
    spec = models.TextField()  # the experiment file (YAML), as exported
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.QUEUED)
    # Cycles played so far over every variant, of ``total`` (the progress bar).
    done = models.PositiveIntegerField(default=0)
    total = models.PositiveIntegerField(default=0)
    current = models.CharField(max_length=200, blank=True)  # the variant being played
    cancel_requested = models.BooleanField(default=False)
    error = models.TextField(blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    wall_seconds = models.FloatField(null=True, blank=True)

    class Meta:
        app_label = "dashboard"
        ordering = ["-created_at", "-id"]

    def __str__(self) -> str:
        return f"{self.name} ({self.status})"

    @property
    def percent(self) -> int:
        return int(100 * self.done / self.total) if self.total else 0

    @property
    def active(self) -> bool:
        return self.status in (self.Status.QUEUED, self.Status.RUNNING)


class VariantResult(models.Model):
    experiment = models.ForeignKey(Experiment, on_delete=models.CASCADE, related_name="results")
    position = models.PositiveSmallIntegerField()
    name = models.CharField(max_length=200)
    description = models.TextField(blank=True)
    summary = models.JSONField(default=dict)
    by_queue = models.JSONField(default=dict)
    samples = models.JSONField(default=list)  # nodes and queue CPU per cycle
    pods = models.JSONField(default=list)  # every simulated pod: created, bound, node, wait
    scale_ups = models.JSONField(default=list)
    evictions = models.JSONField(default=list)
    wall_seconds = models.FloatField(default=0.0)

    class Meta:
        app_label = "dashboard"
        ordering = ["experiment", "position"]
        constraints = [
            models.UniqueConstraint(
                fields=["experiment", "position"], name="one_result_per_variant"
            )
        ]

    def __str__(self) -> str:
        return f"{self.experiment_id}/{self.name}"
