"""The Hugging Face dataset folder: Parquet files of the ground truth and the judgments, and a dataset
card whose YAML front matter names both configurations, generated from the latest analysis run."""

from __future__ import annotations

import io
import os
from pathlib import Path

import pyarrow.parquet as pq
import pytest
import yaml
from django.core.management import CommandError, call_command

from analysis import export
from analysis.models import AnalysisRun
from analysis.services.execute import run_execute
from analysis.services.runs import run_create
from grading.models import Judgment

pytestmark = pytest.mark.django_db
EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def analyse(campaign) -> AnalysisRun:
    run = run_create(campaign_id=campaign.pk, parameters={"n_boot": 20})
    run_execute(run_id=run.pk)
    run.refresh_from_db()
    return run


def export_hf(slug: str, folder: Path) -> str:
    said = io.StringIO()
    call_command("export_ground_truth", slug, "--format", "hf", "-o", str(folder), stderr=said)
    return said.getvalue()


def card(folder: Path) -> tuple[dict, str]:
    text = (folder / "README.md").read_text(encoding="utf-8")
    assert text.startswith("---\n")
    _, front, body = text.split("---\n", 2)
    return yaml.safe_load(front), body


def test_the_folder_holds_the_ground_truth_and_the_judgments_as_parquet(judged_campaign, tmp_path):
    run = analyse(judged_campaign)
    said = export_hf(judged_campaign.slug, tmp_path / "ds")
    assert "15 units, 45 judgments" in said and "licence" in said
    truth = pq.read_table(tmp_path / "ds" / "data" / "ground_truth.parquet").to_pandas()
    expected = export.ground_truth_frame(run, export.Filters())
    assert len(truth) == len(expected) == 15
    assert list(truth["unit"]) == list(expected["unit"]) and list(truth["mean"]) == list(expected["mean"])
    assert list(truth["majority_broad"]) == list(expected["majority_broad"])
    judgments = pq.read_table(tmp_path / "ds" / "data" / "judgments.parquet").to_pandas()
    assert len(judgments) == Judgment.objects.filter(campaign=judged_campaign).count() == 45
    assert set(judgments["grader"]) == {"G01", "G02", "G03"}  # pseudonyms, never accounts
    assert "comment" not in judgments.columns
    assert set(judgments["broad"]) <= {"NS", "SS", "VS"} and judgments["fine"].between(0, 10).all()
    assert set(judgments["unit"]) == set(truth["unit"])  # the two join on the unit


def test_the_card_front_matter_names_both_configurations_and_a_licence_to_fill(judged_campaign, tmp_path):
    analyse(judged_campaign)
    export_hf(judged_campaign.slug, tmp_path)
    front, body = card(tmp_path)
    assert front["license"] == "other"
    assert "To be filled by the organizer" in body
    configs = {c["config_name"]: c for c in front["configs"]}
    assert set(configs) == {"ground_truth", "judgments"} and configs["ground_truth"]["default"] is True
    for config in configs.values():
        assert len(config["data_files"]) == 1
        assert config["data_files"][0]["split"] == "train"
        assert (tmp_path / config["data_files"][0]["path"]).is_file()
    assert front["pretty_name"] == judged_campaign.name


def test_the_card_reports_the_runs_agreement_with_its_intervals_and_describes_every_field(judged_campaign, tmp_path):
    run = analyse(judged_campaign)
    export_hf(judged_campaign.slug, tmp_path)
    _, body = card(tmp_path)
    levels = run.result["agreement"]["levels"]
    assert len(levels) == 2  # three BROAD levels, and collapsed
    for level in levels:
        kappa = level["kappa"]
        assert (
            f"| Fleiss' κ, {level['name']} | {kappa['value']:.3f} | [{kappa['ci_low']:.3f}, {kappa['ci_high']:.3f}] |"
            in body
        )
    alpha = run.result["agreement"]["alpha"]
    assert f"{alpha['value']:.3f} | [{alpha['ci_low']:.3f}, {alpha['ci_high']:.3f}]" in body
    assert "## The campaign as an instrument" in body and "Precision: mean per-unit std" in body
    assert "## How the data was collected" in body and f"run #{run.number}" in body
    for name in ("ground_truth", "judgments"):
        columns = pq.read_schema(tmp_path / "data" / f"{name}.parquet").names
        assert len(columns) > 5
        for column in columns:
            line = next(line for line in body.splitlines() if line.startswith(f"| `{column}` |"))
            assert not line.endswith("|  |"), column  # each field has its meaning


def test_imported_label_studio_judgments_are_named_in_the_card(tmp_path):
    call_command(
        "import_labelstudio",
        str(EXAMPLES / "labelstudio" / "export.json"),
        "--name",
        "Quality",
        "--scheme",
        "numeric",
        stdout=io.StringIO(),
    )
    export_hf("quality", tmp_path)
    _, body = card(tmp_path)
    assert "- 5 events were imported from labelstudio: those judgments were made there" in body
    judgments = pq.read_table(tmp_path / "data" / "judgments.parquet").to_pandas()
    assert len(judgments) == 5 and int(judgments["skipped"].sum()) == 1


def test_the_folder_needs_an_output_folder(judged_campaign, tmp_path):
    with pytest.raises(CommandError, match="give --output DIR"):
        call_command("export_ground_truth", judged_campaign.slug, "--format", "hf")
    (tmp_path / "file").write_text("x")
    with pytest.raises(CommandError, match="is a file"):
        call_command("export_ground_truth", judged_campaign.slug, "--format", "hf", "-o", str(tmp_path / "file"))


def test_the_datasets_library_loads_the_folder_as_it_is(judged_campaign, tmp_path):
    """Runs where the datasets library is installed (it is not a dependency: see the README)."""
    datasets = pytest.importorskip("datasets")
    analyse(judged_campaign)
    export_hf(judged_campaign.slug, tmp_path / "ds")
    os.environ.setdefault("HF_DATASETS_OFFLINE", "1")
    truth = datasets.load_dataset(str(tmp_path / "ds"), cache_dir=str(tmp_path / "cache"))["train"]
    judgments = datasets.load_dataset(str(tmp_path / "ds"), "judgments", cache_dir=str(tmp_path / "cache"))["train"]
    assert truth.num_rows == 15 and judgments.num_rows == 45
