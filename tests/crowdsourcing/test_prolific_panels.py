"""Issue 53, item 3: panels of trusted raters on Prolific, against the fake: `dialeval prolific panel create|add|
list` keep a participant group of the workspace; a study launched with ``mephisto.provider.panel`` admits only
its members (Prolific's participant_group_allowlist filter: a non-member can neither start on Prolific nor
come in with a made-up session); ``add_to_panel`` gives the completion code the ADD_TO_PARTICIPANT_GROUP action,
so whoever completes joins that panel; ``auto_approve`` makes it AUTOMATICALLY_APPROVE. The study's body fits
the contract (the ``fake`` fixture: Prolific's CLI example study-with-participant-group-allow-list.json)."""
from __future__ import annotations

import httpx
import pytest

from parlai_dialeval.cli import main
from parlai_dialeval.testing.ports import free_port

from .prolific_harness import fake  # noqa: F401,F811  (the fixture)
from .prolific_harness import (REQUESTER, ProlificMockRun, knock, register, scale_answers, scale_items,
                               scale_overrides, submit_static_unit)

pytestmark = pytest.mark.slow
MEMBER, OUTSIDER = "5f0c1d2e3a4b5c6d7e8f9a01", "5f0c1d2e3a4b5c6d7e8f9a02"


def _panel(data, capsys, *args) -> str:
    """`dialeval prolific panel ARGS` in this process (the fake lives here): what it printed."""
    capsys.readouterr()
    main(["prolific", "panel", *args, "--requester", REQUESTER, "--mephisto-data", str(data)])
    said = capsys.readouterr()
    return said.out + said.err


def test_a_panel_study_admits_only_panel_members(tmp_path, fake, monkeypatch, capsys):  # noqa: F811
    from parlai_dialeval.providers.prolific import verify

    data = tmp_path / "mephisto"
    register(data, fake, monkeypatch)
    assert "panel 'trusted' created" in _panel(data, capsys, "create", "trusted")
    assert "1 member(s)" in _panel(data, capsys, "add", "trusted", MEMBER)
    assert MEMBER not in _panel(data, capsys, "add", "trusted", MEMBER)  # ids are shown cut, never whole
    assert "a participant group 'trusted' exists already" in _panel(data, capsys, "create", "trusted")
    trusted = next(g for g in fake.state.groups.values() if g["name"] == "trusted")
    assert set(trusted["participants"]) == {MEMBER}

    run = ProlificMockRun("scale_designs", data, free_port(), fake, [
        *scale_overrides(scale_items(tmp_path / "i.jsonl", 2), "sd_panel"), "mephisto.provider.panel=trusted",
        "mephisto.provider.add_to_panel=passed_sd", "mephisto.provider.auto_approve=true"])
    try:
        study = fake.state.studies[run.study["study_id"]]
        assert {"filter_id": "participant_group_allowlist", "selected_values": [trusted["id"]]} in study["filters"]
        passed = next(g for g in fake.state.groups.values() if g["name"] == "passed_sd")
        assert study["completion_codes"][0]["actions"] == [
            {"action": "AUTOMATICALLY_APPROVE"}, {"action": "ADD_TO_PARTICIPANT_GROUP", "participant_group": passed["id"]}]
        refused = httpx.get(fake.study_url(study["id"], OUTSIDER), follow_redirects=False)  # not in the panel
        assert refused.status_code == 403 and "not in an allowed participant group" in refused.text
        made_up = knock(run, OUTSIDER, "5f0c1d2e3a4b5c6d7e8f9b99", study["id"])
        assert made_up["agent_id"] is None and made_up["failure_reason"] == verify.UNKNOWN
        run.register(MEMBER)  # the member takes part and completes
        submit_static_unit(run, MEMBER, scale_answers, on_prolific=False)
        run.wait(lambda: run.submission(MEMBER)["status"] == "APPROVED", 20, "the member's submission approved")
        assert run.submission(MEMBER)["study_code"] == run.study["completion_code"]  # approved by the code's action
        assert set(passed["participants"]) == {MEMBER}  # and now in the panel of those who completed
    finally:
        run.shutdown()
    listed = _panel(data, capsys, "list")
    assert "trusted\t1 member(s)" in listed and "passed_sd\t1 member(s)" in listed


def test_a_panel_that_does_not_exist_stops_the_launch_before_anything_is_created(tmp_path, fake, monkeypatch):  # noqa: F811
    from .test_prolific_launch import _launch_fails

    message, db = _launch_fails(tmp_path, fake, monkeypatch, free_port(), ["mephisto.provider.panel=nobody"])
    assert "no Prolific participant group 'nobody'" in message and "dialeval prolific panel create nobody" in message
    assert db.find_task_runs() == [] and fake.state.studies == {}  # refused before anything was created
