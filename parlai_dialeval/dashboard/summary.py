"""What the dashboard shows, computed from the export's canonical records and Mephisto's unit rows.

Pure functions: records, unit rows and review rows in, plain tables (lists of dicts) out; the I/O that
reads them lives in ``source.py``. Nothing here keeps its own count of anything: every figure is
recomputed from the same data ``dialeval export`` reads.
"""
from __future__ import annotations

import math
from collections import Counter, defaultdict

import numpy as np

from parlai_dialeval.crowdsourcing.platform.progress import UNIT_DONE, UNIT_IN_FLIGHT, UnitRow, unit_counts
from parlai_dialeval.providers.prolific.api import to_minor

# Prolific submission statuses whose reward is paid or promised (review.py's REVIEWABLE and the ones in work)
PAID = {"APPROVED"}
COMMITTED = {"AWAITING REVIEW", "ACTIVE", "PROCESSING", "PARTIALLY APPROVED"}


def _collected(record: dict) -> bool:
    """Work of the study itself: onboarding attempts are set aside, as every analysis does."""
    return not record.get("onboarding") and record.get("status") != "onboarding"


def group_of(record: dict) -> str | None:
    """The model (or pair, ``a vs b``) a conversation or comparison is about."""
    if record["type"] == "conversation":
        return " vs ".join(record.get("models") or []) or None
    if record["type"] == "comparison":
        return " vs ".join(sorted((record["model_a"], record["model_b"])))
    return None


def progress(records: list[dict], units: list[UnitRow], started: float | None, now: float,
             state: tuple[str | None, float | None] = ("running", None)) -> dict:
    """Units done / in flight / left, participants working now, median time per unit, and an estimated
    time to finish at the pace so far (units done per second since the run started; none once no launch
    serves the task). ``state``: platform/resume.launch_state's (running, stopped at, interrupted, unknown)."""
    launch, stopped_at = state
    counts = unit_counts(units)
    done_units = {u.unit_id for u in units if u.status in UNIT_DONE}
    seconds = unit_seconds(records, done_units)
    median = float(np.median(seconds)) if seconds else None
    eta = None
    if counts["left"] + counts["in_flight"] == 0:
        eta = 0.0
    elif counts["done"] and started is not None and now > started and launch == "running":
        eta = (counts["left"] + counts["in_flight"]) / (counts["done"] / (now - started))
    return {"done": counts["done"], "in_flight": counts["in_flight"], "left": counts["left"],
            "withdrawn": counts["withdrawn"], "total": len(units),
            "active": sorted({u.worker for u in units if u.status in UNIT_IN_FLIGHT and u.worker}),
            "median_unit_seconds": median, "eta_seconds": eta, "launch": launch, "stopped_at": stopped_at,
            "elapsed_seconds": None if started is None else max(0.0, (stopped_at or now) - started)}


def unit_seconds(records: list[dict], units: set[str]) -> list[float]:
    """Seconds each finished unit took: its ``assignment_duration`` where the task records one (live chat),
    else the sum of its records' ``duration``."""
    whole: dict[str, float] = {}
    parts: dict[str, float] = defaultdict(float)
    for record in records:
        unit = record.get("assignment_id")
        if unit not in units or not _collected(record):
            continue
        if record.get("assignment_duration") is not None:
            whole[unit] = float(record["assignment_duration"])
        elif record.get("duration") is not None and record["type"] in ("conversation", "comparison"):
            parts[unit] += float(record["duration"])
    return [whole.get(unit, parts.get(unit)) for unit in sorted(units) if unit in whole or unit in parts]


def per_group(records: list[dict], units: list[UnitRow]) -> list[dict]:
    """Per model (or pair): conversations or comparisons done, in flight (the one a participant working now is
    with), to come (planned for a participant working now, not reached yet), failed (a bot crashed) and dropped
    (returned, abandoned or never reached)."""
    in_flight = {u.unit_id for u in units if u.status in UNIT_IN_FLIGHT}
    current = _current_records(records, in_flight)
    table: dict[str, Counter] = defaultdict(Counter)
    for position, record in enumerate(records):
        group = group_of(record)
        if group is None or not _collected(record):
            continue
        status = record.get("status", "complete")
        if status == "complete":
            table[group]["done"] += 1
        elif status == "failed":
            table[group]["failed"] += 1
        elif position in current:
            table[group]["in_flight"] += 1
        elif record.get("assignment_id") in in_flight and _work_status(record) == "not started":
            table[group]["to_come"] += 1
        else:
            table[group]["dropped"] += 1
    return [{"group": group, **{k: table[group][k] for k in ("done", "in_flight", "to_come", "failed", "dropped")}}
            for group in sorted(table)]


def _current_records(records: list[dict], in_flight: set[str]) -> set[int]:
    """Positions of the record each unit in flight is at now: of its unfinished records that were reached, the one
    of the latest slot (live chat plans a unit's slots ahead; a half chat a relaunch restarted comes later in the
    list with the same slot, and is not current)."""
    best: dict[str, tuple[int, int]] = {}
    for position, record in enumerate(records):
        unit = record.get("assignment_id")
        if (unit not in in_flight or record["type"] != "conversation" or not _collected(record)
                or record.get("status") in ("complete", "failed") or _work_status(record) == "not started"):
            continue
        slot = record.get("slot") if isinstance(record.get("slot"), int) else 0
        if unit not in best or slot > best[unit][0]:
            best[unit] = (slot, position)
    return {position for _, position in best.values()}


def onboarding_tries(statuses: list[str]) -> int:
    """A worker's graded onboarding tries (a static task's onboarding gives one Mephisto attempt per try)."""
    return sum(status in ("approved", "rejected") for status in statuses)


def onboarding_result(statuses: list[str]) -> str:
    """A worker's onboarding from their attempts' Mephisto statuses (oldest first): passed when one was
    approved, failed when the last was rejected, else in progress or left."""
    if "approved" in statuses:
        return "passed"
    if statuses and statuses[-1] == "rejected":
        return "failed"
    return "in progress" if statuses and statuses[-1] in ("none", "onboarding", "in task", "waiting") else "left"


# a participant's assignments (the conversations' canonical ``submission``) -> where they stand, in words
SUBMISSION_STATES = {"submitted": "done", "working": "in progress", "returned": "did not finish: returned",
                     "disconnected": "did not finish: disconnected", "timed_out": "did not finish: timed out"}


def participant_state(submissions: set[str]) -> str:
    """``in progress`` while any of their assignments is held, else what became of each (``done``: submitted;
    ``did not finish: ...``); empty for tasks whose records say nothing of it."""
    if "working" in submissions:
        return SUBMISSION_STATES["working"]
    return ", ".join(SUBMISSION_STATES.get(s, s) for s in sorted(submissions, key=list(SUBMISSION_STATES).index))


def _work_status(record: dict) -> str:
    """What a record counts as in a participant's work: a live-chat slot never reached is ``not started``
    (still waiting for them), not ``incomplete``."""
    if not _collected(record):
        return "onboarding"
    status = record.get("status", "complete")
    if status == "incomplete" and (record.get("meta") or {}).get("reached") is False:
        return "not started"
    return status


def quality(checks, records: list[dict], onboarding: dict[str, list[str]] | None = None) -> list[dict]:
    """One row per participant: the task's own worker check (``checks``, the DataFrame of
    ``TaskSpec.worker_checks``; None for tasks without one), their onboarding (``onboarding``: worker ->
    their attempts' statuses; the result, and the tries: Mephisto's graded attempts or, where one attempt
    holds several tries (PW-Turn), the last ``meta.try`` of their onboarding records), where they stand
    (``state``: done, in progress, did not finish) and their work by status; failing ones first, then failed
    onboardings. A participant who did not submit has check ``did not submit``, never a failure."""
    work: dict[str, Counter] = defaultdict(Counter)
    tried: dict[str, int] = defaultdict(int)
    submissions: dict[str, set] = defaultdict(set)
    for record in records:
        if record["type"] in ("conversation", "comparison") and record.get("worker_id"):
            work[record["worker_id"]][_work_status(record)] += 1
            if record.get("submission") and _collected(record):
                submissions[record["worker_id"]].add(record["submission"])
            number = (record.get("meta") or {}).get("try") if not _collected(record) else None
            if isinstance(number, int):
                tried[record["worker_id"]] = max(tried[record["worker_id"]], number)
    onboarding = onboarding or {}
    rows = {worker: {"worker": worker, "check": "-", "p_value": None, "note": "", "work": dict(sorted(work[worker].items())),
                     "state": participant_state(submissions[worker]),
                     "onboarding": onboarding_result(onboarding[worker]) if worker in onboarding else "",
                     "onboarding_tries": max(onboarding_tries(onboarding.get(worker, [])), tried[worker])}
            for worker in set(work) | set(onboarding)}
    if checks is not None:
        for row in checks.to_dict("records"):
            worker = str(row["worker_id"])
            entry = rows.setdefault(worker, {"worker": worker, "work": {}, "state": "", "onboarding": "",
                                             "onboarding_tries": 0})
            p = row.get("p_value")
            entry.update(check="pass" if bool(row["passed"]) else "fail",
                         p_value=None if p is None or (isinstance(p, float) and math.isnan(p)) else float(p),
                         note=str(row.get("note") or ", ".join(str(v) for v in row.get("violations", []) or [])))
    order = {"fail": 0, "-": 1, "did not submit": 2, "pass": 3, "n/a": 4}
    for entry in rows.values():
        entry.setdefault("check", "-" if checks is not None else "n/a")
        entry.setdefault("p_value", None)
        entry.setdefault("note", "")
        if checks is None:
            entry["check"] = "n/a"
        elif entry["check"] == "-" and entry["state"].startswith("did not finish"):
            entry["check"] = "did not submit"  # nothing handed in to check
        elif entry["check"] == "-" and entry["state"] == SUBMISSION_STATES["working"]:
            entry["note"] = entry["note"] or "checked once they submit"
    return sorted(rows.values(), key=lambda r: (order[r["check"]], r["onboarding"] != "failed", r["worker"]))


def endpoints(records: list[dict]) -> list[dict]:
    """Per bot: replies, latency p50/p95 and time to first token p50/p95 (where recorded), failed conversations,
    tokens in and out (the turn ``meta`` the bots write, docs/crowdsourcing.md)."""
    latency: dict[str, list[float]] = defaultdict(list)
    first: dict[str, list[float]] = defaultdict(list)
    tokens: dict[str, Counter] = defaultdict(Counter)
    failed: Counter = Counter()
    replies: Counter = Counter()
    for record in records:
        if record["type"] != "conversation" or not _collected(record):
            continue
        if record.get("status") == "failed":
            failed[" vs ".join(record.get("models") or [])] += 1
        for turn in record.get("turns") or []:
            if turn.get("speaker") in ("human", None):
                continue
            meta, model = turn.get("meta") or {}, turn["speaker"]
            replies[model] += 1
            if isinstance(meta.get("latency"), (int, float)):
                latency[model].append(float(meta["latency"]))
            if isinstance(meta.get("first_token_latency"), (int, float)):
                first[model].append(float(meta["first_token_latency"]))
            for key in ("prompt_tokens", "completion_tokens"):
                if isinstance(meta.get(key), int):
                    tokens[model][key] += meta[key]

    def pct(values: list[float], q: float) -> float | None:
        return float(np.percentile(values, q)) if values else None

    return [{"model": m, "replies": replies[m], "latency_p50": pct(latency[m], 50), "latency_p95": pct(latency[m], 95),
             "first_token_p50": pct(first[m], 50), "first_token_p95": pct(first[m], 95), "failed": failed[m],
             "prompt_tokens": tokens[m]["prompt_tokens"], "completion_tokens": tokens[m]["completion_tokens"]}
            for m in sorted(set(replies) | set(failed))]


def too_slow(bots: list[dict], patience: float) -> list[str]:
    """A warning in words per bot whose replies keep people waiting longer than ``patience`` seconds one time in
    twenty (95th percentile): before the first word of a reply shows (streamed replies) or for the whole reply."""
    out = []
    for bot in bots:
        waits = [(what, bot[key]) for what, key in (("before its first word showed", "first_token_p95"),
                                                    ("to arrive in full", "latency_p95")) if bot.get(key) is not None]
        slow = [f"more than {value:.1f} s {what}" for what, value in waits if value > patience]
        if slow:
            out.append(f"{bot['model']} keeps people waiting too long: one reply in twenty took {' and '.join(slow)}, "
                       f"and people stop waiting after about {patience:g} s")
    return out


def money(review_rows: list[dict], studies: list[dict]) -> dict:
    """Spent and committed on Prolific from ``dialeval review``'s table (its rows) and the studies' reward:
    spent = approved submissions' rewards + bonuses paid; committed = rewards of submissions in work or
    awaiting review. Minor units (pence, cents), before Prolific's fees."""
    reward = {s["study_id"]: int(s.get("reward_minor") or 0) for s in studies}
    currency = sorted({s.get("currency") or "" for s in studies}) or [""]
    spent = sum(reward.get(r["study"], 0) for r in review_rows if r["prolific_status"] in PAID)
    bonuses = sum(to_minor(r["bonus_paid"]) for r in review_rows)
    committed = sum(reward.get(r["study"], 0) for r in review_rows if r["prolific_status"] in COMMITTED)
    by_status = Counter(r["prolific_status"] for r in review_rows)
    return {"currency": "/".join(currency), "rewards_paid_minor": spent, "bonuses_paid_minor": bonuses,
            "spent_minor": spent + bonuses, "committed_minor": committed, "by_status": dict(sorted(by_status.items()))}


def criteria_of(records: list[dict]) -> dict[str, dict]:
    """Criterion name -> its declaration in the study records (``positive``, ``min``, ``max`` ...)."""
    return {c["name"]: c for r in records if r["type"] == "study" for c in r.get("criteria") or [] if c.get("name")}


def bot_means(records: list[dict], alpha: float = 0.05) -> list[dict]:
    """Per criterion and bot: ratings so far, their mean and t interval (``analysis.intervals``). A
    negatively worded statement (``positive: false``) is reversed as the analyses reverse it (``min + max - x``)
    and named ``not <criterion>``, so higher is better everywhere. Ratings of work not yet submitted count:
    this is the running picture, the analysis keeps submitted assignments only. ``scale``: (min, max) where
    known."""
    from parlai_dialeval.analysis.intervals import t_interval

    declared = criteria_of(records)
    values: dict[tuple[str, str], list[float]] = defaultdict(list)
    scales: dict[str, tuple] = {}
    for record in records:
        if record["type"] != "rating" or record.get("onboarding") or not isinstance(record.get("value"), (int, float)):
            continue
        spec, value = declared.get(record["criterion"], {}), float(record["value"])
        low, high = spec.get("min", record.get("scale_min")), spec.get("max", record.get("scale_max"))
        scales.setdefault(record["criterion"], (low, high))
        if spec.get("positive") is False:
            if low is None or high is None:
                continue  # a reversed statement without its scale cannot be turned round
            value = float(low) + float(high) - value
        values[(record["criterion"], record["model"])].append(value)
    rows = []
    for (criterion, model), got in sorted(values.items()):
        low, high = t_interval(got, alpha)
        rows.append({"criterion": criterion, "label": f"not {criterion}" if declared.get(criterion, {}).get("positive")
                     is False else criterion, "model": model, "n": len(got), "mean": float(np.mean(got)),
                     "ci_low": None if math.isnan(low) else low, "ci_high": None if math.isnan(high) else high,
                     "scale": scales[criterion]})
    return rows


def win_rates(records: list[dict], alpha: float = 0.05) -> list[dict]:
    """Per pair (names sorted): wins of each, ties, and the first's win rate among decided comparisons with
    its Wilson interval (statsmodels); worker comparisons only (no onboarding, no automatic ties, none the arena
    voided: data.schema.VOIDED)."""
    from statsmodels.stats.proportion import proportion_confint

    from parlai_dialeval.data.schema import VOIDED

    table: dict[tuple[str, str], Counter] = defaultdict(Counter)
    for record in records:
        if record["type"] != "comparison" or record.get("onboarding") or record.get("automatic") or any(
                record.get(column) for column in VOIDED):
            continue
        first, second = sorted((record["model_a"], record["model_b"]))
        chosen = {"a": record["model_a"], "b": record["model_b"]}.get(record.get("choice"))
        table[(first, second)]["tie" if chosen is None else "first" if chosen == first else "second"] += 1
    rows = []
    for (first, second), n in sorted(table.items()):
        decided = n["first"] + n["second"]
        low, high = proportion_confint(n["first"], decided, alpha, method="wilson") if decided else (None, None)
        rows.append({"a": first, "b": second, "wins_a": n["first"], "wins_b": n["second"], "ties": n["tie"],
                     "win_rate_a": n["first"] / decided if decided else None, "ci_low": low, "ci_high": high,
                     "ahead": "" if low is None or low <= 0.5 <= high else first if low > 0.5 else second})
    return rows
