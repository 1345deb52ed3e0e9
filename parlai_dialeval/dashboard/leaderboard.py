"""The researcher's leaderboard while a pairwise study runs (the dashboard's ``/leaderboard``; the arena's, and any
pairwise task's): per question and unit, each model's Bradley-Terry strength with its interval (analysis.rankings:
every vote weighted by its ``weight``, the arena's inverse sampling propensity; clusters resampled), the
style-controlled strength and rank beside it (analysis.style_control), the votes, and the provisional marks of
analysis.provisional (too few votes, or one of several variants). Said with it: what was left out (onboarding,
votes the arena voided, work of unverified identities) and the ties called "both bad". The votes so far include
work not yet submitted; `dialeval analyze_pairwise` on the export gives the conclusion."""
from __future__ import annotations

ROUNDS = 200  # bootstrap rounds: enough for a 95% interval to settle to about a tenth of its width, in a second


def leaderboard(records: list[dict], alpha: float = 0.05, rounds: int = ROUNDS, seed: int = 0) -> dict:
    """``{"sections": [...], "left_out": {reason: count}, "votes": n, "weighted": bool}`` from canonical records."""
    from parlai_dialeval.analysis import bradley_terry, pairwise, provisional, rankings
    from parlai_dialeval.analysis.style_control import pairwise_style_control
    from parlai_dialeval.data import from_records

    kept = [dict(r) for r in records if r["type"] in ("study", "comparison")]
    comparisons = from_records(kept, source="dashboard").comparisons
    left_out: dict[str, int] = {}
    if "unverified" in comparisons and comparisons["unverified"].eq(True).any():
        left_out["votes of identities the crowd platform never confirmed"] = int(comparisons["unverified"].eq(True).sum())
        comparisons = comparisons[~comparisons["unverified"].eq(True)]
    comparisons, onboarding = pairwise.split_onboarding(comparisons)
    if onboarding:
        left_out["onboarding answers"] = onboarding
    comparisons, voided = pairwise.split_voided(comparisons)
    left_out.update(voided)
    if comparisons.empty:
        return {"sections": [], "left_out": left_out, "votes": 0, "weighted": False}
    comparisons = pairwise.with_sections(comparisons)
    styled = pairwise_style_control(comparisons, alpha=alpha).rankings
    ties = pairwise.both_bad_counts(comparisons)
    sections = []
    for (question, unit), part in comparisons.groupby(pairwise.SECTION, sort=False, dropna=False):
        table = rankings.rankings(part, rounds=rounds, seed=seed, ci=1 - alpha)
        marks = provisional.from_comparisons(part).set_index("model")
        style = styled[(styled["question"] == question) & (styled["unit"] == unit)].set_index("model")
        rows = []
        for row in table.itertuples(index=False):
            mark = marks.loc[row.model] if row.model in marks.index else None
            s = style.loc[row.model] if row.model in style.index else None
            rows.append({"rank": int(row.rank), "component": int(row.component), "model": row.model,
                         "votes": int(row.votes), "bt": _number(row.bt_score), "low": _number(row.bt_ci_low),
                         "high": _number(row.bt_ci_high), "note": row.bt_note,
                         "style": None if s is None else _number(s["bt_style"]),
                         "style_low": None if s is None else _number(s["style_ci_low"]),
                         "style_high": None if s is None else _number(s["style_ci_high"]),
                         "rank_change": None if s is None else _number(s["rank_change"]),
                         "provisional": bool(mark is not None and mark["provisional"]),
                         "why": "" if mark is None else str(mark["reason"])})
        section_ties = ties[(ties["question"] == question) & (ties["unit"] == unit)]
        sections.append({"question": question, "unit": unit, "votes": int(len(part)), "rows": rows,
                         "parts": int(table["component"].nunique()) if len(table) else 0,
                         "ties": int(section_ties["ties"].sum()), "both_bad": int(section_ties["both_bad"].sum())})
    weighted = bradley_terry.encode(comparisons, clusters=False).weights is not None
    return {"sections": sections, "left_out": left_out, "votes": int(len(comparisons)), "weighted": weighted,
            "confidence": f"{100 * (1 - alpha):g}%"}


def _number(value) -> float | None:
    import math

    return None if value is None or (isinstance(value, float) and math.isnan(value)) else float(value)
