"""The platform layer without a running task: configs, task registry, bot pool, frontend package."""
from __future__ import annotations

import json
import threading
from collections import Counter
from pathlib import Path

import pytest

import parlai_dialeval  # noqa: F401  (Python 3.11 fix before mephisto)
from parlai_dialeval.crowdsourcing.platform import frontend, registry
from parlai_dialeval.crowdsourcing.platform.bots import BotPool
from parlai_dialeval.errors import DialevalError

ECHO = {"opt": {"model": "repeat_query"}}
FRONTEND = Path(frontend.FRONTEND_DIR)


def test_live_chat_config_defaults_and_overrides(tmp_path):
    from parlai_dialeval.crowdsourcing.platform.config import compose
    from parlai_dialeval.crowdsourcing.platform.env import prepare_mephisto

    assert prepare_mephisto(tmp_path / "m") == (tmp_path / "m").resolve()
    spec = registry.get_task("live_chat_da")
    cfg = compose(spec)
    assert cfg.mephisto.architect._architect_type == "local" and cfg.mephisto.provider._provider_type == "mock"
    assert cfg.mephisto.task.maximum_units_per_worker == 1  # one unit per worker per task by default
    assert cfg.mephisto.blueprint.block_qualification == "dialeval_qc_failed"
    assert cfg.live_chat.num_slots == 6 and cfg.live_chat.min_inputs == 10 and list(cfg.live_chat.qc_models) == ["qc"]
    assert len(cfg.live_chat.models) == 6
    cfg = compose(spec, ["conf=offline_small", "live_chat.min_inputs=3", "mephisto/provider=mturk_sandbox"])
    assert sorted(cfg.live_chat.models) == ["echo", "qc", "retrieval"] and cfg.live_chat.min_inputs == 3
    assert cfg.mephisto.provider._provider_type == "mturk_sandbox"


def test_registry_names_tasks_and_rejects_unknown_ones():
    assert "live_chat_da" in registry.available_tasks()
    with pytest.raises(DialevalError, match="unknown crowdsourcing task 'nope'"):
        registry.get_task("nope")


def test_frontend_bundle_errors_are_clear():
    with pytest.raises(DialevalError, match="no frontend entry"):
        frontend.bundle_path("no_such_task")


def test_lockfile_records_no_download_address_other_than_the_npm_registry():
    lock = json.loads((FRONTEND / "package-lock.json").read_text())
    resolved = [p.get("resolved") for p in lock["packages"].values() if p.get("resolved")]
    assert all(url.startswith("https://registry.npmjs.org/") for url in resolved)
    pinned = {name.split("node_modules/")[-1]: p["version"] for name, p in lock["packages"].items() if name}
    assert pinned["mephisto-task"] == "2.0.4" and pinned["bootstrap-chat"] == "2.0.2"
    assert pinned["react"] == "16.13.1"


def test_pool_balances_models_across_concurrent_hits():
    pool = BotPool({"qc": ECHO, **{f"m{i}": ECHO for i in range(7)}}, ["qc"], seed=1)
    plans = []
    lock = threading.Lock()

    def hit():
        chosen = pool.reserve(5)
        with lock:
            plans.append(chosen)

    threads = [threading.Thread(target=hit) for _ in range(14)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    counts = Counter(m for plan in plans for m in plan)
    assert sum(counts.values()) == 70 and set(counts.values()) == {10}  # 14 HITs x 5 slots over 7 models
    assert all(len(set(plan)) == 5 for plan in plans)  # no model twice in a HIT
    pool.release("m0")
    assert pool.reserve(1) == ["m0"]  # a released slot goes to the model that lost it


def test_pool_refuses_zoo_downloads_and_unknown_qc():
    with pytest.raises(DialevalError, match="would download from parl.ai"):
        BotPool({"b": {"opt": {"model_file": "zoo:blender/blender_90M/model"}}})
    with pytest.raises(DialevalError, match="qc_models"):
        BotPool({"a": ECHO}, ["qc"])


def test_chat_units_are_offered_in_random_order():
    """A crowd arriving at once is offered the run's units in different orders (issue 32: in Mephisto's one
    order, 500 arrivals collided on the same first units about 25,000 times): every offer is the whole
    list, and 40 arrivals' first choices among 100 units are spread out (all on 10 or fewer units:
    probability below C(100, 10) * 0.1 ** 40 < 1e-26)."""
    from parlai_dialeval.crowdsourcing.platform.blueprint import DialevalChatBlueprint

    runner_class = DialevalChatBlueprint.TaskRunnerClass
    runner = object.__new__(runner_class)  # filter_units_for_worker reads no state of the runner
    units = [f"unit_{i}" for i in range(100)]
    offers = [runner.filter_units_for_worker(list(units), worker=None) for _ in range(40)]
    assert all(sorted(offer) == sorted(units) for offer in offers)
    assert len({offer[0] for offer in offers}) > 10
