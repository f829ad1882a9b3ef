"""A cycle that failed is stored too, with its error (``Cycle.failed``), so the pages and
``/healthz`` can say the scheduler is failing instead of only that it went quiet."""

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [("dashboard", "0003_typed_states")]

    operations = [
        migrations.AddField(
            model_name="cycle",
            name="failed",
            field=models.BooleanField(default=False),
        ),
    ]
