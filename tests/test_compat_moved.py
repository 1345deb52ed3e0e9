"""The patches issue 39 moved into compat/ check what they patch: each refuses a copy of its target that no
longer fits (ParlAI's loader table, AcceptabilityChecker's fields) and takes effect on the real one."""
from __future__ import annotations

import types

import pytest

from parlai_dialeval.compat import CompatError
from parlai_dialeval.compat import mephisto as compat_mephisto
from parlai_dialeval.compat import parlai as compat_parlai


def test_the_dialeval_prefix_is_registered_and_refused_on_a_loader_that_no_longer_reads_the_table():
    from parlai.core import loader

    import parlai_dialeval  # noqa: F401  (compat.install registers it)

    assert loader.REGISTERED_REPOS["dialeval:"]["repo"] == "parlai_dialeval"
    assert loader.assert_get_source_repo("dialeval:fed") == ("parlai_dialeval", "fed")

    def assert_get_source_repo(asset_path):  # a loader that moved to entry points
        return asset_path.split(":")

    moved = types.SimpleNamespace(REGISTERED_REPOS={}, assert_get_source_repo=assert_get_source_repo)
    with pytest.raises(CompatError, match="no longer calls 'REGISTERED_REPOS.items\\(\\)'"):
        compat_parlai.register_prefix(moved)
    assert moved.REGISTERED_REPOS == {}


def test_the_acceptability_checker_reads_our_list_and_refuses_an_init_with_other_fields(tmp_path, monkeypatch):
    from parlai.crowdsourcing.utils.acceptability import AcceptabilityChecker

    words = tmp_path / "words.txt"
    words.write_text("zonk\n", encoding="utf-8")
    checker = compat_parlai.acceptability_checker(str(words), 2)
    assert checker.check_messages(["fine words here", "a zonk here"], is_worker_0=False,
                                  violation_types=("safety",)) == "unsafe:2"
    assert checker.check_messages(["fine words here"], is_worker_0=False, violation_types=("safety",)) == ""
    assert checker.check_messages(["one"], is_worker_0=False, violation_types=("min_words",)) == "under_min_length"

    def __init__(self, min_words=None):  # an upstream that grew a field our copy would not set
        self.offensive_lang_detector = None
        self.min_words_violation_threshold = min_words
        self.language = "en"

    monkeypatch.setattr(AcceptabilityChecker, "__init__", __init__)
    with pytest.raises(CompatError, match="sets other fields"):
        compat_parlai.acceptability_checker(str(words), 2)


def test_our_providers_are_in_mephistos_registry_and_missing_ones_are_named(monkeypatch):
    import mephisto  # noqa: F401  (the hook registers ours as it loads)

    compat_mephisto.require_providers()
    monkeypatch.setitem(compat_mephisto.PROVIDERS, "nowhere", "parlai_dialeval.providers.nowhere")
    with pytest.raises(CompatError, match="\\['nowhere'\\] not in Mephisto's registry"):
        compat_mephisto.require_providers()


def test_gpt2s_mlp_is_recognised_by_class_and_refused_when_its_forward_changes(monkeypatch):
    from transformers.models.gpt2.modeling_gpt2 import GPT2MLP

    from parlai_dialeval.compat import transformers as compat_transformers

    assert compat_transformers.gpt2_mlp() is GPT2MLP and compat_transformers.mlp_unfit() is None

    def forward(self, hidden_states):  # an upstream MLP that normalises between c_fc and act
        hidden_states = self.c_fc(hidden_states) * 0.5
        return self.dropout(self.c_proj(self.act(hidden_states)))

    monkeypatch.setattr(GPT2MLP, "forward", forward)
    assert compat_transformers.gpt2_mlp() is None
    with pytest.raises(CompatError, match="no longer calls"):
        compat_transformers.check()
    monkeypatch.undo()
    monkeypatch.setattr(compat_transformers, "WRITTEN_FOR", "0.0.1")
    assert compat_transformers.gpt2_mlp() is None and "written for transformers 0.0.1" in compat_transformers.mlp_unfit()


def test_an_agent_shares_the_unit_it_is_given_and_refuses_a_get_unit_that_no_longer_reads_it(monkeypatch):
    from mephisto.data_model.agent import Agent

    agent, unit = types.SimpleNamespace(_unit=None), object()  # Mephisto's Agent needs a database to exist
    compat_mephisto.share_unit(agent, unit)
    assert Agent.get_unit(agent) is unit

    def get_unit(self):  # an upstream that reads the unit back from the database every time
        return self.db.get_unit(self.unit_id)

    monkeypatch.setattr(Agent, "get_unit", get_unit)
    with pytest.raises(CompatError, match="no longer calls 'return self._unit'"):
        compat_mephisto.share_unit(agent, unit)
