"""dialeval analyze_live_chat on small synthetic studies (workers who rate at random, a quality-control bot, several
studies in one file, incomplete conversations): every option, clear errors, this project's own live-chat exports
analysed without conversion (a leaver neither submitted nor failed quality control), and honest reports at the
edges (a handful of workers, the only worker failing quality control, quality control off)."""
from __future__ import annotations

import json
import random

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from parlai_dialeval.analysis.live_chat import LiveChatConfig, analyze
from parlai_dialeval.data import from_records, write_jsonl
from parlai_dialeval.errors import DialevalError
from parlai_dialeval.scripts.analyze_live_chat import run_analysis


CRITERIA = [{"name": n, "positive": n not in ("robotic", "repetitive"), "scale": "continuous", "min": 0,
             "max": 100, "question": n} for n in ["robotic", "interesting", "fun", "consistent", "fluent",
                                                   "repetitive", "topic"]]


QUALITY = {"good": 70, "fair": 55, "poor": 40}


def synthetic(workers: int = 12, hits: int = 1, bad_workers: tuple = (), seed: int = 0, qc: str = "degraded"):
    """Good workers rate by model quality (QC bot lowest); 'bad' workers rate at random."""
    rng = random.Random(seed)
    records = [{"type": "study", "name": "demo", "criteria": CRITERIA, "qc_models": [qc]}]
    for w in range(workers):
        worker = f"W{w}"
        for h in range(hits):
            assignment = f"{worker}-A{h}"
            for slot, name in enumerate(["good", "fair", qc, "poor"]):
                cid = f"{assignment}-{slot}"
                records.append({"type": "conversation", "study": "demo", "id": cid, "models": [name],
                                "worker_id": worker, "assignment_id": assignment, "hit_id": f"H{h}",
                                "slot": slot, "task": "live_chat_da", "topic_attitude": "like",
                                "assignment_duration": 600.0, "duration": 120.0,
                                "turns": [{"speaker": "human", "text": "hello there friend"},
                                          {"speaker": name, "text": "hi"}]})
                for c in CRITERIA:
                    level = QUALITY.get(name, 10)
                    value = rng.uniform(0, 100) if w in bad_workers else min(100, max(0, rng.gauss(level, 8)))
                    if not c["positive"]:
                        value = 100 - value  # negatively worded: a good bot gets a low rating
                    records.append({"type": "rating", "study": "demo", "conversation_id": cid, "worker_id": worker,
                                    "model": name, "criterion": c["name"], "scale": "continuous",
                                    "scale_min": 0, "scale_max": 100, "value": round(value, 1),
                                    "assignment_id": assignment})
    return records


def test_failing_workers_are_removed_whole_and_models_ranked():
    result = analyze(from_records(synthetic(bad_workers=(0, 1))), LiveChatConfig(seed=1))
    workers = result.workers.set_index("worker_id")
    assert not workers.loc["W0", "passed"] and not workers.loc["W1", "passed"]
    assert workers["passed"].sum() == 10
    assert result.system_scores["model"].tolist() == ["good", "fair", "poor"]
    assert (result.system_scores["n"] == 10 * 7).all()  # failing workers' ratings all gone
    assert list(result.system_scores.columns[3:]) == ["interesting", "fun", "consistent", "fluent", "topic",
                                                      "robotic", "repetitive"]
    # reversal: the good model's reversed robotic score is high, like its positive statements
    raw = result.system_scores_raw.set_index("model")
    assert raw.loc["good", "robotic"] > 60 and raw.loc["poor", "robotic"] < 50


def test_a_criterion_named_overall_is_kept_beside_the_mean_of_all():
    """FED's dialogue-level question is called "overall", the name of the reports' mean of all statements:
    analyze_live_chat stopped with pandas' "cannot insert overall, already exists" on the FED data."""
    records = synthetic()
    for record in records:
        if record["type"] == "rating" and record["criterion"] == "fun":
            record["criterion"] = "overall"
    records[0]["criteria"] = [{**c, "name": "overall"} if c["name"] == "fun" else c for c in CRITERIA]
    result = analyze(from_records(records), LiveChatConfig(seed=1))
    scores = result.system_scores.set_index("model")
    assert "overall (rated)" in scores.columns and "fun" not in scores.columns
    criteria = [c for c in scores.columns if c not in ("n", "overall")]
    assert scores["overall"].to_numpy() == pytest.approx(scores[criteria].mean(axis=1).to_numpy())
    assert result.system_scores["model"].tolist() == ["good", "fair", "poor"]


def test_options_change_each_step():
    data = from_records(synthetic(bad_workers=(0,)))
    off = analyze(data, LiveChatConfig(qc_test="none"))
    assert off.summary["n_workers_passed"] == 12
    strict = analyze(data, LiveChatConfig(qc_alpha=1e-12))
    assert strict.summary["n_workers_passed"] < 12
    unreversed = analyze(data, LiveChatConfig(reverse=False)).system_scores_raw.set_index("model")
    assert unreversed.loc["good", "robotic"] < 40
    only = analyze(data, LiveChatConfig(criteria=["fun", "robotic"], negative=[]))
    assert list(only.system_scores.columns) == ["model", "n", "overall", "fun", "robotic"]
    raw = analyze(data, LiveChatConfig(standardise=False)).system_scores.set_index("model")
    assert 60 < raw.loc["good", "overall"] < 80
    ordered = analyze(data, LiveChatConfig(order=["poor", "good"]))
    assert ordered.system_scores["model"].tolist() == ["poor", "good", "fair"]
    corrected = analyze(data, LiveChatConfig(correction="holm"))
    assert (corrected.significance["p_adjusted"] >= corrected.significance["p_value"]).all()
    welch = analyze(data, LiveChatConfig(qc_test="ttest", sig_test="ttest"))
    assert welch.summary["n_workers_passed"] >= 10
    by_hit = analyze(data, LiveChatConfig(agreement_by="hit"))
    assert by_hit.agreement["stats"].set_index("workers").loc["passed", "pairs"] == 11 * 10 // 2


def test_clear_errors_for_missing_qc_bot_and_several_studies():
    records = [r for r in synthetic() if r.get("model") != "degraded"]
    with pytest.raises(DialevalError, match="no ratings of the quality-control model"):
        analyze(from_records(records))
    assert analyze(from_records(records), LiveChatConfig(qc_test="none")).summary["n_workers_passed"] == 12
    other = [dict(r, study="other") if r["type"] != "study" else dict(r, name="other") for r in synthetic()]
    for record in other:  # the other study's conversations have their own ids (repeated ids are refused)
        for key in ("id", "conversation_id"):
            if key in record:
                record[key] = "other-" + record[key]
    with pytest.raises(DialevalError, match="several studies"):
        analyze(from_records(synthetic() + other))
    assert analyze(from_records(synthetic() + other), LiveChatConfig(study="other")).summary["study"] == "other"


def _two_studies():
    other = [dict(r, study="other") if r["type"] != "study" else dict(r, name="other") for r in synthetic()]
    for record in other:
        for key in ("id", "conversation_id"):
            if key in record:
                record[key] = "other-" + record[key]
    return synthetic(), other


def test_ratings_naming_no_study_are_not_dropped_when_the_data_hold_several():
    # A file whose ratings omit `study` (their conversations name it) beside another study: the ratings
    # were silently left out of --study (fewer workers and ratings, other scores). They take their
    # conversation's study; where nothing names one, the analysis refuses instead of guessing.
    mine, other = _two_studies()
    study = mine[0]["name"]
    whole = analyze(from_records(mine + other), LiveChatConfig(study=study))
    unnamed = [{k: v for k, v in r.items() if not (r["type"] == "rating" and k == "study")} for r in mine]
    result = analyze(from_records(unnamed + other), LiveChatConfig(study=study))
    assert result.summary["n_ratings"] == whole.summary["n_ratings"] == len(
        [r for r in mine if r["type"] == "rating"])
    pd.testing.assert_frame_equal(result.system_scores, whole.system_scores)
    orphan = [{k: v for k, v in r.items() if k != "study"} if r["type"] != "study" else r for r in mine]
    with pytest.raises(DialevalError, match="name no study"):
        analyze(from_records(orphan + other), LiveChatConfig(study=study))


def test_incomplete_conversations_are_left_out_and_counted():
    records = synthetic()
    for record in records:
        if record["type"] == "conversation" and record["id"] == "W3-A0-0":
            record["status"] = "incomplete"
    result = analyze(from_records(records))
    assert result.summary["n_dialogues"] == 12 * 3 - 1
    assert any("not complete" in note for note in result.notes)


def _live_chat_units(workers: int = 10, bad: tuple = (0,), seed: int = 0):
    """Units as this project's live-chat task records them (``LiveChatSession``, live_chat_da/protocol.py)."""
    from parlai_dialeval.crowdsourcing.live_chat_da.criteria import CRITERION_NAMES
    from parlai_dialeval.crowdsourcing.platform.export import UnitData

    rng = random.Random(seed)
    units = []
    names = list(CRITERION_NAMES)
    for w in range(workers):
        conversations = []
        for slot, (model_name, qc) in enumerate([("blender", False), ("tfidf", False), ("qc_bot", True),
                                                 ("hf_lm", False)]):
            level = {"blender": 75, "tfidf": 50, "hf_lm": 35, "qc_bot": 10}[model_name]
            turns = []
            for i in range(10):
                turns += [{"speaker": "human", "text": f"message number {i} from me", "time": 1000.0 + i},
                          {"speaker": model_name, "text": "a reply", "time": 1000.5 + i}]
            ratings = {}
            for name in names:
                value = rng.uniform(0, 100) if w in bad else min(100.0, max(0.0, rng.gauss(level, 8)))
                ratings[name] = 100 - value if name in ("robotic", "repetitive") else value
            conversations.append({"slot": slot, "model": model_name, "qc": qc, "status": "complete", "turns": turns,
                                  "topic": "dogs", "topic_attitude": rng.choice(["like", "dislike"]),
                                  "persona": None, "topic_changes": [], "started": 0.0, "ended": 300.0,
                                  "ratings": ratings, "rating_started": 300.0, "rating_ended": 330.0, "error": None})
        # the last worker returned the HIT after two conversations
        if w == workers - 1:
            for conv in conversations[2:]:
                conv.update(status="incomplete", ratings=None)
        world = {"dialeval_task": "live_chat_da", "started": 0.0, "ended": 1500.0, "qc_models": ["qc_bot"],
                 "feedback": "fine", "conversations": conversations, "min_inputs": 10}
        units.append(UnitData(worker_id=f"worker{w}", mephisto_worker_id=str(w), unit_id=f"u{w}",
                              assignment_id=f"a{w}", task_run_id="1", agent_id=str(w), agent_status="completed",
                              state={}, task_start=0.0, task_end=1500.0, files={"dialeval_live_chat.json": world}))
    return units


def test_export_of_this_projects_live_chat_task_is_analysed_without_conversion(tmp_path):
    from parlai_dialeval.crowdsourcing.live_chat_da.export import export_units

    records = export_units(_live_chat_units(), "live_chat_pilot").records
    path = tmp_path / "export.jsonl"
    write_jsonl(records, path)
    out = tmp_path / "out"
    summary = run_analysis({"data": [str(path)], "out": str(out)}, log=lambda *_: None)
    assert summary["study"] == "live_chat_pilot"
    # worker0 rated at random; worker9 returned the HIT before reaching the QC bot: nothing to test
    assert summary["n_workers"] == 10 and summary["n_workers_passed"] == 8
    workers = pd.read_csv(out / "workers.csv").set_index("worker_id")
    assert not workers.loc["worker0", "passed"] and not workers.loc["worker9", "passed"]
    assert summary["n_dialogues"] == 9 * 3 + 2
    scores = pd.read_csv(out / "system_scores.csv")
    assert scores["model"].tolist() == ["blender", "tfidf", "hf_lm"]
    assert list(scores.columns) == ["model", "n", "overall", "interesting", "fun", "consistent", "fluent", "topic",
                                    "robotic", "repetitive"]
    assert json.loads((out / "summary.json").read_text())["durations"][0]["mean_minutes_per_conversation_measured"] == 5


def test_a_worker_who_disconnected_did_not_submit_and_did_not_fail_quality_control(tmp_path):
    """Issue 40 item 1: worker9 rated one chat and disconnected (Mephisto ``disconnect``); before, the report
    counted 10 workers who submitted, 8 passing, and workers.csv had ``worker9,1,7,,False``."""
    from parlai_dialeval.crowdsourcing.live_chat_da.export import export_units

    units = _live_chat_units()
    units[-1].agent_status = "disconnect"
    units[-1].files["dialeval_live_chat.json"]["conversations"][1].update(status="incomplete", ratings=None)
    records = export_units(units, "live_chat_pilot").records
    path = tmp_path / "export.jsonl"
    write_jsonl(records, path)
    out = tmp_path / "out"
    summary = run_analysis({"data": [str(path)], "out": str(out)}, log=lambda *_: None)
    assert (summary["n_workers"], summary["n_workers_passed"], summary["n_assignments"]) == (9, 8, 9)
    assert summary["assignments_not_submitted"] == {"disconnected": 1} and summary["n_workers_not_submitted"] == 1
    workers = pd.read_csv(out / "workers.csv", keep_default_na=False).set_index("worker_id")
    assert workers.loc["worker9"].to_dict() == {"n_hits": 0, "n_hits_not_submitted": 1, "n_ratings": 0,
                                                "p_value": "", "passed": "", "outcome": "did not submit: disconnected"}
    assert workers.loc["worker0", "outcome"] == "failed quality control"
    assert (workers["outcome"] == "passed quality control").sum() == 8
    assert summary["n_dialogues"] == 9 * 3  # worker9's rated chat is not analysed
    html = (out / "report.html").read_text()
    assert "assignments (HITs) not submitted: disconnected" in html and "9 workers submitted 9 assignments" in html
    table1 = json.loads((out / "summary.json").read_text())["durations"]
    assert {row["workers"]: row["hits"] for row in table1} == {"passed": 8, "failed": 1, "all": 9}


def test_small_sample_report_is_honest(tmp_path):
    # Issue 18 item 8: two passing conversations per model. Before: a 1.96 x SD / sqrt(n) interval in the plot
    # only, n counting ratings, no correction by default, a blank heatmap when nothing is significant.
    from parlai_dialeval.analysis.intervals import t_interval
    from parlai_dialeval.data import write_jsonl

    path = tmp_path / "tiny.jsonl"
    write_jsonl(synthetic(workers=2, seed=3), path)
    out = tmp_path / "out"
    run_analysis({"data": [str(path)], "out": str(out), "qc_test": "none"}, log=lambda *_: None)
    intervals = pd.read_csv(out / "overall_intervals.csv").set_index("model")
    assert (intervals["unit"] == "conversation").all() and (intervals["n_conversations"] == 2).all()
    conversations = analyze(from_records(synthetic(workers=2, seed=3)), LiveChatConfig(qc_test="none")).conversations
    good = conversations[(conversations["model"] == "good")]["overall_z"].to_numpy()
    low, high = t_interval(good)
    assert (intervals.loc["good", "ci_low"], intervals.loc["good", "ci_high"]) == pytest.approx((low, high))
    # t with 1 degree of freedom: 12.7 / 1.96 = 6.5 times the normal interval's half-width
    normal = 1.96 * good.std(ddof=1) / np.sqrt(2)
    assert (high - low) / 2 == pytest.approx(normal * stats.t.ppf(0.975, 1) / 1.96)
    significance = pd.read_csv(out / "significance.csv")
    assert (significance[["n_a", "n_b"]] == 2).all().all()
    assert (significance["p_adjusted"] >= significance["p_value"]).all()
    html = (out / "report.html").read_text()
    assert "Holm" in html and "fewer than 5 passing conversations" in html
    assert "so there is no heatmap" in html and not (out / "significance.png").exists()
    assert "no pair can reach p &lt; 0.1: the smallest possible one-sided Mann-Whitney p here is 0.167" in html
    assert "col_0" not in html and "<th></th>" not in html
    assert "Unnamed" not in pd.read_csv(out / "correlations.csv").columns[0]


def test_report_names_reversed_statements_and_draws_no_empty_agreement_plot(tmp_path):
    """Issue 40 item 4: 'robotic 28' meant not robotic; with one worker the 'Rater agreement' plot was an
    empty chart. Now the report's columns say 'not robotic' (the CSV keeps 'robotic') and a sentence
    replaces the empty plot."""
    out = tmp_path / "out"
    path = tmp_path / "one_worker.jsonl"
    write_jsonl(synthetic(workers=1), path)
    run_analysis({"data": [str(path)], "out": str(out)}, log=lambda *_: None)
    html = (out / "report.html").read_text()
    assert "<th>not robotic</th>" in html and "<th>not repetitive</th>" in html and "<th>robotic</th>" not in html
    assert "robotic" in pd.read_csv(out / "system_scores.csv").columns
    assert "No rater agreement to show" in html and not (out / "rater_agreement.png").exists()


def test_the_figures_read_alike_for_the_colour_blind_and_in_greyscale():
    """Issue 40: the significance heatmap went from green to yellow (confused under deuteranopia, and
    nearly one grey in print). Now darker means smaller p in luminance itself (WCAG relative luminance,
    written out here), and the agreement histogram's two groups differ by hatching as well as colour."""
    import numpy as np
    from matplotlib.colors import to_rgb

    from parlai_dialeval.analysis import live_chat_plots

    def lum(colour):
        c = [v / 12.92 if v <= 0.03928 else ((v + 0.055) / 1.055) ** 2.4 for v in to_rgb(colour)[:3]]
        return 0.2126 * c[0] + 0.7152 * c[1] + 0.0722 * c[2]

    shades = [lum(live_chat_plots.SIG_CMAP(x)) for x in np.linspace(0, 1, 11)]
    assert all(a < b for a, b in zip(shades, shades[1:])) and shades[-1] - shades[0] > 0.5
    fig = live_chat_plots.agreement_histogram(np.array([0.5, 0.6, 0.7]), np.array([-0.1, 0.0]))
    hatches = {patch.get_hatch() for patch in fig.axes[0].patches}
    assert hatches == {None, "//"} or hatches == {"", "//"}


def _report_text(result, tmp_path) -> tuple[str, str]:
    """(the verdict, the whole report) as text, tags and runs of spaces gone."""
    import re

    from parlai_dialeval.scripts.analyze_live_chat import build_report

    report = build_report(result, tmp_path)
    words = re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", report.render()))
    return " ".join(report.verdicts), words


def test_the_verdict_when_the_only_worker_fails_quality_control_says_why(tmp_path):
    # Issue 50 item 4: "No model has a overall (mean per-conversation z of passing workers) yet." with no reason
    result = analyze(from_records(synthetic(workers=1, bad_workers=(0,), seed=3)))
    assert not result.workers["passed"].any()
    verdict, words = _report_text(result, tmp_path)
    assert verdict == ("No model has a score for overall (mean per-conversation z of passing workers) yet: no worker "
                       "passed quality control (the 1 who submitted all failed it: Worker quality control below "
                       "says why).")
    assert "nan" not in words and " a overall" not in words


def test_the_report_with_quality_control_off_has_no_nan_and_no_pass_count(tmp_path):
    # Issue 50 item 4, --qc-test none with one worker: "95% interval nan to nan" (one conversation a model),
    # "quality control off" beside "1 workers (100.0%) passed quality control", and a "(they fail)" table listing
    # "quality control off: 1"
    result = analyze(from_records(synthetic(workers=1)), LiveChatConfig(qc_test="none"))
    verdict, words = _report_text(result, tmp_path)
    assert verdict.startswith("Best overall (mean per-conversation z of all workers): good (") and \
        "; no interval from one conversation)" in verdict
    assert "nan" not in words and "passed quality control" not in words and "they fail" not in words
    assert "Quality control is off (--qc-test none): no worker was checked" in words
    assert result.outcomes["outcome"].tolist() == ["not checked (quality control off)"]
