"""Issue 20, item 8: what `dialeval launch` / `dialeval export` say when given something wrong: one line
naming the problem and what is valid, never a traceback."""
from __future__ import annotations

import re

import pytest

from parlai_dialeval.crowdsourcing.platform.config import compose
from parlai_dialeval.crowdsourcing.platform.env import database_path, prepare_mephisto
from parlai_dialeval.crowdsourcing.platform.registry import get_task
from parlai_dialeval.errors import DialevalError
from parlai_dialeval.testing.ports import free_port

from .zygote import dialeval_run


@pytest.mark.parametrize("override, message", [
    ("live_chat.num_slot=4", "live_chat.num_slot: no such setting in live_chat; valid keys: allow_zoo, bots_dir, "
                             "ice_breaker, ice_breakers, min_inputs, models, num_slots, qc_models, seed, turn_timeout"),
    ("live_chat.num_slots=four", "live_chat.num_slots: Value 'four' of type 'str' could not be converted to Integer"),
    ("mephisto.architect.prot=3", "mephisto.architect.prot: no such setting in mephisto.architect; valid keys: "
                                  "hostname, port, server_source_path, server_type"),
    ("mephisto/architect=nope", "mephisto/architect=nope: no such option for live_chat_da; available: ec2, heroku, "
                                "local, mock"),
    ("live_chat.num_slots", "Error parsing override 'live_chat.num_slots': expected KEY=VALUE "
                            "(e.g. mephisto.architect.port=3100)"),
    # an interpolation that cannot resolve: said at once (it was a traceback from the launch's first read of it)
    ("live_chat.seed=${oc.env:DIALEVAL_TEST_NOT_SET}",
     "live_chat.seed: KeyError raised while resolving interpolation: \"Environment variable 'DIALEVAL_TEST_NOT_SET' "
     "not found\""),
    ("live_chat.num_slots=${nope.key}", "live_chat.num_slots: Interpolation key 'nope.key' not found"),
])
def test_override_typo_is_one_line_with_the_valid_keys(tmp_path, override, message):
    prepare_mephisto(tmp_path)
    with pytest.raises(DialevalError) as raised:
        compose(get_task("live_chat_da"), [override])
    valid = str(raised.value)
    if "valid keys" in message:  # other helpers add settings: every key named must be there, in order
        head, keys = message.split("valid keys: ")
        assert valid.startswith(head) and set(keys.split(", ")) <= set(valid.split("valid keys: ")[1].split(", "))
    else:
        assert valid == message


@pytest.mark.parametrize("task, override, message", [
    ("live_chat_da", "live_chat.turn_timeout=-5", "live_chat.turn_timeout -5: expected a number > 0"),
    ("live_chat_da", "live_chat.num_slots=0", "live_chat.num_slots 0: expected an integer >= 1"),
    ("live_chat_da", "live_chat.limits.rate_per_minute=-1",
     "live_chat.limits.rate_per_minute -1: expected an integer >= 1"),
    ("live_chat_da", "mephisto.blueprint.router_reconnect_seconds=-1",
     "mephisto.blueprint.router_reconnect_seconds -1.0: expected a number > 0"),
    ("pw_turn", "pw_turn.num_turns=0", "pw_turn.num_turns 0: expected an integer >= 1"),
    ("sm_eval", "sm_eval.num_turns=-1", "sm_eval.num_turns -1: expected an integer >= 1"),
    ("arena", "arena.max_battles=0", "arena.max_battles 0: expected an integer >= 1"),
    # the world raised at the participant's first step and the page said "Connecting to the chatbots..." for ever
    ("live_chat_da", "live_chat.num_slots=2",
     "live_chat.num_slots 2: expected at least 3 (the QC bot is never first or last)"),
    ("acute", "adaptive_alpha=1.5", "adaptive_alpha 1.5: expected a number strictly between 0 and 1"),
    ("acute", "acute.onboarding_threshold=1.5", "acute.onboarding_threshold 1.5: expected a number between 0 and 1"),
    ("acute", "adaptive_explore=-0.1", "adaptive_explore -0.1: expected a number between 0 and 1"),
    ("arena", "arena.explore=0", "arena.explore 0.0: expected a number > 0 and <= 1"),
    ("arena", "arena.dedup.near_threshold=0", "arena.dedup.near_threshold 0.0: expected a number > 0 and <= 1"),
    ("arena", "mephisto.blueprint.router_claims_share=5",
     "mephisto.blueprint.router_claims_share 5.0: expected a number > 0 and <= 1"),
])
def test_a_setting_out_of_range_is_one_line(tmp_path, task, override, message):
    """Hydra checks types only: each of these launched a study no participant could do (a negative idle limit,
    no conversations or turns, every action over the rate limit, an onboarding no one can pass, every prompt a
    duplicate of every other) or one that let one address take every place, before the ranges were checked."""
    prepare_mephisto(tmp_path)
    with pytest.raises(DialevalError) as raised:
        compose(get_task(task), [override])
    assert str(raised.value) == message


@pytest.mark.parametrize("task, overrides, message", [
    ("arena", ["arena.min_battles=5", "arena.max_battles=2"],
     "arena.min_battles 5: expected at most arena.max_battles (2)"),
    ("live_chat_da", ["live_chat.min_inputs=30", "live_chat.max_inputs=5"],
     "live_chat.min_inputs 30: expected at most live_chat.max_inputs (5)"),
])
def test_a_setting_above_the_one_that_bounds_it_is_one_line(tmp_path, task, overrides, message):
    """Each launched: an arena participant's session failed when made, a live chat asked for more messages than
    it lets a participant send."""
    prepare_mephisto(tmp_path)
    with pytest.raises(DialevalError) as raised:
        compose(get_task(task), overrides)
    assert str(raised.value) == message


def test_every_shipped_conf_is_in_range(tmp_path):
    from parlai_dialeval.crowdsourcing.platform.registry import available_tasks

    prepare_mephisto(tmp_path)
    composed = [compose(get_task(task), [f"conf={conf.stem}"]) for task in available_tasks()
                for conf in sorted(get_task(task).conf_dir.glob("*.yaml"))]
    assert len(composed) >= len(available_tasks())


def test_conf_typo_lists_the_task_confs(tmp_path):
    prepare_mephisto(tmp_path)
    with pytest.raises(DialevalError) as raised:
        compose(get_task("live_chat_da"), ["conf=exampel"])
    confs = sorted(p.stem for p in get_task("live_chat_da").conf_dir.glob("*.yaml"))
    assert str(raised.value) == f"conf=exampel: no such option for live_chat_da; available: {', '.join(confs)}"


def test_export_creates_a_missing_out_folder_and_says_so(tmp_path, capsys):
    from mephisto.abstractions.databases.local_database import LocalMephistoDB

    from parlai_dialeval.scripts.export import Export

    prepare_mephisto(tmp_path)
    LocalMephistoDB(database_path=str(database_path(tmp_path))).new_task("acute", "dialeval_static")
    out = tmp_path / "new" / "folder" / "acute.jsonl"
    Export.main("acute", "--out", str(out), "--mephisto-data", str(tmp_path))
    assert f"created folder {out.parent}" in capsys.readouterr().out and out.is_file()


def test_export_of_a_task_never_launched_creates_nothing(tmp_path, monkeypatch, capsys):
    # the --out folder and a mistyped --mephisto-data (or the default one in the dialeval home) were made
    # before the "no task named" error and left behind
    from parlai_dialeval.scripts.export import Export

    out, typo = tmp_path / "rex" / "out.jsonl", tmp_path / "rtypo"
    with pytest.raises(DialevalError, match="no task named 'never_launched'"):
        Export.main("never_launched", "--out", str(out), "--mephisto-data", str(typo))
    monkeypatch.delenv("DIALEVAL_MEPHISTO_DATA", raising=False)
    monkeypatch.setenv("DIALEVAL_HOME", str(tmp_path / "home"))
    with pytest.raises(DialevalError, match="no task named 'never_launched'"):
        Export.main("never_launched", "--out", str(out))
    assert sorted(p.name for p in tmp_path.iterdir()) == []
    assert "created folder" not in capsys.readouterr().out


@pytest.mark.slow
def test_cli_errors_are_one_line_without_traceback(tmp_path):
    data = str(tmp_path / "mephisto")
    typo = dialeval_run(["launch", "live_chat_da", "live_chat.num_slot=4", "--mephisto-data", data], 240)
    assert typo.returncode == 2 and "Traceback" not in typo.stderr + typo.stdout
    assert typo.stderr.strip().splitlines()[-1].startswith(
        "dialeval: error: live_chat.num_slot: no such setting in live_chat; valid keys: ")
    never = dialeval_run(["export", "never_ran", "--out", str(tmp_path / "x.jsonl"), "--mephisto-data", data], 240)
    assert never.returncode == 2 and "Traceback" not in never.stderr
    assert never.stderr.strip() == (f"dialeval: error: no task named 'never_ran': nothing was ever launched with "
                                    f"data directory {data} (no database.db); give the launch's --mephisto-data")


@pytest.mark.slow
def test_launch_ends_with_one_banner_and_keeps_the_libraries_chatter_in_its_log(tmp_path):
    """Issue 40 item 2: the terminal had ten `Mock task launched: ...worker_id=x` lines, three copies of a
    `trivia.yml ... skipped` warning and the router's lines around the one URL to open."""
    from .protocol_harness import CliRun

    port = free_port()
    run = CliRun("live_chat_da", tmp_path, [f"mephisto.architect.port={port}"], real_process=True)
    try:
        terminal = run.terminal()
    finally:
        run.stop()
    log_file = re.search(r"messages go to (\S+\.log)", terminal)[1]
    log = open(log_file).read()
    for chatter in ("Mock task launched", "trivia.yml", "Server running locally", "Creating a task run"):
        assert chatter not in terminal and chatter in log, chatter
    banner = terminal[terminal.index("is running"):]
    assert re.search(rf"Participants: Open http://localhost:{port}/\?worker_id=worker_1&assignment_id=1 in your "
                     "browser", banner)
    assert "Stop: Ctrl-C" in banner and f"Log: {log_file}" in banner
    assert len(terminal.splitlines()) <= 10, terminal
    assert "Saved in" in run.terminal()  # what the stop says reaches the terminal too


def test_launch_log_keeps_a_secret_line_out_of_the_file_and_everything_else_in(tmp_path, capfd):
    """The banner's dashboard line may hold the token: it reaches the terminal, the log gets it without."""
    import os
    import subprocess as sp

    from parlai_dialeval.crowdsourcing.platform import launch_log

    path = tmp_path / "logs" / "launch.log"
    with launch_log.output_to(path):
        print("library chatter")
        sp.run(["echo", "a child process"], check=True)
        os.write(2, b"stderr chatter\n")
        launch_log.say("Dashboard: http://x/?token=SECRET", "Dashboard: http://x/ (token shown in the terminal only)")
    terminal = capfd.readouterr().out
    log = path.read_text()
    assert terminal == "Dashboard: http://x/?token=SECRET\n"
    assert "SECRET" not in log and "(token shown in the terminal only)" in log
    assert all(line in log for line in ("library chatter", "a child process", "stderr chatter"))
