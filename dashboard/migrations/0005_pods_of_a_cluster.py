"""The history knows which cluster it belongs to, and a pod has one current state.

Cycles and tracked pods get the cluster they are about (its kube-system namespace's UID; ""
for what was stored before: an unknown cluster, never shown as current once a report names
its cluster). Transitions gain the kinds the dashboard records from the cluster's own pods
(created, observed, deleted); a created one has no state before it.

What the previous release stored is put right: a transition that changed nothing ("Terminating
→ Terminating") is dropped — only a failed bind is worth a line without a change of state —
and of several tracked pods with one namespace and name (a pod deleted and created again, or
another cluster's), only the latest can be the pod that exists now: the older ones are marked
deleted.
"""

from django.db import migrations, models

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
    ("created", "created"),
    ("observed", "observed"),
    ("deleted", "deleted"),
]


def forwards(apps, schema_editor):
    PodTransition = apps.get_model("dashboard", "PodTransition")
    TrackedPod = apps.get_model("dashboard", "TrackedPod")
    PodTransition.objects.filter(from_state=models.F("to_state")).exclude(
        kind="bind_failed"
    ).delete()
    latest: dict[tuple[str, str], int] = {}
    older: list[int] = []
    rows = TrackedPod.objects.order_by("since", "id").values_list("id", "namespace", "name")
    for pk, namespace, name in rows.iterator():
        previous = latest.get((namespace, name))
        if previous is not None:
            older.append(previous)
        latest[(namespace, name)] = pk
    for start in range(0, len(older), 500):
        TrackedPod.objects.filter(id__in=older[start : start + 500]).update(state="deleted")


class Migration(migrations.Migration):
    dependencies = [("dashboard", "0004_cycle_failed")]

    operations = [
        migrations.AddField(
            model_name="cycle",
            name="cluster",
            field=models.CharField(blank=True, db_default="", default="", max_length=64),
        ),
        migrations.AddField(
            model_name="trackedpod",
            name="cluster",
            field=models.CharField(blank=True, db_default="", default="", max_length=64),
        ),
        migrations.AlterField(
            model_name="podtransition",
            name="from_state",
            field=models.CharField(blank=True, choices=POD_STATES, max_length=32),
        ),
        migrations.AlterField(
            model_name="podtransition",
            name="kind",
            field=models.CharField(choices=TRANSITION_KINDS, max_length=32),
        ),
        migrations.AddIndex(
            model_name="trackedpod",
            index=models.Index(fields=["cluster", "state"], name="dashboard_t_cluster_07cb38_idx"),
        ),
        migrations.RunPython(forwards, migrations.RunPython.noop),
    ]
