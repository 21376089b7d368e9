# The report's most and least confusable units are chosen when a run is computed and kept in its
# result (result["confusability"]["extremes"]), so the per-unit rows need no index on std or entropy
# (docs/analysis.md, "Storing a run's results"). Runs stored before have theirs chosen here, by
# the rule the run follows, while the index on std is still there to find them.

from django.db import migrations

FIELDS = ["unit_id", "n", "mean", "dif", "std", "entropy", "n_ns", "n_ss", "n_vs"]
LIMIT = 10


def choose_extremes(apps, schema_editor):
    AnalysisRun = apps.get_model("analysis", "AnalysisRun")
    UnitResult = apps.get_model("analysis", "UnitResult")
    for run in AnalysisRun.objects.filter(status="succeeded").iterator(chunk_size=20):
        confusability = (run.result or {}).get("confusability") or {}
        if not confusability.get("available") or "extremes" in confusability:
            continue
        rated = UnitResult.objects.filter(run_id=run.pk, n__gte=2, std__isnull=False)
        chosen = {"measure": "std"}
        for side, order in (("most", "-std"), ("least", "std")):
            rows = rated.order_by(order, "unit_id").values(*FIELDS)[:LIMIT]
            chosen[side] = [{("unit" if k == "unit_id" else k): v for k, v in row.items()} for row in rows]
        fields = ["result"]
        run.result["confusability"]["extremes"] = chosen
        if run.page_result and (run.page_result.get("confusability") or {}).get("available"):
            run.page_result["confusability"]["extremes"] = chosen
            fields.append("page_result")
        run.save(update_fields=fields)


class Migration(migrations.Migration):
    dependencies = [
        ("analysis", "0010_shard_reuse"),
    ]

    operations = [
        migrations.RunPython(choose_extremes, migrations.RunPython.noop),
        migrations.RemoveIndex(
            model_name="unitresult",
            name="analysis_un_run_id_f35933_idx",
        ),
        migrations.RemoveIndex(
            model_name="unitresult",
            name="analysis_un_run_id_95653c_idx",
        ),
    ]
