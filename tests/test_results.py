"""Results as objects (issue 56 item 2): the library calls give every section the commands report, write nothing,
and a new statistic is one module and one line."""
from __future__ import annotations

import dataclasses

import numpy as np
import pandas as pd
import pytest

from parlai_dialeval import results
from parlai_dialeval.options import option
from parlai_dialeval.results import pairwise_result
from parlai_dialeval.results.section import Section, config_class
from parlai_dialeval.testing.crowd_votes import crowd_study


def _study(seed: int = 3) -> pd.DataFrame:
    votes = crowd_study(np.random.default_rng(seed), strengths=(0.0, 0.4, 0.8), votes=300, workers=12,
                        items_per_pair=20, side_workers=1)
    votes["response_a"] = np.where(np.arange(len(votes)) % 3 == 0, "short?", "a much longer **reply** here")
    return votes.assign(question="Which is better?")


def test_the_pairwise_result_holds_every_section_and_writes_nothing(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    result = results.pairwise(_study(), bootstrap_rounds=30, categories={"short": ["short"]})
    assert [s.name for s in result.sections] == [s.name for s in pairwise_result.SECTIONS]
    for name in ("core", "verdict", "voters", "provisional", "style", "categories", "fragility"):
        assert result.parts[name] is not None, name
    assert result.ppi is None  # no judge
    assert result.verdict and result.verdict[0].startswith("Which is better? (response): ")
    assert set(result.fragility.rankings["order"]) == {"top", "adjacent"}
    assert "side0" in set(result.voters.flags.table["worker_id"])
    assert {"win_rates", "rankings", "style_control", "category_rankings", "voter_flags", "fragility_pairs",
            "provisional"} <= set(result.tables)
    assert {"voter_flags", "fragility", "style_control", "categories", "comparisons"} <= set(result.summary)
    assert not list(tmp_path.iterdir())


def test_the_command_writes_what_the_library_call_computes(tmp_path):
    from parlai_dialeval.scripts.analyze_pairwise import PairwiseConfig, analyze

    config = PairwiseConfig(bootstrap_rounds=30)
    written = analyze(_study(), tmp_path, config, log=lambda *_: None)
    library = results.pairwise(_study(), config=config)
    for name, table in library.tables.items():
        if table is not None:
            got = pd.read_csv(tmp_path / f"{name}.csv")
            assert len(got) == len(table) and list(got.columns) == list(table.columns), name
    assert written["result"].summary.keys() == library.summary.keys()


def test_a_new_statistic_is_one_module_and_one_line(tmp_path, monkeypatch):
    # the section CONTRIBUTING.md shows, with its statistic written here
    def compute(inputs, config, done):
        votes = inputs.comparisons[inputs.comparisons["choice"] != "tie"]
        won = pd.concat([votes.loc[votes["choice"] == "a", "model_a"], votes.loc[votes["choice"] == "b", "model_b"]])
        played = pd.concat([votes["model_a"], votes["model_b"]]).value_counts()
        share = (won.value_counts() / played).fillna(0).rename("share").rename_axis("model").reset_index()
        return share[played.loc[share["model"]].to_numpy() >= config.min_decided]

    section = Section("decided_share", compute, tables=lambda part: {"decided_shares": part},
                      summary=lambda part: {"decided_share": part.to_dict(orient="records")},
                      sentences=lambda part: [f"{row.model} won {row.share:.0%} of its decided votes"
                                              for row in part.itertuples()],
                      title="Share of decided votes",
                      config=(("min_decided", int, option(10, "decided votes a model needs for a share",
                                                          kind="positive_int")),))
    sections = [*pairwise_result.SECTIONS, section]  # the one line
    monkeypatch.setattr(pairwise_result, "SECTIONS", sections)
    config_type = config_class("PairwiseConfig", (), sections, __name__)
    assert "min_decided" in {f.name for f in dataclasses.fields(config_type)}  # --min-decided
    from parlai_dialeval.scripts.analyze_pairwise import analyze

    out = analyze(_study(), tmp_path, config_type(bootstrap_rounds=30, min_decided=5), log=lambda *_: None)
    shares = pd.read_csv(tmp_path / "decided_shares.csv")
    assert set(shares["model"]) == {"m0", "m1", "m2"} and shares["share"].between(0, 1).all()
    assert "decided_share" in out["summary"]
    html = (tmp_path / "report.html").read_text(encoding="utf-8")
    assert "Share of decided votes" in html and "of its decided votes" in html


def test_an_option_naming_a_file_takes_its_contents_too(tmp_path):
    rules = tmp_path / "rules.yaml"
    rules.write_text("short: ['short']\n", encoding="utf-8")
    from_file = results.pairwise(_study(), bootstrap_rounds=30, categories=str(rules))
    given = results.pairwise(_study(), bootstrap_rounds=30, categories={"short": ["short"]})
    pd.testing.assert_frame_equal(from_file.categories.rankings, given.categories.rankings)
    assert from_file.categories.source == f"the rules of {rules}" and given.categories.source == "the rules given"


def test_an_unknown_option_is_refused():
    with pytest.raises(TypeError, match="no_such_option"):
        results.pairwise(_study(), no_such_option=1)


def test_a_frame_with_arrow_strings_is_analysed_as_one_with_python_strings():
    """Importing parlai_dialeval.data sets pandas' string storage to Python (docs/library.md); a notebook's frame
    made before that holds pandas 3's default Arrow strings, and where the two storages meet a merge makes object
    keys. Every table and the verdict must be the same, text and dtypes."""
    python = _study()
    arrow = python.astype({column: pd.StringDtype("pyarrow", na_value=np.nan)
                           for column in python.columns if pd.api.types.is_string_dtype(python[column])})
    assert type(python["model_a"].array).__name__ == "StringArray"
    assert type(arrow["model_a"].array).__name__ == "ArrowStringArray"
    from_arrow, from_python = (results.pairwise(frame, bootstrap_rounds=30) for frame in (arrow, python))
    assert from_arrow.verdict == from_python.verdict
    assert from_arrow.tables.keys() == from_python.tables.keys()
    for name, table in from_python.tables.items():
        other = from_arrow.tables[name]
        if table is None:
            assert other is None, name
            continue
        assert other.to_csv(index=False) == table.to_csv(index=False), name
        assert list(other.dtypes.astype(str)) == list(table.dtypes.astype(str)), name
