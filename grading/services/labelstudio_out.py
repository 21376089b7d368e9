"""Label Studio files out: a campaign as Label Studio tasks with its judgments as annotations, and a
labeling configuration for them (``grading/services/labelstudio.py`` reads them back; docs/design.md §6).

One task per unit; each grader's judgment an annotation whose ``completed_by`` is the grader's
pseudonym number; a categorical label a ``choices`` result, a numeric score a ``rating`` result, a
BROAD/FINE judgment a ``choices`` result ``broad`` (NS, SS, VS) and a ``number`` result ``fine``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from grading.models import Campaign, Judgment
from grading.models.choices import Broad, Role, Scheme
from grading.services.campaign_file_errors import CampaignFileError

FIELDS_OF = {Scheme.CATEGORICAL: ("label",), Scheme.NUMERIC: ("score",), Scheme.BROAD_FINE: ("broad", "fine")}


def labelstudio_incomplete(campaign: Campaign) -> int:
    """BROAD/FINE judgments with a BROAD but no FINE or the reverse: the export leaves them out (a
    Label Studio annotation of the campaign holds both, and the import refuses one alone)."""
    if campaign.scheme != Scheme.BROAD_FINE:
        return 0
    judgments = campaign.judgments.filter(skipped=False)
    return (
        judgments.filter(broad__isnull=False, fine__isnull=True).count()
        + judgments.filter(broad__isnull=True, fine__isnull=False).count()
    )


def _results(j: Judgment, scheme: str, number: int) -> list[dict[str, Any]]:
    """The Label Studio results of one judgment (none when skipped)."""
    if j.skipped:
        return []
    if scheme == Scheme.BROAD_FINE:
        parts = [("broad", "choices", [j.broad]), ("fine", "number", float(j.fine))]
    elif scheme == Scheme.CATEGORICAL:
        parts = [("choices", "choices", [j.label])]
    else:
        parts = [("rating", "rating", j.score)]
    return [
        {
            "id": f"r{number}" if len(parts) == 1 else f"r{number}-{name}",
            "from_name": name,
            "to_name": "item",
            "type": kind,
            "origin": "manual",
            "value": {kind: value},
        }
        for name, kind, value in parts
    ]


def labelstudio_tasks(campaign: Campaign) -> list[dict[str, Any]]:
    """The campaign as Label Studio tasks: one per unit, each grader's judgment an annotation whose
    completed_by is the grader's pseudonym number (G03 → 3). Skipped judgments are cancelled annotations;
    a BROAD/FINE judgment is a choices result (``broad``) and a number result (``fine``), and one with
    only one of the two is left out (:func:`labelstudio_incomplete` counts them)."""
    if campaign.scheme not in FIELDS_OF:
        raise CampaignFileError(
            "campaign",
            "scheme",
            campaign.scheme,
            "Label Studio export is for categorical, numeric and BROAD/FINE campaigns",
        )
    fields = FIELDS_OF[campaign.scheme]
    pseudonyms = dict(campaign.roles.filter(role=Role.GRADER).values_list("user_id", "pseudonym"))
    judgments: dict[int, list[Judgment]] = {}
    for j in campaign.judgments.select_related("last_event").order_by("unit_id", "grader_id"):
        if j.skipped or all(getattr(j, f) is not None for f in fields):
            judgments.setdefault(j.unit_id, []).append(j)
    tasks = []
    next_annotation = 1
    for pos, unit in enumerate(campaign.units.select_related("query", "candidate").order_by("position", "pk"), start=1):
        cand = unit.candidate
        data: dict[str, Any] = {"unit_id": unit.external_id, "candidate_id": cand.external_id}
        if cand.kind == "text" or not cand.media_url:
            data["text"] = cand.text
        else:
            data[cand.kind] = cand.media_url
        if unit.query is not None:
            data["query"] = unit.query.text or unit.query.title or unit.query.external_id
            data["query_id"] = unit.query.external_id
        annotations = []
        for j in judgments.get(unit.pk, []):
            result = _results(j, campaign.scheme, next_annotation)
            pseudonym = pseudonyms.get(j.grader_id, "")
            annotations.append(
                {
                    "id": next_annotation,
                    "completed_by": int(pseudonym[1:]) if pseudonym[1:].isdigit() else j.grader_id,
                    "result": result,
                    "was_cancelled": j.skipped,
                    "ground_truth": False,
                    "created_at": j.updated_at.isoformat().replace("+00:00", "Z"),
                    "updated_at": j.updated_at.isoformat().replace("+00:00", "Z"),
                    "task": pos,
                }
            )
            next_annotation += 1
        tasks.append({"id": pos, "data": data, "annotations": annotations, "predictions": [], "meta": {}})
    return tasks


def labelstudio_config(campaign: Campaign) -> str:
    """A labeling configuration matching the exported tasks (Label Studio's project XML)."""
    params = campaign.scheme_params or {}
    kinds = set(campaign.candidates.values_list("kind", flat=True))
    tag = {"audio": "Audio", "image": "Image", "video": "Video"}
    items = ['  <Header value="$query"/>'] if campaign.queries.exists() else []
    items += [f'  <{tag[k]} name="item" value="${k}"/>' for k in sorted(kinds & set(tag))]
    if not kinds & set(tag) or "text" in kinds:
        items.append('  <Text name="item" value="$text"/>')
    if campaign.scheme == Scheme.CATEGORICAL:
        choices = "\n".join(f'    <Choice value="{_xml(label)}"/>' for label in params.get("labels", []))
        control = f'  <Choices name="choices" toName="item" choice="single" required="true">\n{choices}\n  </Choices>'
    elif campaign.scheme == Scheme.BROAD_FINE:  # the name is shown, the alias (NS, SS, VS) is what results hold
        choices = "\n".join(f'    <Choice value="{name}" alias="{code}"/>' for code, name in Broad.choices)
        control = (
            f'  <Choices name="broad" toName="item" choice="single" required="true">\n{choices}\n  </Choices>\n'
            '  <Number name="fine" toName="item" min="0" max="10" step="0.1" required="true"/>'
        )
    else:
        control = f'  <Rating name="rating" toName="item" maxRating="{int(params.get("max", 5))}"/>'
    return "<View>\n" + "\n".join([*items, control]) + "\n</View>\n"


def _xml(text: str) -> str:
    return text.replace("&", "&amp;").replace('"', "&quot;").replace("<", "&lt;").replace(">", "&gt;")


def labelstudio_export(*, campaign: Campaign, directory: Path) -> Path:
    """Write ``tasks.json`` (Label Studio's JSON) and ``label_config.xml`` into directory."""
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    tasks = labelstudio_tasks(campaign)
    (directory / "label_config.xml").write_text(labelstudio_config(campaign), encoding="utf-8")
    target = directory / "tasks.json"
    target.write_text(json.dumps(tasks, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    return target
