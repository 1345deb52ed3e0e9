"""Model entries of the tasks: ParlAI flag strings, ParlAI's model_opts.yaml and conversations_needed quotas
(the shapes of ParlAI's model_chat and pairwise_per_turn_eval examples), zoo refusal, turn meta."""
from __future__ import annotations

import pytest

from parlai_dialeval.crowdsourcing.platform.bots import (BotPool, flags_to_opt, model_opt, parse_quotas,
                                                          read_model_opts, resolve_models, turn_meta)
from parlai_dialeval.crowdsourcing.platform.zoo_check import ZooDownloadRefused, resolve_zoo_paths
from parlai_dialeval.errors import DialevalError

ECHO = {"opt": {"model": "repeat_query"}}


def test_flag_strings_become_opts_without_resolving_zoo_paths():
    flags = ("--model-file zoo:blender/blender_90M/model\n    --inference beam \n    --beam-min-length 20\n"
             "    --beam-block-full-context False --skip-generation False -m transformer/generator --verbose "
             "--temperature -0.5")
    assert flags_to_opt(flags) == {
        "model_file": "zoo:blender/blender_90M/model", "inference": "beam", "beam_min_length": "20",
        "beam_block_full_context": "False", "skip_generation": "False", "model": "transformer/generator",
        "verbose": True, "temperature": "-0.5"}
    assert flags_to_opt("-mf /models/x/model -t convai2") == {"model_file": "/models/x/model", "task": "convai2"}
    assert model_opt("b", "--model repeat_query") == {"model": "repeat_query"}
    assert model_opt("b", ECHO) == {"model": "repeat_query"}
    with pytest.raises(DialevalError, match="model 'b': 'repeat_query' is not a --flag"):
        model_opt("b", "repeat_query")


def test_model_opts_file_and_quotas(tmp_path):
    path = tmp_path / "model_opts.yaml"
    path.write_text("blender_90M: >\n    --model-file zoo:blender/blender_90M/model\n    --beam-size 10\n")
    assert read_model_opts(str(path)) == {"blender_90M": {"opt": {"model_file": "zoo:blender/blender_90M/model",
                                                                  "beam_size": "10"}}}
    assert parse_quotas("blender_90M:10") == ({"blender_90M": 10}, {})
    assert parse_quotas("modelA:50,modelB:20") == ({"modelA": 50, "modelB": 20}, {})
    assert parse_quotas("blender_90M:blender_3B:100") == ({}, {("blender_90M", "blender_3B"): 100})
    with pytest.raises(DialevalError, match="expected entries like 'modelA:50'.*got 'blender_90M:ten'"):
        parse_quotas("blender_90M:ten")
    models, quotas, _ = resolve_models({"echo": ECHO}, str(path), "blender_90M:3")
    assert sorted(models) == ["blender_90M", "echo"] and quotas == {"blender_90M": 3}
    with pytest.raises(DialevalError, match=r"conversations_needed names \['nope'\]"):
        resolve_models({"echo": ECHO}, None, "nope:3")
    with pytest.raises(DialevalError, match="cannot read the model_opts file"):
        read_model_opts(str(tmp_path / "missing.yaml"))


def test_quotas_decide_which_models_each_hit_gets():
    pool = BotPool({"a": ECHO, "b": ECHO, "unused": ECHO, "qc": ECHO}, qc_models=["qc"], seed=0,
                   conversations_needed="a:3,b:1")
    assert sorted(pool._shared) == ["a", "b", "qc"]  # as ParlAI: only models with a quota are loaded
    picks = [pool.reserve(1)[0] for _ in range(4)]
    assert sorted(picks) == ["a", "a", "a", "b"] and picks[0] == "a"  # most conversations still needed first
    pairs = BotPool({"a": ECHO, "b": ECHO, "c": ECHO}, seed=0, conversations_needed="a:b:2,b:c:1")
    drawn = [tuple(pairs.reserve(2)) for _ in range(3)]
    assert sorted(drawn) == [("a", "b"), ("a", "b"), ("b", "c")]


def test_zoo_paths_in_any_option_and_in_the_model_opt_file_are_checked(tmp_path):
    with pytest.raises(ZooDownloadRefused, match="bot 'x': init_model 'zoo:blender/blender_90M/model' is not built"):
        resolve_zoo_paths({"model": "repeat_query", "init_model": "zoo:blender/blender_90M/model",
                           "datapath": str(tmp_path)}, "x")
    local = tmp_path / "mine"
    local.mkdir()
    (local / "model").write_text("weights")
    (local / "model.opt").write_text('{"model": "repeat_query", "dict_file": "zoo:blender/blender_90M/model.dict"}')
    with pytest.raises(ZooDownloadRefused, match=r"dict_file \(in .*/mine/model.opt\) 'zoo:blender"):
        resolve_zoo_paths({"model_file": str(local / "model"), "datapath": str(tmp_path)}, "x")
    assert not (tmp_path / "models").exists()


def test_turn_meta_keeps_audit_and_costs_only():
    reply = {"text": "hi", "id": "x", "latency": 0.3, "prompt_tokens": 5, "completion_tokens": 1,
             "finish_reason": "stop", "attempts": 1, "qc_audit": {"original": "a"}, "prompt_tokens_x": 9}
    assert turn_meta(reply) == {"qc_audit": {"original": "a"}, "latency": 0.3, "prompt_tokens": 5,
                                "completion_tokens": 1, "finish_reason": "stop", "attempts": 1}
    assert turn_meta({"text": "hi", "prompt_tokens": None}) == {} and turn_meta(None) == {}
