"""`--judge F.jsonl` on the analysis commands: a judge file written here (canonical records with worker
`judge:...`, as `dialeval judge` writes them) on every prompt of a real ChatEval comparison, people's
votes on half of the prompts. Figures are recomputed here from the records."""
from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from parlai_dialeval.cli import main
from parlai_dialeval.data.dataset import write_jsonl
from parlai_dialeval.importers import load

FOLDER = "AMT_NCM_Test_NCM_Cakechat"
SCORE = {"a": 1.0, "b": 0.0, "tie": 0.5}


def _files(shared_data, tmp_path, agreement: float, seed: int = 0):
    records = list(load([shared_data / "chateval" / "amt_ab_2018" / FOLDER], log=None).records())
    studies = [r for r in records if r["type"] == "study"]
    votes = [r for r in records if r["type"] == "comparison" and not r.get("automatic")]
    items = sorted({r["item_id"] for r in votes})
    people_items = set(items[: len(items) // 2])
    rng = np.random.default_rng(seed)
    judge = []
    for item in items:
        mine = [r for r in votes if r["item_id"] == item]
        mean = np.mean([SCORE[r["choice"]] for r in mine])
        majority = "a" if mean > 0.5 else "b" if mean < 0.5 else str(rng.choice(["a", "b"]))
        other = {"a": "b", "b": "a"}[majority]
        record = {k: v for k, v in mine[0].items() if k not in ("assignment_id", "meta")}
        judge.append({**record, "worker_id": "judge:simulated",
                      "choice": majority if rng.random() < agreement else other})
    human_file, judge_file = tmp_path / f"human{seed}.jsonl", tmp_path / f"judge{seed}.jsonl"
    write_jsonl(studies + [r for r in votes if r["item_id"] in people_items], human_file)
    write_jsonl(studies + judge, judge_file)
    return human_file, judge_file, votes, judge, people_items


def test_analyze_pairwise_reports_ppi_next_to_human_only(shared_data, tmp_path):
    human_file, judge_file, votes, judge, people_items = _files(shared_data, tmp_path, 0.9)
    out = tmp_path / "out"
    assert main(["analyze_pairwise", "--data", str(human_file), "--judge", str(judge_file), "--out", str(out),
                 "--bootstrap-rounds", "20"]) == 0
    row = pd.read_csv(out / "ppi_win_rates.csv").iloc[0]
    # By hand: people's votes on their items (model_a = NCM), the judge's answer per item.
    answer = {r["item_id"]: SCORE[r["choice"]] for r in judge}
    mine = [r for r in votes if r["item_id"] in people_items]
    y = np.array([SCORE[r["choice"]] for r in mine])
    f = np.array([answer[r["item_id"]] for r in mine])
    f_u = np.array([answer[i] for i in answer if i not in people_items])
    assert (row["model_a"], row["human_judgments"], row["judge_only"]) == ("NCM", len(y), len(f_u))
    assert row["clusters"] == len(people_items)
    assert row["human"] == pytest.approx(y.mean())
    lam = row["judge_weight"]
    assert 0.1 < lam <= 1  # about half the slope of the prompt-mean vote on the judge (as many judge-only prompts)
    assert row["ppi"] == pytest.approx(lam * f_u.mean() + np.mean(y - lam * f))
    # Human-only interval: t over prompts of the votes' sums around the mean (cluster-robust), by hand.
    from scipy import stats

    prompts = [r["item_id"] for r in mine]
    sums = pd.Series(y - y.mean()).groupby(prompts).sum().to_numpy()
    g = len(sums)
    se = np.sqrt(np.sum(sums ** 2) / len(y) ** 2 * g / (g - 1))
    assert row["human_ci_high"] - row["human_ci_low"] == pytest.approx(2 * stats.t.ppf(0.975, g - 1) * se)
    assert row["ppi_ci_high"] - row["ppi_ci_low"] < row["human_ci_high"] - row["human_ci_low"]
    assert row["effective_human_judgments"] > len(y)
    summary = json.loads((out / "agreement.json").read_text())
    assert summary["judge"]["win_rates"]["judge_set_aside"] == 0
    bt = pd.read_csv(out / "ppi_bradley_terry.csv").set_index("model")
    assert bt["bt_ppi"].sum() == pytest.approx(0, abs=1e-9)
    # Two models: log-strength difference = logit of the vote share (ties as half a win) for people alone.
    share = y.mean()
    assert bt.loc["NCM", "bt_human"] - bt.loc["Cakechat", "bt_human"] == pytest.approx(np.log(share / (1 - share)))
    assert "prediction-powered" in (out / "report.html").read_text()


def test_a_judge_unrelated_to_people_is_set_aside_and_the_report_says_so(shared_data, tmp_path):
    human_file, judge_file, *_ = _files(shared_data, tmp_path, 0.5, seed=3)
    out = tmp_path / "useless"
    assert main(["analyze_pairwise", "--data", str(human_file), "--judge", str(judge_file), "--out", str(out),
                 "--bootstrap-rounds", "20"]) == 0
    row = pd.read_csv(out / "ppi_win_rates.csv").iloc[0]
    assert row["judge_weight"] < 0.05
    assert row["ppi_ci_high"] - row["ppi_ci_low"] == pytest.approx(row["human_ci_high"] - row["human_ci_low"],
                                                                 rel=0.03)
    assert "judge set aside" in row["note"]
    assert "The judge was set aside" in (out / "report.html").read_text()


def test_a_judge_file_holding_peoples_votes_is_refused(shared_data, tmp_path, capsys):
    human_file, *_ = _files(shared_data, tmp_path, 0.9)
    assert main(["analyze_pairwise", "--data", str(human_file), "--judge", str(human_file),
                 "--out", str(tmp_path / "x")]) != 0
    assert "judge:<judge name>" in capsys.readouterr().err


def _sm_records(seed: int = 5):
    """Two models, 60 conversations each; people rate conversations 0-29 (SM-Turn ticks on 6 bot turns
    and an SM-Dialog Likert score), the judge rates all 60 with a noisy view of the same latent quality;
    one human rating per model (conversation 0, turn 1, humanlike) has no judge rating."""
    rng = np.random.default_rng(seed)
    human, judge = [], []
    for model, base in (("good", 0.7), ("bad", 0.45)):
        for c in range(60):
            conv = f"{model}-{c}"
            human.append({"type": "conversation", "id": conv, "models": [model], "worker_id": f"w{c % 7}",
                          "turns": [{"speaker": "human" if i % 2 == 0 else model, "text": f"t{i}"} for i in range(12)]})
            quality = float(np.clip(base + rng.normal(0, 0.2), 0.02, 0.98))
            for criterion in ("engaging", "humanlike"):
                for turn in range(1, 12, 2):
                    tick = int(rng.random() < quality)
                    record = {"type": "rating", "conversation_id": conv, "model": model, "criterion": criterion,
                              "scale": "binary", "scale_min": 0, "scale_max": 1, "turn_index": turn}
                    if c < 30:
                        human.append({**record, "worker_id": f"w{c % 7}", "value": tick})
                    if not (c == 0 and turn == 1 and criterion == "humanlike"):
                        seen = tick if c < 30 and rng.random() < 0.8 else int(rng.random() < quality)
                        judge.append({**record, "worker_id": "judge:sim", "value": seen})
                likert = {"type": "rating", "conversation_id": conv, "model": model, "criterion": criterion,
                          "scale": "likert", "scale_min": 1, "scale_max": 5}
                score = int(np.clip(round(1 + 4 * quality + rng.normal(0, 0.6)), 1, 5))
                if c < 30:
                    human.append({**likert, "worker_id": f"w{c % 7}", "value": score})
                judge.append({**likert, "worker_id": "judge:sim",
                              "value": int(np.clip(round(1 + 4 * quality + rng.normal(0, 0.6)), 1, 5))})
    return human, judge


def test_analyze_single_model_reports_ppi_means(tmp_path):
    human, judge = _sm_records()
    human_file, judge_file = tmp_path / "sm.jsonl", tmp_path / "sm_judge.jsonl"
    write_jsonl(human, human_file)
    write_jsonl([r for r in human if r["type"] == "conversation"] + judge, judge_file)
    out = tmp_path / "sm"
    assert main(["analyze_single_model", "--data", str(human_file), "--judge", str(judge_file), "--out", str(out),
                 "--n-boot", "20"]) == 0
    table = pd.read_csv(out / "ppi_means.csv")
    assert len(table) == 8  # 2 measures x 2 models x 2 criteria
    for row in table.itertuples():
        binary = row.measure.startswith("sm_turn")
        pick = lambda r: (r["type"] == "rating" and r["model"] == row.model  # noqa: E731
                          and r["criterion"] == row.criterion and (r["scale"] == "binary") == binary)
        key = lambda r: (r["conversation_id"], r.get("turn_index"))  # noqa: E731
        answers = {key(r): r["value"] for r in judge if pick(r)}
        mine = [r for r in human if pick(r)]
        y = np.array([r["value"] for r in mine if key(r) in answers], float)
        f = np.array([answers[key(r)] for r in mine if key(r) in answers], float)
        rated = {key(r) for r in mine}
        f_u = np.array([v for k, v in answers.items() if k not in rated], float)
        assert (row.human_judgments, row.judge_only, row.clusters) == (len(y), len(f_u), 30)
        assert row.human_unjudged == (1 if binary and row.criterion == "humanlike" else 0)
        assert row.human == pytest.approx(y.mean())
        assert row.ppi == pytest.approx(row.judge_weight * f_u.mean() + np.mean(y - row.judge_weight * f))
        assert row.judge_weight > 0.05 and row.effective_human_judgments > row.human_judgments
    assert "prediction-powered means" in (out / "report.html").read_text()


def test_certify_adds_ppi_win_rates_and_keeps_its_claims_human_only(shared_data, tmp_path):
    human_file, judge_file, votes, judge, people_items = _files(shared_data, tmp_path, 0.9)
    with_judge, without = tmp_path / "with", tmp_path / "without"
    assert main(["certify", "--data", str(human_file), "--judge", str(judge_file), "--out", str(with_judge)]) == 0
    assert main(["certify", "--data", str(human_file), "--out", str(without)]) == 0
    pd.testing.assert_frame_equal(pd.read_csv(with_judge / "pairs.csv"), pd.read_csv(without / "pairs.csv"))
    rates = pd.read_csv(with_judge / "ppi_win_rates.csv")
    analysed = tmp_path / "pairwise"
    assert main(["analyze_pairwise", "--data", str(human_file), "--judge", str(judge_file), "--out", str(analysed),
                 "--bootstrap-rounds", "20"]) == 0
    pd.testing.assert_frame_equal(rates, pd.read_csv(analysed / "ppi_win_rates.csv"))
    assert "not at every look" in (with_judge / "report.html").read_text()
    certified = pd.read_csv(with_judge / "ppi_certified.csv").iloc[0]
    # By hand: the judge's pool is every prompt, people's clusters are their prompts (model_a: the first name)
    answer = {r["item_id"]: SCORE[r["choice"]] if r["model_a"] == "Cakechat" else 1 - SCORE[r["choice"]]
              for r in judge}
    mine = pd.DataFrame([r for r in votes if r["item_id"] in people_items])
    share = np.where(mine["model_a"] == "Cakechat", mine["choice"].map(SCORE), 1 - mine["choice"].map(SCORE))
    assert (certified["model_a"], certified["model_b"]) == ("Cakechat", "NCM")
    assert (certified["units"], certified["judge_pool"]) == (len(people_items), len(answer))
    assert certified["judge_mean"] == pytest.approx(np.mean(list(answer.values())))
    assert certified["human_mean"] == pytest.approx(pd.Series(share).groupby(mine["item_id"]).mean().mean())
    assert certified["threshold"] == pytest.approx(2 / 0.05)
    assert 0 < certified["judge_weight"] <= 1
    assert "valid at every look" in (with_judge / "report.html").read_text()


def test_plan_measures_the_judge_on_a_pilot(shared_data, tmp_path):
    from parlai_dialeval.adaptive import ppi_planning

    human_file, judge_file, votes, judge, people_items = _files(shared_data, tmp_path, 0.8, seed=1)
    out = tmp_path / "plan"
    assert main(["plan", "--out", str(out), "--simulations", "10", "--pilot", str(human_file),
                 "--judge", str(judge_file)]) == 0
    # By hand: per pilot prompt its mean vote for model_a of the records and the judge's answer
    answer = {r["item_id"]: SCORE[r["choice"]] if r["model_a"] == "NCM" else 1 - SCORE[r["choice"]] for r in judge}
    frame = pd.DataFrame([r for r in votes if r["item_id"] in people_items])
    frame["y"] = np.where(frame["model_a"] == "NCM", frame["choice"].map(SCORE), 1 - frame["choice"].map(SCORE))
    mean = frame.groupby("item_id")["y"].mean()
    f = mean.index.map(answer).to_numpy(float)
    decided = mean.to_numpy() != 0.5
    agreement = np.mean((mean.to_numpy()[decided] > 0.5) == (f[decided] > 0.5))
    rho = np.corrcoef(mean.to_numpy(), f)[0, 1]
    plan = pd.read_csv(out / "judge_plan.csv")
    fixed = pd.read_csv(out / "pairwise_plan.csv").query("design == 'fixed'")
    assert len(plan) == len(fixed)
    row, first = plan.iloc[0], fixed.iloc[0]
    assert row["judge_agreement"] == pytest.approx(agreement)
    assert row["judge_correlation"] == pytest.approx(rho)
    assert row["share_of_human_only"] == pytest.approx(ppi_planning.human_share(rho, 5, first["items"]))
    assert row["judgments"] < first["judgments"]
    report = (out / "report.html").read_text()
    assert "measured on the pilot" in report
    # the pilot's own PPI++ gain: the judge answered the other 100 prompts too, so it is above 1
    from parlai_dialeval.adaptive.ppi_pairwise import win_rates

    pilot = win_rates(load([human_file], log=None).comparisons, load([judge_file], log=None).comparisons).iloc[0]
    gain = pilot["effective_human_judgments"] / pilot["human_judgments"]
    assert gain > 1 and f"with {gain:.2f} times the pilot" in report
    assert main(["plan", "--out", str(out), "--judge", str(judge_file)]) != 0  # a judge needs a pilot


def test_people_who_recorded_no_question_meet_the_judge_dialeval_judge_wrote(tmp_path):
    """ChatEval-style A/B votes record no question; `dialeval judge` answers each item under the protocol's wording.
    PPI win rates, certify --judge and plan --judge matched on the wording and found no person on a judged item
    (every figure empty, the plan refused). Votes: a seeded generator here; figures recomputed from the records."""
    rng = np.random.default_rng(3)
    strength = {"m1": 0.7, "m2": 0.4, "m3": 0.55}
    pairs = [("m1", "m2"), ("m1", "m3"), ("m2", "m3")]
    votes = []
    for n in range(240):
        a, b = pairs[n % 3]
        item = n % 60
        votes.append({"type": "comparison", "item_id": f"{a}-{b}/p{item}", "worker_id": f"w{n % 12}",
                      "assignment_id": f"as{n}", "model_a": a, "model_b": b, "duration": 8.0,
                      "choice": "a" if rng.random() < strength[a] / (strength[a] + strength[b]) else "b",
                      "context": f"prompt {item}", "response_a": f"reply of {a} {item}",
                      "response_b": f"reply of {b} {item}"})
    human = tmp_path / "ab.jsonl"
    write_jsonl(votes, human)
    rules = tmp_path / "judge.json"
    rules.write_text(json.dumps({"rules": [{"match": "Response A: reply of m1", "reply": "A"},
                                           {"match": "Response B: reply of m1", "reply": "B"}], "default": "A"}))
    judge = tmp_path / "judge.jsonl"
    assert main(["judge", "--data", str(human), "--protocol", "ab", "--judge", f"script:{rules}",
                 "--out", str(judge)]) == 0
    out = tmp_path / "pairwise"
    assert main(["analyze_pairwise", "--data", str(human), "--judge", str(judge), "--out", str(out),
                 "--bootstrap-rounds", "20"]) == 0
    rates = pd.read_csv(out / "ppi_win_rates.csv")
    assert set(rates["question"]) == {"Which response is the better next utterance in this conversation?"}
    frame = pd.DataFrame(votes)
    for row in rates.itertuples():
        mine = frame[((frame["model_a"] == row.model_a) & (frame["model_b"] == row.model_b))
                     | ((frame["model_a"] == row.model_b) & (frame["model_b"] == row.model_a))]
        share = np.where(mine["model_a"] == row.model_a, mine["choice"].map(SCORE), 1 - mine["choice"].map(SCORE))
        assert (row.human_judgments, row.human_unjudged) == (len(mine), 0)
        assert row.human == pytest.approx(share.mean())
        assert np.isfinite(row.ppi)
    certified = tmp_path / "certified"
    assert main(["certify", "--data", str(human), "--judge", str(judge), "--out", str(certified)]) == 0
    ppi_claims = pd.read_csv(certified / "ppi_certified.csv")
    assert (ppi_claims["units"] == 20).all() and (ppi_claims["human_unjudged"] == 0).all()
    assert main(["plan", "--out", str(tmp_path / "plan"), "--simulations", "10", "--pilot", str(human),
                 "--judge", str(judge)]) == 0
    assert pd.read_csv(tmp_path / "plan" / "judge_plan.csv")["judge_agreement"].notna().all()


def test_a_recorded_wording_differing_in_case_and_spacing_is_the_judges_and_others_stay():
    from parlai_dialeval.adaptive.ppi_pairwise import asked_as_the_judge

    wording = "Which response is the better next utterance in this conversation?"
    base = {"item_id": "p1", "model_a": "m1", "model_b": "m2", "choice": "a"}
    human = pd.DataFrame([{**base, "question": "  which RESPONSE is the better  next utterance in this conversation?"},
                          {**base, "question": "Which is more fun?"}, {**base, "model_a": "m2", "model_b": "m1"},
                          {**base, "item_id": "p2"}])
    judge = pd.DataFrame([{**base, "model_a": "m2", "model_b": "m1", "question": wording, "worker_id": "judge:j"}])
    asked = asked_as_the_judge(human, judge)
    assert asked["question"].tolist()[:3] == [wording, "Which is more fun?", wording]
    assert pd.isna(asked["question"].iloc[3]) and asked["choice"].tolist() == ["a"] * 4
