"""One vocabulary for pod states and transitions (scheduler.api.report): transitions get a
kind, states their lowercase names, queue samples count waiting pods instead of a "pending"
sum, and stored live state (an older report schema) is dropped; the next cycle rewrites it."""

from django.db import migrations, models

OLD_STATES = {
    "Gated": "gated",
    "Pending": "waiting",
    "Pipelined": "pipelined",
    "Binding": "binding",
    "Releasing": "terminating",
    "Running": "running",
}
POD_STATES = [
    ("gated", "Gated"),
    ("unschedulable", "Unschedulable"),
    ("waiting", "Waiting"),
    ("pipelined", "Pipelined"),
    ("binding", "Binding"),
    ("running", "Running"),
    ("terminating", "Terminating"),
    ("succeeded", "Succeeded"),
    ("failed", "Failed"),
    ("deleted", "Deleted"),
]
TRANSITION_KINDS = [
    ("gate_removed", "gate removed"),
    ("allocated", "allocated"),
    ("bind_failed", "bind failed"),
    ("pipelined", "pipelined"),
    ("unpipelined", "unpipelined"),
    ("evicted", "evicted"),
]


def _kind(old_from: str, old_to: str) -> str:
    if old_from == "Gated":
        return "gate_removed"
    if old_to == "Binding":
        return "allocated"
    if old_to == "Pipelined":
        return "pipelined"
    if old_to == "Releasing":
        return "evicted"
    if old_from == "Pipelined":
        return "unpipelined"
    return "bind_failed"  # Pending -> Pending: the only other move the writer recorded


def forwards(apps, schema_editor):
    PodTransition = apps.get_model("dashboard", "PodTransition")
    PodState = apps.get_model("dashboard", "PodState")
    LiveState = apps.get_model("dashboard", "LiveState")
    Cycle = apps.get_model("dashboard", "Cycle")
    lifted = set()
    for row in PodTransition.objects.all().iterator():
        row.kind = _kind(row.from_state, row.to_state)
        if row.kind == "gate_removed":
            lifted.add(row.uid)
        row.from_state = OLD_STATES.get(row.from_state, row.from_state)
        row.to_state = OLD_STATES.get(row.to_state, row.to_state)
        row.save(update_fields=["kind", "from_state", "to_state"])
    for row in PodState.objects.all().iterator():
        row.state = OLD_STATES.get(row.state, row.state)
        row.gate_removed = row.uid in lifted
        row.save(update_fields=["state", "gate_removed"])
    for cycle in Cycle.objects.exclude(counts={}).iterator():
        counts = {k: v for k, v in cycle.counts.items() if k != "pending"}
        if counts != cycle.counts:
            cycle.counts = counts
            cycle.save(update_fields=["counts"])
    LiveState.objects.all().delete()


class Migration(migrations.Migration):
    dependencies = [("dashboard", "0002_live_state_and_levels")]

    operations = [
        migrations.RenameField("podtransition", "reason", "message"),
        migrations.RenameField("podstate", "reason", "message"),
        migrations.AddField(
            "podtransition",
            "kind",
            models.CharField(choices=TRANSITION_KINDS, default="allocated", max_length=32),
            preserve_default=False,
        ),
        migrations.AddField("podstate", "gate_removed", models.BooleanField(default=False)),
        migrations.RemoveField("queuesample", "pending"),
        migrations.AddField("queuesample", "waiting", models.PositiveIntegerField(default=0)),
        migrations.RunPython(forwards, migrations.RunPython.noop),
        # "PodState" is the report's enum of states; the row is the pod Sluice tracks.
        migrations.RenameModel("PodState", "TrackedPod"),
        migrations.RenameIndex(
            "trackedpod",
            new_name="dashboard_t_namespa_e765e2_idx",
            old_name="dashboard_p_namespa_e41dd2_idx",
        ),
        migrations.RenameIndex(
            "trackedpod",
            new_name="dashboard_t_queue_3941b5_idx",
            old_name="dashboard_p_queue_f7034f_idx",
        ),
        migrations.AlterField(
            "podtransition", "from_state", models.CharField(choices=POD_STATES, max_length=32)
        ),
        migrations.AlterField(
            "podtransition", "to_state", models.CharField(choices=POD_STATES, max_length=32)
        ),
        migrations.AlterField(
            "trackedpod", "state", models.CharField(choices=POD_STATES, max_length=32)
        ),
    ]
