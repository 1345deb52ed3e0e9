"""The chateval-ab importer against an independent reading of each folder's results.txt."""
from __future__ import annotations

import ast
import collections
import json

import pytest

from crowdsourcing.zygote import dialeval_run
from parlai_dialeval.importers import detect_format, import_paths, load
from parlai_dialeval.importers.formats.chateval import model_name

VOTE = {0: "a", 1: "b", -1: "tie"}


def read_results(path):
    """Independent of the importer: scan lines, collect each prompt's vote list or None (identical)."""
    items = []
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.startswith("Winner is....:"):
            rest = line.split(":", 1)[1].strip()
            items.append(None if rest.startswith("It's a tie") else ast.literal_eval(rest))
    return items


@pytest.fixture(scope="module")
def ab_root(shared_data):
    return shared_data / "chateval" / "amt_ab_2018"


@pytest.fixture(scope="module")
def imported(ab_root):
    return load([ab_root], log=None)


def test_every_folder_converts_to_the_vote_counts_of_its_results_txt(ab_root, imported):
    comparisons = imported.comparisons
    folders = sorted(p for p in ab_root.iterdir() if p.name.startswith("AMT_"))
    assert len(folders) == 20
    for folder in folders:
        expected_votes, expected_auto = collections.Counter(), 0
        per_item = {}
        for index, votes in enumerate(read_results(folder / "results.txt")):
            if votes is None:
                expected_auto += 1
            else:
                expected_votes.update(VOTE[v] for v in votes)
                per_item[f"{folder.name}/ex-{index:03d}"] = sorted(VOTE[v] for v in votes)
        part = comparisons[comparisons["item_id"].str.startswith(folder.name + "/")]
        automatic = part["automatic"].eq(True)
        assert automatic.sum() == expected_auto, folder.name
        assert collections.Counter(part.loc[~automatic, "choice"]) == expected_votes, folder.name
        got = part[~automatic].groupby("item_id")["choice"].apply(sorted).to_dict()
        assert got == {k: v for k, v in per_item.items() if v}, folder.name


def test_models_contexts_and_workers(ab_root, imported):
    folder = ab_root / "AMT_NCM_Test_NCM_Cakechat"
    part = imported.comparisons[imported.comparisons["item_id"].str.startswith(folder.name + "/")]
    assert set(part["model_a"]) == {"NCM"} and set(part["model_b"]) == {"Cakechat"}
    first = part[part["item_id"] == f"{folder.name}/ex-000"].iloc[0]
    block = folder.joinpath("results.txt").read_text(encoding="utf-8").strip().split("\n\n")[0].splitlines()
    assert first["context"] == block[0].removeprefix("Source: ")
    assert first["response_a"] == block[1].removeprefix("Candidate target: ")
    assert first["response_b"] == block[2].removeprefix("Candidate target: ")
    responses = json.loads((folder / "amt_hit_responses.converted.json").read_text())["assignments"]
    workers = {a["WorkerId"] for a in responses}
    assert set(part.loc[~part["automatic"].eq(True), "worker_id"]) <= workers
    assert set(part.loc[part["automatic"].eq(True), "worker_id"]) <= {"automatic"}


def test_model_names_from_response_files():
    assert model_name("/data2/x/pred.txt.seed_701_glove_emb_twitter_clean_acc_22.21_ppl_140.75_e13.pt") == \
        "seed_701_glove_emb_twitter_clean"
    assert model_name("/data2/x/neural_conv_model_joao_responses.txt") == "Human1"
    assert model_name("pred.txt.harvard") == "harvard"


def test_one_folder_several_and_the_parent_are_accepted_and_the_late_vote_is_reported(ab_root):
    one = ab_root / "AMT_NCM_Test_Cakechat_NCM"
    two = ab_root / "AMT_NCM_Test_Glove_OS"
    assert detect_format(one) == detect_format(ab_root) == "chateval-ab"
    single = import_paths([one], "chateval-ab")
    both = import_paths([one, two], "chateval-ab")
    assert single.kept < both.kept
    # ex-174: results.txt holds [1]; the JSON also has a later 'a' answer, which is skipped with a reason.
    assert len(single.skipped) == 1 and "ex-174" in single.skipped[0][0]
    assert single.read == single.kept + len(single.skipped)


def test_convert_cli(ab_root, tmp_path):
    out = tmp_path / "ab.jsonl"
    result = dialeval_run(["convert", "--data", str(ab_root / "AMT_NCM_Test_NCM_Human1"), "--out", str(out)],
                           timeout=120)
    assert result.returncode == 0, result.stderr
    records = [json.loads(line) for line in out.read_text().splitlines()]
    votes = read_results(ab_root / "AMT_NCM_Test_NCM_Human1" / "results.txt")
    comparisons = [r for r in records if r["type"] == "comparison"]
    assert len(comparisons) == sum(len(v) if v is not None else 1 for v in votes)
