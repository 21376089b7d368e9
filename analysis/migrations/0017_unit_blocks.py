"""A run's per-unit results as compressed blocks of consecutive units (``analysis.unit_blocks``) in
place of a row per unit: at 10^7 judgments a run's 2,000,000 units took 2.0–2.3 s to store as blocks
against 10.0–11.5 s as rows, in 56 MiB against 380 MiB (docs/analysis.md, "Storing a run's results").

The runs' stored rows are converted, run by run, then the rows' table goes, with the two triggers
of migrations analysis/0012 and analysis/0013 that deleted a deleted run's or unit's rows: a block
has a real foreign key to its run (cascading in the database too: migration analysis/0018), and a
unit deleted since its run is left out when its block is read. The block's bytes are stored
EXTERNAL on PostgreSQL: they are compressed already, so the server does not try again.
"""

import importlib
import json

import django.db.models.deletion
import pandas as pd
from django.db import migrations, models

from analysis import unit_blocks

_FIELDS = ["unit_id", "query_id", "n", "mean", "median", "majority", "dif", "std", "entropy", "n_ns", "n_ss", "n_vs"]
_FIELDS += ["distribution", "model_label", "model_probability", "model_score", "model_se"]


def _triggers(sql_name):
    """The triggers' SQL of migrations 0012 and 0013 (``CREATE`` or ``DROP``)."""
    return [
        getattr(importlib.import_module(f"analysis.migrations.{name}"), sql_name)
        for name in ("0012_unit_result_run_unconstrained", "0013_unit_result_unit_unconstrained")
    ]


def rows_to_blocks(apps, schema_editor):
    UnitResult = apps.get_model("analysis", "UnitResult")
    UnitBlock = apps.get_model("analysis", "UnitBlock")
    if schema_editor.connection.vendor == "postgresql":
        for sql in _triggers("DROP"):
            schema_editor.execute(sql, params=None)
    runs = UnitResult.objects.order_by().values_list("run_id", flat=True).distinct()
    for run_id in sorted(runs):
        rows = UnitResult.objects.filter(run_id=run_id).order_by("unit_id").values_list(*_FIELDS)
        values = list(zip(*rows.iterator(chunk_size=10_000), strict=True)) or [()] * len(_FIELDS)
        frame = pd.DataFrame(
            {
                name.removesuffix("_id"): pd.array(column, dtype="Int64")  # None as missing, ids exact
                if name in ("unit_id", "query_id", "n", "n_ns", "n_ss", "n_vs")
                else list(column)
                for name, column in zip(_FIELDS, values, strict=True)
            }
        )
        blocks = unit_blocks.encode(frame)  # every column in the block's data (the field "model" came later)
        rows = [UnitBlock(run_id=run_id, **{k: v for k, v in vars(b).items() if k != "model"}) for b in blocks]
        UnitBlock.objects.bulk_create(rows, batch_size=64)


def blocks_to_rows(apps, schema_editor):
    UnitResult = apps.get_model("analysis", "UnitResult")
    UnitBlock = apps.get_model("analysis", "UnitBlock")
    for run_id, data in UnitBlock.objects.order_by("run_id", "index").values_list("run_id", "data").iterator():
        rows = []
        for rec in unit_blocks.decode(bytes(data)).to_pylist():  # Python ints and floats, None for missing
            values = {f: rec[f.removesuffix("_id")] for f in _FIELDS if f != "distribution"}
            distribution = None if rec["distribution"] is None else json.loads(rec["distribution"])
            rows.append(UnitResult(run_id=run_id, distribution=distribution, **values))
        UnitResult.objects.bulk_create(rows, batch_size=5_000)
    if schema_editor.connection.vendor == "postgresql":
        for sql in _triggers("CREATE"):
            schema_editor.execute(sql, params=None)


def storage_external(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute("ALTER TABLE analysis_unitblock ALTER COLUMN data SET STORAGE EXTERNAL", params=None)


class Migration(migrations.Migration):
    dependencies = [
        ("analysis", "0016_kept_sums"),
    ]

    operations = [
        migrations.CreateModel(
            name="UnitBlock",
            fields=[
                ("id", models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name="ID")),
                ("index", models.PositiveIntegerField()),
                ("first_unit", models.BigIntegerField()),
                ("last_unit", models.BigIntegerField()),
                ("rows", models.PositiveIntegerField()),
                ("broad", models.BooleanField(default=False)),
                ("distribution", models.BooleanField(default=False)),
                ("model_label", models.BooleanField(default=False)),
                ("model_score", models.BooleanField(default=False)),
                ("data", models.BinaryField()),
                (
                    "run",
                    models.ForeignKey(
                        db_index=False,
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="unit_blocks",
                        to="analysis.analysisrun",
                    ),
                ),
            ],
            options={
                "ordering": ["run_id", "index"],
            },
        ),
        migrations.AddConstraint(
            model_name="unitblock",
            constraint=models.UniqueConstraint(fields=("run", "index"), name="analysis_unitblock_unique_index"),
        ),
        migrations.RunPython(storage_external, migrations.RunPython.noop),
        migrations.RunPython(rows_to_blocks, blocks_to_rows),
        migrations.DeleteModel(
            name="UnitResult",
        ),
    ]
