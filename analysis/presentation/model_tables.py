"""The report's tables of model-based truth: each grader's estimated reliability (docs/design.md §5.6)."""

from __future__ import annotations

from typing import Any

from analysis.presentation.table import Table


def model_tables(result: dict[str, Any], names: dict[int, str]) -> dict[str, Table]:
    """`model_reliability` (Dawid–Skene confusion matrices) and `model_noise` (bias and noise)."""
    model = result.get("model") or {}
    tables: dict[str, Table] = {}
    ds = model.get("dawid_skene")
    if ds:
        cats = ds["categories"]
        rows = []
        for g in ds["graders"]:
            row = {
                "who": names.get(g["grader"], g["pseudonym"]),
                "judgments": g.get("judgments"),
                "accuracy": g["accuracy"],
            }
            for t in range(len(cats)):
                for a in range(len(cats)):
                    row[f"p_{t}_{a}"] = g["confusion"][t][a]
            rows.append(row)
        columns = [
            ("who", "Grader"),
            ("judgments", "Judgments"),
            ("accuracy", "Estimated accuracy"),
            *[
                (f"p_{t}_{a}", f"says {said} when {truth}")
                for t, truth in enumerate(cats)
                for a, said in enumerate(cats)
            ],
        ]
        tables["model_reliability"] = Table(
            "Each grader's estimated reliability (Dawid–Skene)",
            columns,
            rows,
            note=(
                "Estimated from all judgments at once, without knowing the true answers: the model takes each unit's "
                "true category as unknown and learns how often each grader gives each answer for each true category "
                '("says SS when VS" = the share of VS units the grader calls SS). Estimated accuracy is the chance the '
                f"grader gives the true category. Fitted in {ds['iterations']} iterations"
                f"{'' if ds['converged'] else ' (stopped before converging)'}; {ds['settled_95']} of {ds['units']} "
                "units "
                "have a model label with a posterior probability of at least 0.95."
            ),
        )
    bn = model.get("bias_noise")
    if bn:
        rows = [
            {
                "who": names.get(g["grader"], g["pseudonym"]),
                "judgments": g["judgments"],
                "bias": g["bias"],
                "bias_se": g["bias_se"],
                "noise": g["noise"],
            }
            for g in bn["graders"]
        ]
        tables["model_noise"] = Table(
            f"Each grader's bias and noise on the {bn['scale']} scale",
            [
                ("who", "Grader"),
                ("judgments", "Judgments"),
                ("bias", "Bias"),
                ("bias_se", "Bias std. error"),
                ("noise", "Noise (std)"),
            ],
            rows,
            note=(
                "The model reads each score as the unit's true score plus the grader's bias plus random noise. Bias: "
                "how "
                "much higher (+) or lower (−) than the others the grader scores on average (biases sum to 0). Noise: "
                "the "
                "typical size of the grader's random error; the model score of a unit weights graders by 1/noise². "
                f"The median standard error of a unit's model score is {bn['median_se']:.2f}."
            ),
        )
    tables.update(_accounting_tables(result.get("accounting") or {}))
    return tables


def _accounting_tables(acc: dict[str, Any]) -> dict[str, Table]:
    if not acc:
        return {}
    budget = acc["budget"]
    rows = [
        {"what": "Policy", "value": acc["policy"]},
        {"what": "Judgments made (by every grader, excluded ones too)", "value": acc["judgments"]},
        {"what": "Assignments made (initial and extra)", "value": acc["assignments"]},
        {"what": "Budget (assignments allowed)", "value": budget if budget is not None else "no limit"},
        {"what": "Budget left", "value": budget - acc["assignments"] if budget is not None else "—"},
        {"what": "Units settled", "value": acc["units_settled"]},
        {"what": "Units still open", "value": acc["units_open"]},
        {"what": "Units adjudicated by an organizer", "value": acc.get("units_adjudicated", 0)},
    ]
    rows += [{"what": f"Extra assignments: {r['reason']}", "value": r["assignments"]} for r in acc["extra_by_reason"]]
    rows += [{"what": f"Units now: {r['state']}", "value": r["units"]} for r in acc["units_by_state"]]
    tables = {
        "accounting": Table(
            "Allocation accounting",
            [("what", "What"), ("value", "Value")],
            rows,
            note=(
                "A unit is open while it waits for judgments already assigned or the policy wants one more judgment "
                "for it; "
                "it is settled when the policy wants nothing more or it has reached the maximum overlap."
            ),
        )
    }
    if acc.get("simulated"):
        tables["allocation_simulated"] = Table(
            "Simulated: judgments against accuracy for a campaign like this one",
            [
                ("policy", "Policy"),
                ("aggregation", "Aggregated by"),
                ("judgments", "Judgments"),
                ("per_unit", "Per unit"),
                ("accuracy", "Accuracy"),
                ("share_of_baseline", "Share of fixed@max"),
            ],
            acc["simulated"],
            note=(
                "1,000 simulated units with this campaign's categories and overlaps, judged by graders as accurate as "
                "the model estimates yours, averaged over 2 seeds; accuracy is the share of units whose aggregated "
                "label is the true one. fixed@max gives every unit the maximum overlap."
            ),
        )
    return tables
