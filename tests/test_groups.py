"""Results by the people who judged (issue 54): rankings per group with a test of whether the groups disagree
(analysis/groups.py), raking to target margins (analysis/raking.py), the section's files and words, and the command.

The simulated studies come from parlai_dialeval/testing/group_votes.py (numpy, pandas and scipy only; per-worker
taste and per-item difficulty, so votes depend on each other); benchmarks/bench_groups.py runs the same checks over
many more studies (power, level, coverage)."""
from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from parlai_dialeval.analysis import bradley_terry as bt, groups, pairwise, raking
from parlai_dialeval.errors import DataError, DialevalError
from parlai_dialeval.testing.group_votes import group_study, population_truth

BASE = np.array([0.4, 0.1, -0.1, -0.4])
FLIPPED = np.array([-0.4, 0.5, 0.0, -0.1])  # m1 leads this group, m0 the other


def section_votes(comparisons, participants, by="group"):
    frame = pairwise.with_sections(comparisons)
    levels = groups.worker_levels(frame["worker_id"], participants, groups.By(by))
    votes, workers, items = groups.section_votes(frame, levels.index)
    return votes, workers, items, levels


def test_groups_that_truly_disagree_are_detected():
    # Different leaders (m0 against m1), 30 workers a group: power about 0.9 at 0.05 (benchmarks/bench_groups.py),
    # so at least 5 of 6 studies reject.
    p_values = []
    for seed in range(6):
        comparisons, people = group_study(np.random.default_rng(seed), {"young": BASE, "old": FLIPPED},
                                          {"young": 30, "old": 30})
        votes, workers, _, levels = section_votes(comparisons, people)
        labels = (levels.to_numpy() == "old").astype(np.int64)
        p_values.append(groups.disagreement(votes, workers, labels, permutations=99, seed=seed)[1])
    assert sum(p < 0.05 for p in p_values) >= 5, p_values


def test_the_disagreement_test_holds_its_level_where_groups_agree():
    # 40 studies where both groups share the strengths, with strong worker tastes (sd 0.8) and item effects: the
    # permutation p-values are close to uniform. At most 5 rejections at 0.05 (binomial(40, 0.05): P(X >= 6) =
    # 0.014; a test ignoring the dependence rejects far more often: benchmarks/bench_groups.py).
    p_values = []
    for seed in range(40):
        comparisons, people = group_study(np.random.default_rng(100 + seed), {"a": BASE, "b": BASE},
                                          {"a": 12, "b": 12}, votes_per_worker=15, taste_sd=0.8)
        votes, workers, _, levels = section_votes(comparisons, people)
        p_values.append(groups.disagreement(votes, workers, (levels.to_numpy() == "b").astype(np.int64),
                                            permutations=39, seed=seed)[1])
    p_values = np.array(p_values)
    assert (p_values < 0.05).sum() <= 5
    assert 0.35 < np.mean(p_values) < 0.65  # a valid p-value is uniform: mean 1/2


def test_per_group_rankings_suppress_small_groups_and_correct_for_the_number_of_groups():
    comparisons, people = group_study(np.random.default_rng(7), {"young": BASE, "old": FLIPPED, "few": BASE},
                                      {"young": 25, "old": 25, "few": 4})
    people.loc[people["worker_id"] == "young-0", "group"] = None  # no answer
    frame = pairwise.with_sections(comparisons)
    result = groups.group_rankings(frame, groups.worker_levels(frame["worker_id"], people, groups.By("group")),
                                   alpha=0.05, min_workers=10, permutations=49)
    shown = result.groups.set_index("group")
    assert shown.loc["few", "status"].startswith("too small") and np.isnan(shown.loc["few", "workers"])
    assert shown.loc[groups.NOT_GIVEN, "status"].startswith("too small")  # one worker: suppressed too
    assert set(result.rankings["group"]) == {"young", "old"}
    assert np.allclose(result.rankings["confidence"], 1 - 0.05 / 2)  # Bonferroni over the two groups fitted
    assert result.tests.iloc[0]["groups"] == "old, young" and result.tests.iloc[0]["p_value"] < 0.05
    leaders = result.rankings.sort_values("bt", ascending=False).groupby("group")["model"].first()
    assert (leaders["young"], leaders["old"]) == ("m0", "m1")


def test_two_way_intervals_are_wider_than_item_clustered_ones_where_workers_have_tastes():
    comparisons, people = group_study(np.random.default_rng(3), {"g": BASE}, {"g": 20}, votes_per_worker=30,
                                      taste_sd=1.0)
    votes, workers, items, _ = section_votes(comparisons, people)
    from parlai_dialeval.analysis.style_control import bt_table

    by_pair, _ = bt_table(votes, 0.05)  # the fit's own sandwich: a model pair's votes on one item a cluster
    both, _ = groups.two_way_fit(votes, workers, items, 0.05)
    assert np.allclose(by_pair["bt"], both["bt"])
    assert np.all((both["ci_high"] - both["ci_low"]) > (by_pair["ci_high"] - by_pair["ci_low"]))


def test_whole_worker_clusters_equal_statsmodels_and_exceed_the_pair_split_ones():
    # Independent computation: statsmodels' Binomial GLM on the dense design (e_first - e_second without the first
    # model), cov_type="cluster" by worker. The fit's own sandwich splits a worker by model pair, which misses a
    # taste for one model moving the worker's votes in every pair with it: its variances are smaller here.
    import statsmodels.api as sm

    comparisons, people = group_study(np.random.default_rng(4), {"g": BASE}, {"g": 15}, votes_per_worker=30,
                                      taste_sd=1.0)
    votes, workers, _, _ = section_votes(comparisons, people)
    fit = bt.fit(votes)
    cov, effective = groups.clustered_cov(votes, fit, workers)
    design = bt.design(votes.first, votes.second, len(votes.models))
    glm = sm.GLM(votes.outcome, design, family=sm.families.Binomial()).fit(cov_type="cluster",
                                                                            cov_kwds={"groups": workers})
    centre = bt.centring(len(votes.models))
    np.testing.assert_allclose(cov, centre @ glm.cov_params() @ centre.T, rtol=1e-6, atol=1e-12)
    assert effective == pytest.approx(15)  # 15 workers of 30 votes each: Kish's number is the count
    split = bt.fit(bt.Votes(votes.models, votes.first, votes.second, votes.outcome, workers))
    assert np.all(np.diag(split.strength_cov) < np.diag(cov))


def test_age_bands():
    assert groups.band_labels(groups.AGE_EDGES) == ["under 18", "18-29", "30-49", "50+"]
    by = groups.parse_by("age", numeric=True)
    ages = pd.Series([17, 18, 29, 30, 49.5, 50, 80, np.nan])
    assert list(groups.levels(ages, by)) == ["under 18", "18-29", "18-29", "30-49", "30-49", "50+", "50+",
                                              groups.NOT_GIVEN]
    assert list(groups.levels(ages, groups.parse_by("age:25,60", True))) == [
        "under 25", "under 25", "25-59", "25-59", "25-59", "25-59", "60+", groups.NOT_GIVEN]
    for bad in ("time_taken", "age:30,18", "age:x"):
        with pytest.raises(DialevalError):
            groups.parse_by(bad, numeric=True)


# --- raking ----------------------------------------------------------------------------------------------------


@settings(max_examples=40, deadline=None)
@given(st.data())
def test_raking_reproduces_the_target_margins_and_kish(data):
    sizes = data.draw(st.lists(st.integers(2, 4), min_size=1, max_size=3), label="levels per attribute")
    # every combination once (so any positive margins can be met), then extra workers at random
    cells = np.array(np.meshgrid(*[np.arange(k) for k in sizes])).reshape(len(sizes), -1).T
    extra = data.draw(st.lists(st.tuples(*[st.integers(0, k - 1) for k in sizes]), max_size=30), label="extra")
    rows = np.vstack([cells, np.array(extra, dtype=int).reshape(-1, len(sizes))])
    levels = pd.DataFrame({f"a{j}": [f"l{v}" for v in rows[:, j]] for j in range(len(sizes))})
    targets = {}
    for j, k in enumerate(sizes):
        raw = np.array(data.draw(st.lists(st.floats(0.05, 1), min_size=k, max_size=k), label=f"shares {j}"))
        targets[f"a{j}"] = {f"l{v}": share for v, share in enumerate(raw / raw.sum())}
    weights = raking.rake(levels, targets)
    for attribute, wanted in targets.items():
        for level, share in wanted.items():
            assert abs(weights[levels[attribute] == level].sum() / weights.sum() - share) < 1e-9
    p = weights / weights.sum()  # Kish (1965): n_eff = 1 / sum p_i^2 for normalised weights
    assert raking.kish(weights) == pytest.approx(1 / np.sum(p ** 2), rel=1e-12)


def test_raking_errors_name_what_is_wrong():
    levels = pd.DataFrame({"sex": ["f", "m", "m"]})
    with pytest.raises(DialevalError, match="no share for level"):
        raking.rake(levels, {"sex": {"f": 1.0}})
    with pytest.raises(DialevalError, match="no worker has level"):
        raking.rake(levels, {"sex": {"f": 0.4, "m": 0.4, "x": 0.2}})


def test_the_weighted_ranking_covers_the_target_population():
    # The sample has 3 old to 1 young worker; the population is 1 to 3. The weighted 95% intervals cover the
    # population's truth (testing/group_votes.population_truth, its own fit) in at least 40 of 48 cases (12 studies x 4
    # models; 0.90-0.95 each over 200 studies in benchmarks/bench_groups.py), where the unweighted estimate of the
    # leader's margin is biased towards the old's ranking.
    strengths = {"young": BASE, "old": FLIPPED}
    truth = population_truth(strengths, {"young": 0.75, "old": 0.25})
    covered, plain_gap = np.zeros(4), []
    for seed in range(12):
        comparisons, people = group_study(np.random.default_rng(200 + seed), strengths, {"young": 10, "old": 30})
        frame = pairwise.with_sections(comparisons)
        levels = groups.worker_levels(frame["worker_id"], people, groups.By("group"))
        weights = pd.Series(raking.rake(levels.to_frame("group"), {"group": {"young": 0.75, "old": 0.25}}),
                            index=levels.index)
        table = groups.weighted_rankings(frame, weights, 0.05).set_index("model").loc[["m0", "m1", "m2", "m3"]]
        covered += (table["weighted_ci_low"] <= truth) & (truth <= table["weighted_ci_high"])
        plain_gap.append(table["bt"].iloc[0] - table["bt"].iloc[1])
    assert covered.sum() >= 40, covered
    assert np.mean(plain_gap) < truth[0] - truth[1] - 0.2  # unweighted: the old's m1 pulled up


# --- the section, the files, the command ------------------------------------------------------------------------


def write_targets(path, text):
    path.write_text(text)
    return str(path)


def test_targets_file_errors_name_file_and_line(tmp_path):
    from parlai_dialeval.results.pairwise_result import PairwiseConfig
    from parlai_dialeval.results.sections import groups as section

    comparisons, people = group_study(np.random.default_rng(1), {"a": BASE, "b": BASE}, {"a": 10, "b": 10})
    inputs = type("Inputs", (), {"comparisons": pairwise.with_sections(comparisons)})
    cases = {"level,share\n": ":1: field 'attribute': missing column",
             "attribute,level,share\ngroup,a,0.5\ngroup,b,0.4\n": ":2: field 'share': the shares of 'group' sum to 0.9",
             "attribute,level,share\ngroup,a,0.5\ngroup,c,0.5\n": ":3: field 'level': no worker of the votes has group",
             "attribute,level,share\ncountry,uk,1\n": ":2: field 'attribute': .*no column 'country'",
             "attribute,level,share\ngroup,a,x\n": ":2: field 'share': not a share"}
    for i, (text, message) in enumerate(cases.items()):
        path = write_targets(tmp_path / f"t{i}.csv", text)
        with pytest.raises(DataError, match=message) as caught:
            section.compute(inputs, PairwiseConfig(participants=people, weights=path), {})
        assert str(caught.value).startswith(path)
    with pytest.raises(DialevalError, match="need --participants"):
        section.compute(inputs, PairwiseConfig(by="group"), {})
    with pytest.raises(DialevalError, match="no column 'country'"):
        section.compute(inputs, PairwiseConfig(participants=people, by="country"), {})
    strangers = people.assign(worker_id="someone-else-" + people["worker_id"])
    with pytest.raises(DialevalError, match="none of the votes' 20 workers is in the participants file"):
        section.compute(inputs, PairwiseConfig(participants=strangers, by="group"), {})


def test_nothing_changes_without_participants():
    # the section gives nothing, so no table, summary key or sentence (tests/test_pairwise_regression.py: every
    # other number as before)
    from parlai_dialeval.results.pairwise_result import PairwiseConfig
    from parlai_dialeval.results.sections import groups as section

    comparisons, _ = group_study(np.random.default_rng(1), {"a": BASE}, {"a": 10})
    inputs = type("Inputs", (), {"comparisons": pairwise.with_sections(comparisons)})
    assert section.compute(inputs, PairwiseConfig(), {}) is None


def prolific_export(people: pd.DataFrame, path) -> None:
    """People as Prolific's demographic export writes them (its header; data/participants.py)."""
    ages = np.where(people["group"] == "old", 64, 27)
    pd.DataFrame({"Submission id": [f"s{i}" for i in range(len(people))], "Participant id": people["worker_id"],
                  "Status": "APPROVED", "Age": ages, "Sex": np.where(np.arange(len(people)) % 2, "Female", "Male"),
                  "Country of residence": "United Kingdom"}).to_csv(path, index=False)


def test_the_command_says_on_its_first_screen_where_groups_disagree(tmp_path):
    from crowdsourcing.zygote import dialeval_run
    from parlai_dialeval.data.dataset import write_jsonl

    # 10 workers a group (the --min-group-workers default), 40 votes each: few workers keep fragility's exact
    # search of removable workers, which every analyze_pairwise runs, short
    comparisons, people = group_study(np.random.default_rng(5), {"young": BASE, "old": FLIPPED},
                                      {"young": 10, "old": 10}, votes_per_worker=40)
    write_jsonl([{"type": "comparison", **row} for row in comparisons.to_dict(orient="records")],
                tmp_path / "votes.jsonl")
    prolific_export(people, tmp_path / "demographics.csv")
    write_targets(tmp_path / "targets.csv", "attribute,level,share\nage,18-29,0.8\nage,50+,0.2\n")
    out = tmp_path / "out"
    run = dialeval_run(["analyze_pairwise", "--data", tmp_path / "votes.jsonl", "--out", out, "--bootstrap-rounds",
                        "20", "--participants", tmp_path / "demographics.csv", "--by", "age", "--weights",
                        tmp_path / "targets.csv", "--group-permutations", "199", "--style-control", "off", "--ties",
                        "off", "--position-effects", "off"])
    assert run.returncode == 0, run.stderr
    html = (out / "report.html").read_text()
    verdict = html[html.index('data-testid="verdict"'):html.index("</div>", html.index('data-testid="verdict"'))]
    assert "among participants aged 18-29, m0 leads (m1 leads overall); the groups by age disagree " \
           "(permutation test, p = 0.005)" in verdict
    assert "weighted to the target population (age), m0 leads, where m1 leads unweighted" in verdict
    for stem, columns in (("group_rankings", ["rank"]), ("weighted_rankings", ["rank", "rank_weighted"])):
        ranks = pd.read_csv(out / f"{stem}.csv")[columns]
        assert all(pd.api.types.is_integer_dtype(ranks[c]) for c in columns), (stem, ranks.dtypes)  # "1", not "1.0"
    summary = json.loads((out / "agreement.json").read_text())["groups"]
    assert summary["weighting"]["workers"] == 20 and summary["tests"][0]["p_value"] == 0.005
    # group-level numbers only: no worker id and no attribute value per worker in any file written
    for path in out.iterdir():
        if path.suffix == ".csv" and path.stem in ("groups", "group_rankings", "group_tests", "weighted_rankings"):
            text = path.read_text()
            assert "young-" not in text and "old-" not in text and "Female" not in text


def test_a_demographic_export_is_never_read_as_data_to_publish(tmp_path):
    # dialeval publish reads its --data through the importers: the export is not recognised, and forced through any
    # format no record holds a participant's id or answer, so no attribute can reach a published dataset
    from parlai_dialeval.importers import registry

    _, people = group_study(np.random.default_rng(1), {"a": BASE}, {"a": 3})
    path = tmp_path / "demographics.csv"
    prolific_export(people, path)
    with pytest.raises(DialevalError, match="format not recognised"):
        registry.load([path], log=lambda *_: None)
    registry.load_importer_modules()
    for fmt in registry.IMPORTERS:
        try:
            data = registry.load([path], fmt=fmt, log=lambda *_: None)
        except DialevalError:
            continue
        held = " ".join(frame.to_string() if isinstance(frame, pd.DataFrame) else str(frame)
                        for frame in (data.studies, data.conversations, data.ratings, data.comparisons))
        assert "a-0" not in held and "United Kingdom" not in held and "Female" not in held, fmt


@settings(max_examples=15, deadline=None)
@given(st.data())
def test_edges_give_true_sentences_never_a_crash(data):
    # tiny or lopsided studies: a few workers, a model that never loses, ties, groups below the minimum, workers
    # without an answer or absent from the file
    from parlai_dialeval.results.pairwise_result import PairwiseConfig
    from parlai_dialeval.results.sections import groups as section

    n_workers = data.draw(st.integers(2, 14), label="workers")
    models = data.draw(st.integers(2, 4), label="models")
    rows = []
    for w in range(n_workers):
        for k in range(data.draw(st.integers(1, 4), label="votes")):
            a, b = data.draw(st.lists(st.integers(0, models - 1), min_size=2, max_size=2, unique=True))
            choice = "a" if a == 0 else data.draw(st.sampled_from(["a", "b", "tie"]))  # m0 never loses
            rows.append({"item_id": f"i{k}", "worker_id": f"w{w}", "model_a": f"m{a}", "model_b": f"m{b}",
                         "choice": choice, "question": "q"})
    comparisons = pd.DataFrame(rows).drop_duplicates(["item_id", "worker_id", "model_a", "model_b"])
    ages = data.draw(st.lists(st.one_of(st.none(), st.integers(16, 80)), min_size=n_workers, max_size=n_workers))
    people = pd.DataFrame({"worker_id": [f"w{w}" for w in range(n_workers)], "age": pd.array(ages, dtype="Float64")})
    people = people.iloc[:data.draw(st.integers(1, n_workers), label="described")]
    min_workers = data.draw(st.integers(1, 4), label="min workers")
    inputs = type("Inputs", (), {"comparisons": pairwise.with_sections(comparisons)})
    config = PairwiseConfig(participants=people.assign(age=people["age"].astype(float)), by="age",
                            min_group_workers=min_workers, group_permutations=9)
    part = section.compute(inputs, config, {})
    said = " ".join(part.sentences + part.verdicts)
    assert "nan" not in said.lower() and "None" not in said
    for name, rows_ in part.result.rankings.groupby("group"):
        ranked = rows_.dropna(subset=["bt"]).sort_values("bt", ascending=False)
        assert list(ranked["rank"]) == sorted(ranked["rank"])  # ranks agree with the strengths
        assert (ranked["ci_low"] <= ranked["bt"] + 1e-9).all() and (ranked["bt"] <= ranked["ci_high"] + 1e-9).all()
    assert (part.result.groups.loc[part.result.groups["status"] != "fitted", "workers"].isna()).all()
