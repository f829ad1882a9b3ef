"""TrackedPod.facts: what a replay of the pod needs (requests, PodGroup, minMember,
priorities), from the report that first carried them (CycleReport.pod_facts)."""

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [("dashboard", "0008_cycle_unique_per_cluster")]

    operations = [
        migrations.AddField(
            model_name="trackedpod",
            name="facts",
            field=models.JSONField(blank=True, default=None, null=True),
        ),
    ]
