"""A block's model columns apart from its other columns (``UnitBlock.model``): a run stores its units'
own figures as soon as they are final and the model's columns once the model is fitted
(``analysis.unit_blocks.write_model``). Blocks stored before have them in ``data``, and are read as
they are. The bytes are compressed already, so on PostgreSQL they are stored EXTERNAL, as ``data``."""

from django.db import migrations, models

from analysis import unit_blocks


def storage_external(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute("ALTER TABLE analysis_unitblock ALTER COLUMN model SET STORAGE EXTERNAL", params=None)


def model_into_data(apps, schema_editor):
    """Backwards: each block's model columns back into its data, before the field goes."""
    UnitBlock = apps.get_model("analysis", "UnitBlock")
    apart = UnitBlock.objects.filter(model__isnull=False).order_by("pk").values_list("pk", flat=True)
    for pk in apart.iterator():
        block = UnitBlock.objects.get(pk=pk)
        table = unit_blocks.decode(bytes(block.data), None, bytes(block.model))
        UnitBlock.objects.filter(pk=pk).update(data=unit_blocks.stream(table), model=None)


class Migration(migrations.Migration):
    dependencies = [
        ("analysis", "0020_run_model_side"),
    ]

    operations = [
        migrations.AddField(
            model_name="unitblock",
            name="model",
            field=models.BinaryField(blank=True, null=True),
        ),
        migrations.RunPython(storage_external, model_into_data),
    ]
