"""A cycle is identified by its cluster and its start, and the database says so: one unique
constraint on (cluster, started_at), which also serves as the index of a cluster's cycles by
start (0007's index, now redundant, goes). Before, ``started_at`` alone was unique: two clusters'
cycles starting at the same instant (simulated clusters whose clocks start alike) were one.
``started_at`` keeps an index of its own for the pages that list every cycle by start.
"""

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [("dashboard", "0007_history_per_cluster")]

    operations = [
        migrations.RemoveIndex(model_name="cycle", name="dashboard_c_cluster_e5c9cc_idx"),
        migrations.AlterField(
            model_name="cycle",
            name="started_at",
            field=models.DateTimeField(db_index=True),
        ),
        migrations.AddConstraint(
            model_name="cycle",
            constraint=models.UniqueConstraint(
                fields=("cluster", "started_at"), name="dashboard_cycle_cluster_started_at"
            ),
        ),
    ]
