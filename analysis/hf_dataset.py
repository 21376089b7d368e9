"""A campaign as a Hugging Face dataset folder: what ``datasets.load_dataset(DIR)`` reads as it is.

``DIR/data/ground_truth.parquet`` is the ground-truth Parquet export of the latest analysis
(analysis.streams.ground_truth_parquet: one row per unit, the metadata block under the schema key
``evalutron``); ``DIR/data/judgments.parquet`` the current judgments, one row per grader and unit
(graders by pseudonym, as the judgments download names them; comments left out). ``DIR/README.md``
is the dataset card: YAML front matter whose ``configs`` make ``ground_truth`` the default
configuration and ``judgments`` the second (their columns differ, so they are configurations, not
splits; each has one ``train`` split), and a body generated from the same analysis run: how the
data was collected, agreement with its intervals, the instrument card, the fields, and a licence
for the organizer to fill.
"""

from __future__ import annotations

import json
import math
import shutil
from itertools import islice
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
from django.db.models import Count, Max, Min

from analysis import export, selectors, streams
from analysis.models import AnalysisRun
from analysis.presentation.instrument import card_rows
from grading.models import Campaign, GradingEvent
from grading.models.choices import Scheme

GROUND_TRUTH = "data/ground_truth.parquet"
JUDGMENTS = "data/judgments.parquet"
LICENCE_PLACEHOLDER = "other"
# The judgments file: column, the Judgment field it is read from, its Arrow type.
JUDGMENT_FIELDS = [
    ("unit", "unit__external_id", pa.string()),
    ("query", "unit__query__external_id", pa.string()),
    ("candidate", "unit__candidate__external_id", pa.string()),
    ("candidate_b", "unit__candidate_b__external_id", pa.string()),
    ("grader", "grader_id", pa.string()),
    ("broad", "broad", pa.string()),
    ("fine", "fine", pa.float64()),
    ("score", "score", pa.float64()),
    ("label", "label", pa.string()),
    ("verdict", "verdict", pa.string()),
    ("skipped", "skipped", pa.bool_()),
    ("guidelines_version", "guidelines_version", pa.int64()),
    ("updated_at", "updated_at", pa.timestamp("us", tz="UTC")),
]
GROUND_TRUTH_FIELDS = {
    "unit": "the unit's id (a query–candidate pair, an item, or a pair of items); joins the judgments",
    "unit_id": "the unit's number in Evalutron",
    "query": "the query's id (empty when the campaign has no queries)",
    "candidate": "the candidate's public (blinded) id",
    "n": "the number of judgments of the unit",
    "mean": "the mean of its values (FINE, score, or the label's position)",
    "median": "the median of its values",
    "majority": "the most frequent value",
    "dif": "the range of its values, max − min",
    "std": "the sample standard deviation of its values",
    "entropy": "the entropy of its values, −Σ p log2 p over the distinct values",
    "n_ns": "how many graders said Not Similar",
    "n_ss": "how many graders said Somewhat Similar",
    "n_vs": "how many graders said Very Similar",
    "majority_broad": "the consensus BROAD category (majority; ties toward the mean BROAD, then the lower)",
    "distribution": "the label counts, as JSON",
    "model_label": "the model-based (Dawid–Skene) label",
    "model_probability": "its posterior probability",
    "model_score": "the model-based score (graders' biases removed)",
    "model_se": "its standard error",
    "adjudicated_value": "the organizer's adjudicated value, where there is one",
    "adjudicated": "whether the unit was adjudicated",
}
JUDGMENT_DESCRIPTIONS = {
    "unit": "the unit's id; joins the ground truth",
    "query": "the query's id",
    "candidate": "the candidate's id",
    "candidate_b": "the second candidate's id (pairwise campaigns)",
    "grader": "the grader's pseudonym in this campaign (G01, G02, …)",
    "broad": "BROAD category: NS (not similar), SS (somewhat similar), VS (very similar)",
    "fine": "FINE score, 0.0–10.0",
    "score": "the score on the campaign's scale",
    "label": "the label chosen",
    "verdict": "the pairwise verdict: A, B or equal",
    "skipped": "the grader skipped the unit (no value)",
    "guidelines_version": "the version of the guidelines the judgment was made under",
    "updated_at": "when the judgment last changed (UTC)",
}


def hf_dataset_write(run: AnalysisRun, filters: export.Filters, directory: Path) -> dict[str, int]:
    """Write the folder; returns the row counts of the two files."""
    directory = Path(directory)
    (directory / "data").mkdir(parents=True, exist_ok=True)
    with streams.ground_truth_parquet(run, filters) as tmp, open(directory / GROUND_TRUTH, "wb") as out:
        shutil.copyfileobj(tmp, out)
    n_judgments = _judgments_parquet(run.campaign, directory / JUDGMENTS)
    truth_columns = pq.read_schema(directory / GROUND_TRUTH).names
    n_units = pq.read_metadata(directory / GROUND_TRUTH).num_rows
    card = dataset_card(run, filters, truth_columns=truth_columns, n_units=n_units, n_judgments=n_judgments)
    (directory / "README.md").write_text(card, encoding="utf-8")
    return {"ground_truth": n_units, "judgments": n_judgments}


def _judgments_parquet(campaign: Campaign, path: Path) -> int:
    names = selectors.grader_pseudonyms(campaign_id=campaign.pk)
    schema = pa.schema([(name, kind) for name, _, kind in JUDGMENT_FIELDS])
    rows = selectors.judgment_rows(
        campaign_id=campaign.pk, fields=[field for _, field, _ in JUDGMENT_FIELDS], chunk=streams.CHUNK
    )
    n = 0
    with pq.ParquetWriter(path, schema) as writer:
        while True:
            batch = list(islice(rows, streams.CHUNK))
            if not batch and n:
                break
            columns = list(zip(*batch, strict=True)) if batch else [[] for _ in JUDGMENT_FIELDS]
            data = {name: list(col) for (name, _, _), col in zip(JUDGMENT_FIELDS, columns, strict=True)}
            data["grader"] = [names.get(g) or f"grader-{g}" for g in data["grader"]]
            data["fine"] = [None if v is None else float(v) for v in data["fine"]]
            writer.write_table(pa.table(data, schema=schema))
            n += len(batch)
            if not batch:
                break
    return n


def dataset_card(
    run: AnalysisRun, filters: export.Filters, *, truth_columns: list[str], n_units: int, n_judgments: int
) -> str:
    """The README.md of the folder: YAML front matter, then the card in Markdown."""
    campaign = run.campaign
    result = run.result or {}
    front = [
        "---",
        f"pretty_name: {json.dumps(campaign.name, ensure_ascii=False)}",
        f"license: {LICENCE_PLACEHOLDER}  # the organizer: the data set's licence id, e.g. cc-by-4.0",
        "tags:",
        "- evalutron",
        "- human-evaluation",
        "- annotations",
        f"size_categories:\n- {_size_category(max(n_units, n_judgments))}",
        "configs:",
        "- config_name: ground_truth",
        "  default: true",
        "  data_files:",
        "  - split: train",
        f"    path: {GROUND_TRUTH}",
        "- config_name: judgments",
        "  data_files:",
        "  - split: train",
        f"    path: {JUDGMENTS}",
        "---",
    ]
    body = [
        f"# {campaign.name}",
        "",
        f"Human judgments collected with Evalutron in the campaign `{campaign.slug}` "
        f"({Scheme(campaign.scheme).label} scheme), and the ground truth computed from them by analysis "
        f"run #{run.number}{_finished(run)} (seed {run.seed}, "
        f"{(run.parameters or {}).get('n_boot', 'no')} bootstrap resamples).",
        "",
        f"- `ground_truth` (the default configuration): {n_units} units, one row each.",
        f"- `judgments`: {n_judgments} judgments, one row per grader and unit.",
        "",
        "```python",
        "from datasets import load_dataset",
        'truth = load_dataset("PATH_OR_REPO")["train"]',
        'judgments = load_dataset("PATH_OR_REPO", "judgments")["train"]',
        "```",
        "",
        "## Licence",
        "",
        "**To be filled by the organizer**: the licence under which this data set is shared (and its id in "
        "the `license:` field above, which says `other` until then), and who may be credited.",
        "",
        *_collection(campaign, filters, n_units),
        *_agreement(result),
        *_instrument(result),
        "## Fields",
        "",
        "### ground_truth",
        "",
        "| field | meaning |",
        "|---|---|",
        *(f"| `{c}` | {GROUND_TRUTH_FIELDS.get(c, '')} |" for c in truth_columns),
        "",
        "The analysis run's metadata (agreement, filters, export time) is also in the Parquet file's schema "
        "metadata under the key `evalutron`.",
        "",
        "### judgments",
        "",
        "| field | meaning |",
        "|---|---|",
        *(f"| `{name}` | {JUDGMENT_DESCRIPTIONS[name]} |" for name, _, _ in JUDGMENT_FIELDS),
        "",
        "## Personal information",
        "",
        "Graders appear by their pseudonym in this campaign only; no names, accounts or e-mail addresses are "
        "included. Graders' free-text comments are left out (the campaign's judgments download has them).",
        "",
    ]
    return "\n".join(front + body)


def _finished(run: AnalysisRun) -> str:
    return f", finished {run.finished_at:%Y-%m-%d %H:%M} UTC" if run.finished_at else ""


def _size_category(n: int) -> str:
    for limit, name in ((1_000, "n<1K"), (10_000, "1K<n<10K"), (100_000, "10K<n<100K"), (1_000_000, "100K<n<1M")):
        if n < limit:
            return name
    return "1M<n<10M"


def _collection(campaign: Campaign, filters: export.Filters, n_units: int) -> list[str]:
    events = GradingEvent.objects.filter(campaign=campaign)
    span = events.aggregate(first=Min("server_ts"), last=Max("server_ts"))
    imported = {
        row["payload__source"]: row["n"]
        for row in events.filter(payload__source__isnull=False).values("payload__source").annotate(n=Count("pk"))
    }
    graders = len(selectors.grader_pseudonyms(campaign_id=campaign.pk))
    params = json.dumps(campaign.scheme_params or {}, ensure_ascii=False, sort_keys=True)
    guidelines = campaign.guidelines.order_by("-version").first()
    text = guidelines.text.strip() if guidelines is not None else ""
    lines = [
        "## How the data was collected",
        "",
        f"- Scheme: {Scheme(campaign.scheme).label} (`{campaign.scheme}`), parameters `{params}`.",
        f"- {graders} graders; each unit was given to {campaign.initial_overlap} at first and to at most "
        f"{campaign.max_overlap} (allocation policy `{campaign.policy}`).",
        f"- Guidelines version {campaign.guidelines_version}" + (" (below)." if text else ", without text."),
    ]
    if span["first"]:
        lines.append(f"- Events recorded from {span['first']:%Y-%m-%d} to {span['last']:%Y-%m-%d} (UTC).")
    for source, n in sorted(imported.items()):
        lines.append(
            f"- {n} events were imported from {source}: those judgments were made there, and the event's "
            f"payload says `source: {source}`."
        )
    kept = f"units with at least {filters.min_judgments} judgment{'s' if filters.min_judgments != 1 else ''}"
    if filters.max_confusability is not None:
        kept += f" and {filters.measure} at most {filters.max_confusability:g}"
    lines += [f"- The ground truth keeps {kept}: {n_units} units.", ""]
    if text:
        lines += ["### Guidelines", "", *(f"> {line}".rstrip() for line in text.splitlines()), ""]
    return lines


def _number(value: Any) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "–"
    return f"{value:.3f}" if isinstance(value, float) else str(value)


def _interval(est: dict[str, Any]) -> str:
    low, high = est.get("ci_low"), est.get("ci_high")
    if low is None or high is None or _number(low) == "–":
        return est.get("reason") or "–"
    return f"[{_number(low)}, {_number(high)}]"


def _agreement(result: dict[str, Any]) -> list[str]:
    agreement = result.get("agreement") or {}
    confidence = agreement.get("confidence")
    rows = []
    for level in agreement.get("levels") or []:
        kappa = level.get("kappa") or {}
        rows.append(f"| Fleiss' κ, {level.get('name')} | {_number(kappa.get('value'))} | {_interval(kappa)} |")
    alpha = agreement.get("alpha")
    if alpha:
        rows.append(
            f"| Krippendorff's α ({alpha.get('level', '')}, {alpha.get('scale', '')}) | "
            f"{_number(alpha.get('value'))} | {_interval(alpha)} |"
        )
    if not rows:
        return ["## Agreement", "", "The analysis computed no agreement statistic for this campaign.", ""]
    share = f"{confidence:.0%}" if isinstance(confidence, float) else "the run's"
    return [
        "## Agreement",
        "",
        f"Between graders, with {share} percentile bootstrap intervals over units "
        f"({agreement.get('n_boot', '?')} resamples):",
        "",
        "| statistic | value | interval |",
        "|---|---|---|",
        *rows,
        "",
    ]


def _instrument(result: dict[str, Any]) -> list[str]:
    if "instrument" not in result:
        return []
    rows = [
        f"| {r['what']} | {_number(r.get('value'))} | {_number(r.get('low'))} | {_number(r.get('high'))} |"
        for r in card_rows(result)
    ]
    return [
        "## The campaign as an instrument",
        "",
        "Precision (how far graders' values spread on a unit), repeatability (α) and, where the campaign was "
        "linked to others, reproducibility and resolution, as the analysis report's instrument card shows them:",
        "",
        "| figure | value | from | to |",
        "|---|---|---|---|",
        *rows,
        "",
    ]
