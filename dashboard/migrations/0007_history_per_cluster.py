"""Each cluster's history read on its own: a queue's samples carry their cycle's cluster (so a
queue's page shows the current cluster's figures only), cycles are indexed by cluster and start
(the latest cycle of one cluster, on its own clock), and a cycle remembers when it was stored
(how old a report is when the web's clock is not its cluster's). Samples stored before take
their cycle's cluster; cycles stored before have no stored time.
"""

from django.db import migrations, models


def forwards(apps, schema_editor):
    Cycle = apps.get_model("dashboard", "Cycle")
    QueueSample = apps.get_model("dashboard", "QueueSample")
    clusters = Cycle.objects.exclude(cluster="").values_list("cluster", flat=True).distinct()
    for cluster in list(clusters):
        QueueSample.objects.filter(cycle__cluster=cluster).update(cluster=cluster)


class Migration(migrations.Migration):
    dependencies = [("dashboard", "0006_whatif_experiments")]

    operations = [
        migrations.AddField(
            model_name="cycle",
            name="stored_at",
            field=models.DateTimeField(blank=True, null=True),
        ),
        migrations.AddField(
            model_name="queuesample",
            name="cluster",
            field=models.CharField(blank=True, db_default="", default="", max_length=64),
        ),
        migrations.AddIndex(
            model_name="cycle",
            index=models.Index(
                fields=["cluster", "started_at"], name="dashboard_c_cluster_e5c9cc_idx"
            ),
        ),
        migrations.RunPython(forwards, migrations.RunPython.noop),
    ]
