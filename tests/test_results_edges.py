"""The pairwise analysis at its edges, through the library call: what each section says where an estimate does not
exist (a model that won every vote, no ties, a side that won every vote, level models), and options and files
checked as the command line checks them, one line naming the option or field (the live-chat and single-model
calls' options too)."""
from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
from hostile_corpora import pairwise as hostile_pairwise
from scipy import optimize

from parlai_dialeval import importers, results
from parlai_dialeval.errors import DataError, DialevalError
from parlai_dialeval.options import checked


def _load(tmp_path, records) -> pd.DataFrame:
    path = tmp_path / "d.jsonl"
    path.write_text("".join(json.dumps({"format_version": "1.0", **r}) + "\n" for r in records), encoding="utf-8")
    return importers.load([str(path)], log=None).comparisons


def _frame(tmp_path, rows) -> pd.DataFrame:
    """rows: (model_a, model_b, choice, worker, item)."""
    return _load(tmp_path, [{"type": "study", "name": "p"}] + [
        {"type": "comparison", "study": "p", "item_id": i, "worker_id": w, "model_a": a, "model_b": b, "choice": c,
         "question": "Q?"} for a, b, c, w, i in rows])


def _sides(i: int) -> list[tuple]:
    """Side A wins every vote, each model shown first in half of them: x and y win 6 each."""
    return [r for i in range(i) for r in (("x", "y", "a", f"w{i % 3}", f"i{i}"), ("y", "x", "a", f"w{(i + 1) % 3}",
                                                                                    f"j{i}"))]


# --- what the sections say ---------------------------------------------------------------------------------------

def test_a_model_that_won_every_vote_needs_more_items_not_equal(tmp_path):
    # the sign test over items: 4 items all won, p = 2 / 2^4 = 0.125, open; 6 items, p = 2 / 2^6 = 0.031, settled
    four = results.pairwise(_frame(tmp_path, [("x", "y", "a", f"w{i % 3}", f"i{i}") for i in range(4)]),
                            bootstrap_rounds=20).verdict[0]
    assert "x won every decided vote, too few items yet to settle it" in four
    assert "look equal" not in four and "p = 0.12" in four
    six = results.pairwise(_frame(tmp_path, [("x", "y", "a", f"w{i % 3}", f"i{i}") for i in range(6)]),
                           bootstrap_rounds=20).verdict[0]
    assert "x is better than every other model" in six and "Not settled" not in six


def _bradley_terry(comparisons: pd.DataFrame) -> pd.Series:
    """The plain maximum-likelihood log-strengths (mean 0), by scipy from the win counts."""
    models = sorted(set(comparisons["model_a"]) | set(comparisons["model_b"]))
    k = {m: i for i, m in enumerate(models)}
    winner = np.where(comparisons["choice"] == "a", comparisons["model_a"], comparisons["model_b"])
    loser = np.where(comparisons["choice"] == "a", comparisons["model_b"], comparisons["model_a"])
    w, l_ = np.array([k[m] for m in winner]), np.array([k[m] for m in loser])

    def loss(s):
        return np.logaddexp(0, -(s[w] - s[l_])).sum()

    s = optimize.minimize(loss, np.zeros(len(models)), method="BFGS", options={"gtol": 1e-10}).x
    return pd.Series(s - s.mean(), index=models)


def test_no_ties_is_a_tie_parameter_of_0_not_a_separation(tmp_path):
    comparisons = _load(tmp_path, hostile_pairwise())
    assert not comparisons["choice"].eq("tie").any()
    result = results.pairwise(comparisons, bootstrap_rounds=20)
    said = result.sentences()["ties"][0]
    assert "no ties were recorded among its 72 worker votes: the tie parameter is 0" in said
    assert "finite" not in said and "never lost" not in said
    table = result.tables["ties"].set_index("model")
    expected = _bradley_terry(comparisons)  # every model won and lost: a finite fit, Davidson's = the plain one
    assert np.allclose(table["strength_davidson"], expected[table.index], atol=1e-6)
    assert np.allclose(table["strength_davidson"], table["strength_plain"])
    assert np.isfinite(table[["davidson_low", "davidson_high"]].to_numpy()).all()
    figures = result.tables["ties_questions"].iloc[0]
    assert figures["nu"] == 0 and not figures["separated"]
    assert f"span {np.ptp(expected):.2f}" in said


def test_every_vote_a_tie_says_the_tie_parameter_has_no_finite_estimate(tmp_path):
    result = results.pairwise(_frame(tmp_path, [("x", "y", "tie", f"w{i % 3}", f"i{i}") for i in range(10)]),
                              bootstrap_rounds=20)
    said = result.sentences()["ties"][0]
    assert "100% of 10 worker votes are ties" in said and "the tie parameter has no finite estimate" in said
    assert "never lost" not in said


def test_a_side_that_won_every_vote_has_no_finite_position_effect(tmp_path):
    comparisons = _frame(tmp_path, _sides(6))
    assert comparisons["choice"].eq("a").all()  # side A won every decided vote
    result = results.pairwise(comparisons, bootstrap_rounds=20)
    said = result.sentences()["position"]
    assert said[0] == ("'Q?' (response): the effect of the side a reply is shown on has no finite estimate: side A "
                       "won every decided vote, so no strength net of it exists either.")
    assert not any("log-odds" in line for line in said)
    figures = result.tables["position_questions"].iloc[0]
    assert figures["separated"] and figures["side_won_all"] == "A"
    assert figures[["shared", "shared_low", "shared_high"]].isna().all()
    assert result.tables["position"][["position_effect", "effect_low", "effect_high"]].isna().all().all()


def test_level_models_are_said_level_not_top(tmp_path):
    result = results.pairwise(_frame(tmp_path, _sides(6)), bootstrap_rounds=20)
    ranks = result.tables["rankings"].set_index("model")["rank"]
    assert ranks["x"] == ranks["y"] == 1  # 6 wins each: one shared first place
    said = result.sentences()["fragility"]
    assert not any(line.startswith(("x is top", "y is top")) or "overtakes it" in line or "reverses if" in line
                   for line in said)
    assert "x and y share the top place (equal Bradley-Terry strengths): no model is top, so none to overtake" in said
    assert "x and y are level in Bradley-Terry strength: no order to reverse" in said
    rows = result.tables["fragility_rankings"]
    assert rows["votes_to_reverse"].isna().all() and not rows["votes_exact"].any()


def test_only_ties_are_level_not_a_top_model(tmp_path):
    said = results.pairwise(_frame(tmp_path, [("x", "y", "tie", f"w{i % 3}", f"i{i}") for i in range(10)]),
                            bootstrap_rounds=20).sentences()["fragility"]
    assert not any(line.startswith(("x is top", "y is top")) or "reverses:" in line for line in said)
    assert "x and y share the top place (equal Bradley-Terry strengths): no model is top, so none to overtake" in said


def test_a_top_model_ahead_is_still_named(tmp_path):
    rows = [("x", "y", "a" if i % 4 else "b", f"w{i % 3}", f"i{i}") for i in range(12)]  # x: 9 wins to 3
    said = results.pairwise(_frame(tmp_path, rows), bootstrap_rounds=20).sentences()["fragility"]
    assert any(line.startswith("x is top; y overtakes it if ") for line in said)


# --- options, checked as the command line checks them --------------------------------------------------------------

@pytest.fixture(scope="module")
def votes(tmp_path_factory):
    return _load(tmp_path_factory.mktemp("votes"), hostile_pairwise())


@pytest.mark.parametrize("options, flag", [
    ({"alpha": 2}, "--alpha"), ({"alpha": 0}, "--alpha"), ({"alpha": "0.05"}, "--alpha"), ({"alpha": None}, "--alpha"),
    ({"bootstrap_rounds": "200"}, "--bootstrap-rounds"), ({"bootstrap_rounds": 2.5}, "--bootstrap-rounds"),
    ({"bootstrap_rounds": -5}, "--bootstrap-rounds"), ({"bootstrap_rounds": True}, "--bootstrap-rounds"),
    ({"correction": "bogus"}, "--correction"), ({"seed": "x"}, "--seed"),
    ({"style_control": "bogus"}, "--style-control"), ({"ties": "bogus"}, "--ties"),
    ({"position_effects": "bogus"}, "--position-effects"), ({"turns": (5, 2)}, "--turns"),
    ({"turns": (2.5, 4)}, "--turns"), ({"side_share": 5}, "--side-share"),
    ({"exclude_flagged": "no"}, "--exclude-flagged"), ({"exclude_flagged": 1}, "--exclude-flagged"),
    ({"by": 5}, "--by"),
])
def test_a_bad_option_is_one_line_naming_it(votes, options, flag):
    with pytest.raises(DialevalError) as caught:
        results.pairwise(votes, **options)
    assert str(caught.value).startswith(flag + " ") and "\n" not in str(caught.value)


@pytest.mark.parametrize("flag, kind, value", [("--alpha", "probability", 2), ("--side-share", "probability", 5),
                                               ("--bootstrap-rounds", "positive_int", -5),
                                               ("--seed", "non_negative_int", -1)])
def test_an_option_out_of_range_says_what_the_command_line_says(votes, flag, kind, value):
    with pytest.raises(DialevalError) as command_line:
        checked(flag, kind)(str(value))
    with pytest.raises(DialevalError) as library:
        results.pairwise(votes, **{flag[2:].replace("-", "_"): value})
    assert str(library.value) == str(command_line.value)


def test_good_options_are_kept_and_text_is_parsed(votes):
    config = results.pairwise_result.PairwiseConfig(alpha=0.1, bootstrap_rounds=np.int64(30), turns="2-4",
                                                    exclude_flagged=True)
    assert (config.alpha, config.bootstrap_rounds, config.turns, config.exclude_flagged) == (0.1, 30, (2, 4), True)
    assert type(config.bootstrap_rounds) is int
    assert results.pairwise_result.PairwiseConfig(turns=(2, 4)).turns == (2, 4)


# --- files given as what they hold ----------------------------------------------------------------------------------

PARTICIPANTS = pd.DataFrame({"worker_id": ["w0", "w1", "w2"], "sex": ["F", "M", "F"]})


def test_targets_as_a_frame_are_checked_as_the_file_is(votes, tmp_path):
    bad = pd.DataFrame({"attribute": ["sex"] * 2, "value": ["F", "M"], "share": [.5, .5]})
    path = tmp_path / "targets.csv"
    bad.to_csv(path, index=False)
    with pytest.raises(DataError) as from_file:
        results.pairwise(votes, participants=PARTICIPANTS, by="sex", weights=str(path))
    with pytest.raises(DataError) as from_frame:
        results.pairwise(votes, participants=PARTICIPANTS, by="sex", weights=bad)
    said = "field 'level': missing column (expected a header attribute,level,share)"
    assert said in str(from_file.value) and said in str(from_frame.value)
    over = pd.DataFrame({"attribute": ["sex"] * 2, "level": ["F", "M"], "share": [.5, .6]})
    with pytest.raises(DataError, match="the shares of 'sex' sum to 1.1"):
        results.pairwise(votes, participants=PARTICIPANTS, by="sex", weights=over)


def test_targets_as_a_frame_weight_as_the_file_does(votes, tmp_path):
    good = pd.DataFrame({"attribute": ["sex"] * 2, "level": ["F", "M"], "share": [.5, .5]})
    path = tmp_path / "targets.csv"
    good.to_csv(path, index=False)
    options = {"participants": PARTICIPANTS, "by": "sex", "bootstrap_rounds": 20}
    from_file = results.pairwise(votes, weights=str(path), **options).groups.weighting
    from_frame = results.pairwise(votes, weights=good, **options).groups.weighting
    assert from_frame.weights.equals(from_file.weights)
    # two F workers and one M raked to half and half: each F worker weighs half the M worker
    assert from_frame.weights["w0"] == from_frame.weights["w2"] == pytest.approx(from_frame.weights["w1"] / 2)


@pytest.mark.parametrize("options, message", [
    ({"participants": PARTICIPANTS.drop(columns="worker_id"), "by": "sex"}, "--participants (the DataFrame given): no "
                                                                             "worker_id column"),
    ({"participants": 5, "by": "sex"}, "--participants int: expected a file's path or a DataFrame"),
    ({"participants": PARTICIPANTS, "by": "sex", "weights": 5}, "--weights int: expected a file's path or a DataFrame"),
    ({"style_covariates": 5}, "--style-covariates int: expected a file's path or a DataFrame"),
    ({"style_covariates": pd.DataFrame({"item_id": ["x-y-0"], "len": [1.0]})}, "field 'model': missing column"),
    ({"style_covariates": pd.DataFrame({"item_id": ["x-y-0"], "model": ["x"], "len": ["long"]})},
     "row 0: field 'len': not a finite number"),
    ({"categories": 5}, "--categories int: expected a file's path or a mapping"),
    ({"categories": {"q": ["("]}}, "--categories (the mapping given): field 'q': not a regular expression"),
    ({"categories": {"q": []}}, "field 'q': not a list of regular expressions"),
])
def test_a_bad_file_value_is_one_line(votes, options, message):
    with pytest.raises(DialevalError) as caught:
        results.pairwise(votes, bootstrap_rounds=20, **options)
    assert message in str(caught.value) and "\n" not in str(caught.value)


# --- the comparisons frame ---------------------------------------------------------------------------------------

@pytest.mark.parametrize("column", ["worker_id", "item_id", "choice", "model_a", "model_b"])
def test_a_frame_without_a_required_column_is_one_line_naming_it(votes, column):
    with pytest.raises(DataError, match=f"field '{column}': missing required field"):
        results.pairwise(votes.drop(columns=[column]))


def test_missing_worker_ids_and_unknown_choices_are_named_with_their_row(votes):
    nameless = votes.assign(worker_id=None)
    with pytest.raises(DataError, match="field 'worker_id': missing required field"):
        results.pairwise(nameless)
    bare = votes.drop(columns=["_file", "_line"])
    bare.loc[5, "choice"] = "maybe"
    with pytest.raises(DataError) as caught:
        results.pairwise(bare)
    assert str(caught.value) == ("the comparisons given, row 5: field 'choice': unknown value (expected one of a, b, "
                                 "tie, got 'maybe')")


# --- the live-chat and single-model calls check their options alike -----------------------------------------------

@pytest.mark.parametrize("call, options, message", [
    ("live_chat", {"qc_alpha": 2}, "--qc-alpha 2: expected a number strictly between 0 and 1"),
    ("live_chat", {"sig_plot_threshold": 0}, "--sig-plot-threshold 0: expected a number strictly between 0 and 1"),
    ("live_chat", {"sig_test": "bogus"}, "--sig-test 'bogus': expected one of"),
    ("live_chat", {"ddof": 1.5}, "--ddof 1.5: expected an integer, not float"),
    ("live_chat", {"reverse": "yes"}, "--reverse 'yes': expected True or False"),
    ("live_chat", {"scale_min": "1"}, "--scale-min '1': expected a number, not str"),
    ("live_chat", {"min_group_workers": 0}, "--min-group-workers 0: expected an integer >= 1"),
    ("live_chat", {"style_control": "bogus"}, "--style-control 'bogus': expected one of auto, off"),
    ("live_chat", {"criteria": [1, 2]}, "--criteria [1, 2]: expected comma-separated names or a list of names"),
    ("live_chat", {"categories": 5}, None),  # a file's option: checked where it is read, with the data
    ("single_model", {"alpha": 2}, "--alpha 2: expected a number strictly between 0 and 1"),
    ("single_model", {"n_boot": 0}, "--n-boot 0: expected an integer >= 1"),
    ("single_model", {"correction": "bogus"}, "--correction 'bogus': expected one of"),
    ("single_model", {"reference": 3}, "--reference 3: expected text, not int"),
    ("single_model", {"sm_turns": (5, 2)}, "--sm-turns (5, 2): expected 1 <= FIRST <= LAST"),
    ("single_model", {"sm_turns": "5-2"}, "--sm-turns '5-2': expected 1 <= FIRST <= LAST"),
    ("single_model", {"sm_turns": (2.5, 4)}, "--sm-turns (2.5, 4): expected (FIRST, LAST), two integers"),
    ("single_model", {"sm_turns": (2, 4, 6)}, "--sm-turns (2, 4, 6): expected (FIRST, LAST), two integers"),
    ("single_model", {"weights": [(1, -1)]}, "--weights [(1, -1)]: each pair needs two non-negative numbers"),
    ("single_model", {"weights": "1:-1"}, "--weights '1:-1': each pair needs two non-negative numbers"),
    ("single_model", {"weights": [(0, 0)]}, "--weights [(0, 0)]: each pair needs two non-negative numbers"),
    ("single_model", {"weights": [(1, 2, 3)]}, "--weights [(1, 2, 3)]: each pair needs two non-negative numbers"),
    ("single_model", {"weights": [("a", 1)]}, "--weights [('a', 1)]: expected TURN:DIALOG pairs"),
    ("single_model", {"weights": [(True, 1)]}, "--weights [(True, 1)]: expected TURN:DIALOG pairs"),
    ("single_model", {"weights": 5}, "--weights 5: expected TURN:DIALOG pairs"),
    ("single_model", {"weights": []}, "--weights []: expected TURN:DIALOG pairs"),
])
def test_live_chat_and_single_model_options_are_checked_as_the_command_line_does(call, options, message):
    from parlai_dialeval.results.live_chat_result import LiveChatOptions
    from parlai_dialeval.results.single_model_result import SingleModelConfig

    if message is None:  # accepted when the config is made (no data is touched before): nothing to raise here
        config = {"live_chat": LiveChatOptions, "single_model": SingleModelConfig}[call](**options)
        assert all(getattr(config, name) == value for name, value in options.items())
        return
    with pytest.raises(DialevalError) as caught:  # refused before the data are read: none are needed
        getattr(results, call)(None, **options)
    assert str(caught.value).startswith(message) and "\n" not in str(caught.value)


def test_live_chat_and_single_model_good_options_are_kept_parsed():
    from parlai_dialeval.results.live_chat_result import LiveChatOptions
    from parlai_dialeval.results.single_model_result import SingleModelConfig

    config = SingleModelConfig(sm_turns=[2, 4], weights=[(1, 2), [3, np.int64(0)]], alpha=0.1, n_boot=np.int64(5))
    assert (config.sm_turns, config.weights, config.alpha, config.n_boot) == ((2, 4), [(1.0, 2.0), (3.0, 0.0)], 0.1, 5)
    assert SingleModelConfig(weights="1:0,1:5").weights == [(1.0, 0.0), (1.0, 5.0)]
    assert SingleModelConfig(sm_turns=None).sm_turns is None and SingleModelConfig(sm_turns="all").sm_turns is None
    options = LiveChatOptions(criteria=["a", "b"], negative="", scale_min=1, order="x, y", qc_alpha=0.1)
    assert (options.criteria, options.negative, options.scale_min, options.order) == (["a", "b"], [], 1.0, ["x", "y"])
    # names given as a list stay whole (a model may be called "bot,v2"); a text of them is split at commas
    options = LiveChatOptions(qc_models=["bot,v2", "qc"], order=("x,y", " z", ""), criteria="a, b")
    assert (options.qc_models, options.order, options.criteria) == (["bot,v2", "qc"], ["x,y", " z"], ["a", "b"])
    assert LiveChatOptions() == LiveChatOptions(**{f: getattr(LiveChatOptions(), f) for f in ("criteria", "seed")})


def test_turns_as_a_tuple_are_checked_as_their_text():
    from parlai_dialeval.options import turn_range

    assert turn_range((2, 6)) == turn_range([2, 6]) == turn_range("2-6") == (2, 6)
    assert turn_range((np.int64(3), 3)) == turn_range("3") == (3, 3)
    for bad in ((5, 2), (0, 3), (-1, 3), (True, 2), ("2", "6"), (2,)):
        with pytest.raises(DialevalError, match=r"^--turns \("):
            turn_range(bad)


def test_weightings_as_a_list_are_checked_as_their_text():
    from parlai_dialeval.options import weightings

    assert weightings([(1, 0), (1, 5)]) == weightings("1:0,1:5") == [(1.0, 0.0), (1.0, 5.0)]
    for text, pairs in (("1:-1", [(1, -1)]), ("0:0", [(0, 0)]), ("1:inf", [(1, float("inf"))]), ("1:2:3", [(1, 2, 3)])):
        with pytest.raises(DialevalError) as from_text:
            weightings(text)
        with pytest.raises(DialevalError) as from_list:
            weightings(pairs)
        assert str(from_text.value).split(": ", 1)[1] == str(from_list.value).split(": ", 1)[1]


# --- variants given as what the file holds ------------------------------------------------------------------------

def _variant_votes(tmp_path) -> pd.DataFrame:
    return _frame(tmp_path, [(a, b, c, f"w{i % 4}", f"i{i}") for i, (a, b, c) in enumerate(
        [("lab-exp-1", "base", "a"), ("lab-exp-2", "base", "b"), ("base", "lab-exp-1", "a")] * 4)])


@pytest.mark.parametrize("variants, message", [
    (5, "--variants int: expected a file's path or a mapping"),
    (["lab-exp-1"], "--variants list: expected a file's path or a mapping"),
    ({"lab": "lab-exp-1"}, "--variants (the mapping given): field 'lab': not a list of model names"),
    ({"lab": ["lab-exp-1", 3]}, "--variants (the mapping given): field 'lab': not a list of model names"),
])
def test_variants_are_checked_as_the_file_is(tmp_path, variants, message):
    with pytest.raises(DialevalError) as caught:
        results.pairwise(_variant_votes(tmp_path), bootstrap_rounds=5, variants=variants)
    assert message in str(caught.value) and "\n" not in str(caught.value)
    if isinstance(variants, dict):  # the file holding it says the same
        path = tmp_path / "variants.json"
        path.write_text(json.dumps(variants), encoding="utf-8")
        with pytest.raises(DataError) as from_file:
            results.pairwise(_variant_votes(tmp_path), bootstrap_rounds=5, variants=str(path))
        assert str(from_file.value).split(": ", 1)[1] == str(caught.value).split(": ", 1)[1]


def test_variants_as_a_mapping_mark_as_the_file_does(tmp_path):
    families = {"lab": ["lab-exp-1", "lab-exp-2"]}
    path = tmp_path / "variants.json"
    path.write_text(json.dumps(families), encoding="utf-8")
    from_file = results.pairwise(_variant_votes(tmp_path), bootstrap_rounds=5, variants=str(path)).provisional
    from_mapping = results.pairwise(_variant_votes(tmp_path), bootstrap_rounds=5, variants=families).provisional
    pd.testing.assert_frame_equal(from_mapping, from_file)
    assert set(from_mapping.loc[from_mapping["family"] == "lab", "model"]) == {"lab-exp-1", "lab-exp-2"}


# --- position and verdict where there is nothing to estimate --------------------------------------------------------

def test_every_vote_a_tie_has_no_position_effect_not_one_of_zero_width(tmp_path):
    result = results.pairwise(_frame(tmp_path, [("x", "y", "tie", f"w{i % 3}", f"i{i}") for i in range(10)]),
                              bootstrap_rounds=20)
    said = result.sentences()["position"]
    assert said[0] == ("'Q?' (response): every one of its 10 votes is a tie: there is no decided vote to estimate the "
                       "effect of the side a reply is shown on from, so neither a position effect nor a strength net "
                       "of it is given.")
    assert not any("log-odds" in line for line in said)
    figures = result.tables["position_questions"].iloc[0]
    assert figures["decided_votes"] == 0 and not figures["order_changes"]
    assert figures[["shared", "shared_low", "shared_high"]].isna().all()
    table = result.tables["position"]
    assert table[["position_effect", "effect_low", "effect_high", "net_low", "net_high"]].isna().all().all()
    assert (table["strength_plain"] == 0).all()


def test_a_plan_of_no_more_items_is_not_said_as_about_0():
    from parlai_dialeval import verdict

    # 150 of 250 items won (60%): the planner's sign test reaches 80% power at 0.05 with about 200 items, so it
    # plans 0 more; the corrected p (Holm over the other pairs) has not reached 0.05
    assert verdict.more_items_needed(0.6, 0.0, 1, 0.0, 250, 0.05) == 0
    rates = pd.DataFrame([{"question": "Q?", "unit": "response", "model_a": "x", "model_b": "y", "wins_a": 150,
                           "wins_b": 100, "ties": 0, "win_rate_a": 0.6, "ci_low": 0.54, "ci_high": 0.66,
                           "p_adjusted": 0.06, "votes_per_cluster": 1.0, "icc": 0.0, "clusters_won_a": 150,
                           "clusters_won_b": 100}])
    said = verdict.pairwise(rates, 0.05)[0]
    assert "about 0 more" not in said and "0 more items" not in said
    assert ("x over y: 60% of decided votes (95% interval 54%-66%, p = 0.06); it already has the items that would "
            "settle it 8 times in 10 if that rate holds, yet has not settled: a few more items may") in said
    fewer = verdict.pairwise(rates.assign(wins_a=90, wins_b=60, clusters_won_a=90, clusters_won_b=60), 0.05)[0]
    assert "; about 49 more items would settle it if that rate holds." in fewer  # 150 items: a count is planned
