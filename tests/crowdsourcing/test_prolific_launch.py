"""Launching on Prolific against the fake: what is checked before anything exists (token, reward against
the minimum hourly rate, cost against balance), no orphan study when set-up fails half way, a 429 on
study creation retried, and the token kept out of Mephisto's saved config, the data folder and output;
`dialeval prolific register` reads it from an environment variable or a file."""
from __future__ import annotations

import os
import sqlite3
import stat

import pytest

from parlai_dialeval.cli import main as dialeval
from parlai_dialeval.errors import DialevalError
from parlai_dialeval.testing.ports import free_port

from .prolific_harness import fake  # noqa: F401,F811  (the fixture)
from .prolific_harness import (TOKEN, ProlificMockRun, arrive, provider_overrides, register, scale_items,
                               scale_overrides)

pytestmark = pytest.mark.slow


def _launch_fails(tmp_path, fake, monkeypatch, port, extra=(), faults=()):
    """Launch scale_designs (3 units) as `dialeval launch` does; return (error, db), checking that nothing
    was left on Prolific and the token is not in the message."""
    data = tmp_path / "mephisto"
    register(data, fake, monkeypatch)
    for fault in faults:
        fake.inject(**fault)
    from mephisto.abstractions.databases.local_database import LocalMephistoDB
    from mephisto.operations.operator import Operator
    from mephisto.tools.scripts import augment_config_from_db

    from parlai_dialeval.crowdsourcing.platform.config import compose
    from parlai_dialeval.crowdsourcing.platform.env import database_path
    from parlai_dialeval.crowdsourcing.platform.registry import get_task

    spec = get_task("scale_designs")
    db = LocalMephistoDB(database_path=str(database_path(data)))
    cfg = compose(spec, ["mephisto/architect=mock", f"mephisto.architect.port={port}",
                         "mephisto.architect.should_run_server=true", *provider_overrides(fake),
                         *scale_overrides(scale_items(tmp_path / "items.jsonl", 3), "sd_guard"), *extra])
    cfg = augment_config_from_db(cfg, db)
    operator = Operator(db)
    try:
        with pytest.raises(DialevalError) as raised:
            operator.launch_task_run_or_die(cfg.mephisto, shared_state=spec.shared_state(cfg))
    finally:
        operator.force_shutdown(timeout=5)
    assert not fake.state.studies, "a study was left on Prolific"
    assert TOKEN not in str(raised.value)
    return str(raised.value), db


def test_balance_short_refused_with_both_figures(tmp_path, fake, monkeypatch, capsys):
    with fake.state.lock:
        for balance in fake.state.balances.values():
            balance["available_balance"] = 500  # 5.00 GBP
    message, db = _launch_fails(tmp_path, fake, monkeypatch, free_port())
    # 3 places x 2.50 GBP = 7.50 + 33.3% fees (the fake's cost calculator) = 10.00 GBP
    assert "the run costs 10.00 GBP" in message and "has 5.00 GBP" in message
    assert "3 place(s) x 2.50 GBP = 7.50 GBP + fees 2.50 GBP = 10.00 GBP" in capsys.readouterr().out
    assert db.find_task_runs() == []  # refused before Mephisto recorded a run


def test_reward_below_minimum_hourly_rate(tmp_path, fake, monkeypatch):
    message, _ = _launch_fails(tmp_path, fake, monkeypatch, free_port(), ["mephisto.provider.reward=0.50"])
    assert "0.50 GBP for 15 minutes is 2.00 GBP/hour, below Prolific's minimum of 6.00 GBP/hour" in message
    assert not fake.state.calls or all(c["method"] == "GET" for c in fake.state.calls)


def test_refused_token_stops_before_anything_is_created(tmp_path, fake, monkeypatch):
    message, db = _launch_fails(tmp_path, fake, monkeypatch, free_port(), faults=[{"status": 401, "path": "users/me"}])
    assert "HTTP 401" in message and "dialeval prolific register" in message
    assert db.find_task_runs() == []


@pytest.mark.parametrize("fault", [
    {"status": 503, "count": 20, "path": r"studies/[^/]+/transition/$"},  # publishing keeps failing
    {"status": 500, "path": r"studies/$", "method": "POST", "after": True},  # created, but the answer is lost
], ids=["publish_fails", "create_answer_lost"])
def test_server_errors_during_setup_leave_no_orphan_study(tmp_path, fake, monkeypatch, fault):
    message, _ = _launch_fails(tmp_path, fake, monkeypatch, free_port(), ["mephisto.provider.max_retries=1"], [fault])
    assert f"HTTP {fault['status']}" in message and "deleted the unpublished study" in message
    assert "nothing is left on Prolific" in message
    assert [c["method"] for c in fake.state.calls if c["path"].startswith("/api/v1/studies/")
            and c["method"] == "DELETE"] == ["DELETE"]


def test_launch_keeps_the_token_secret_and_retries_429(tmp_path, fake, monkeypatch, capsys, caplog):
    data = tmp_path / "mephisto"
    register(data, fake, monkeypatch)
    fake.inject(429, 2, path=r"studies/$", method="POST", retry_after=0.1)
    run = ProlificMockRun("scale_designs", data, free_port(), fake, [
        *scale_overrides(scale_items(tmp_path / "i.jsonl", 2), "sd_secret"),
        "mephisto.provider.block_list=[PID_BANNED]",
        "mephisto.provider.eligibility_filters=[{filter_id: current-country-of-residence, selected_values: ['1']}]"])
    try:
        assert len(fake.state.studies) == 1
        study = fake.state.studies[run.study["study_id"]]
        assert study["status"] == "ACTIVE" and study["reward"] == 250  # 2.50 GBP in pence
        run.wait(lambda: study["total_available_places"] == 2, what="a place per unit")  # units launch in a thread
        assert "{{%PROLIFIC_PID%}}" in study["external_study_url"]
        assert {"filter_id": "current-country-of-residence", "selected_values": ["1"]} in study["filters"]
        assert {"filter_id": "custom_blocklist", "selected_values": ["PID_BANNED"]} in study["filters"]
        with pytest.raises(AssertionError, match="403"):
            arrive(fake, study["id"], "PID_BANNED")
        with sqlite3.connect(data / "database.db") as mephisto_db:  # Mephisto's saved config of the run
            saved = mephisto_db.execute("SELECT init_params FROM task_runs").fetchone()[0]
        assert "_provider_type: prolific" in saved and TOKEN not in saved
    finally:
        run.shutdown()
    creates = [c["status"] for c in fake.state.calls if c["path"] == "/api/v1/studies/" and c["method"] == "POST"]
    assert creates == [429, 429, 201]
    leaks = [p for p in data.rglob("*")
             if p.is_file() and p.name != "credentials.json" and TOKEN.encode() in p.read_bytes()]
    assert leaks == []
    assert TOKEN not in capsys.readouterr().out + caplog.text
    creds = data / "prolific" / "credentials.json"
    assert stat.S_IMODE(os.stat(creds).st_mode) == 0o600


def test_register_reads_token_from_env_or_file(tmp_path, fake, monkeypatch, capsys):
    data = str(tmp_path / "mephisto")
    base = ["prolific", "register", "lab", "--api-base-url", fake.api_base_url, "--mephisto-data", data]
    monkeypatch.setenv("LAB_TOKEN", "wrong-token-3b8e")
    assert dialeval([*base, "--token-env", "LAB_TOKEN"]) == 2
    err = capsys.readouterr().err
    assert "HTTP 401" in err and "wrong-token-3b8e" not in err and len(err.strip().splitlines()) == 1
    monkeypatch.delenv("LAB_TOKEN")
    assert dialeval([*base, "--token-env", "LAB_TOKEN"]) == 2
    assert "LAB_TOKEN is not set" in capsys.readouterr().err
    token_file = tmp_path / "token.txt"
    token_file.write_text(TOKEN + "\n")
    assert dialeval([*base, "--token-file", str(token_file)]) == 0
    out = capsys.readouterr()
    assert "registered Prolific requester 'lab'" in out.out and TOKEN not in out.out + out.err


def test_launch_without_registered_requester(tmp_path, capsys):
    code = dialeval(["launch", "live_chat_da", "conf=offline_small", "mephisto/provider=prolific",
                     f"mephisto.architect.port={free_port()}", "--mephisto-data", str(tmp_path / "mephisto")])
    err = capsys.readouterr().err
    assert code == 2 and "no Prolific requester" in err and "dialeval prolific register NAME" in err


def test_refused_places_do_not_stop_units_launching(tmp_path, fake, monkeypatch):
    """A PATCH of the study's places that fails is logged, never raised out of ProlificUnit.launch (it
    would end Mephisto's unit-launch thread); a later status poll gives the study its places."""
    data = tmp_path / "mephisto"
    register(data, fake, monkeypatch)
    fake.inject(500, 2, path=r"studies/[^/]+/$", method="PATCH")  # the places of units 2 and 3
    port = free_port()
    run = ProlificMockRun("scale_designs", data, port, fake, scale_overrides(scale_items(tmp_path / "i.jsonl", 3),
                                                                             "sd_places"))
    try:
        def units():
            return run.db.find_units(task_run_id=run.live_run.task_run.db_id)

        run.wait(lambda: [u.get_status() for u in units()] == ["launched"] * 3, what="all three units launched")
        study = fake.state.studies[run.study["study_id"]]
        type(units()[0])._last_sync.clear()
        units()[0].get_status()  # as Mephisto's launcher does every second
        assert study["total_available_places"] == 3
        assert [c["status"] for c in fake.state.calls if c["method"] == "PATCH"] == [500, 500, 200]
    finally:
        run.shutdown()
