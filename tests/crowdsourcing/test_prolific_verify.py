"""Issue 38, item 6: Prolific identities are checked before they get a place. Before, any PROLIFIC_PID and
SESSION_ID sent straight to the task server got a unit (the issue's outsider: PID
``=HYPERLINK("http://example.invalid","x")``, SESSION_ID ``FAKESESSION``, finished a HIT that `dialeval export`
wrote as complete and `dialeval review` never listed). Now, against the fake Prolific (which knows the
sessions it started): made-up, borrowed, returned and other studies' identities are refused with a message
for their page and nothing of theirs is created; the genuine participant is confirmed with one call, recorded
in prolific.db, and asked about again at a page load more than a few seconds later (issue 53); Prolific's
429 is waited out, its failure refuses for now without remembering.
Work from a launch without the check (or any way around it) is exported marked unverified, left out of what
analyses load unless asked, listed by the review, and confirmed there when Prolific lists the session as
theirs."""
from __future__ import annotations

import pytest

from parlai_dialeval.testing.ports import free_port

from .prolific_harness import fake  # noqa: F401,F811  (the fixture)
from .prolific_harness import (ProlificMockRun, arrive, knock, lookups, register, scale_answers, scale_items,
                               scale_overrides, submit_scale_unit, submit_static_unit)

pytestmark = pytest.mark.slow
OUTSIDER = '=HYPERLINK("http://example.invalid","x")'
PID_A, PID_B, PID_C = "5f0c1d2e3a4b5c6d7e8f9a0a", "5f0c1d2e3a4b5c6d7e8f9a0b", "5f0c1d2e3a4b5c6d7e8f9a0c"



def launch(tmp_path, fake, monkeypatch, task_name: str, units: int):
    """(run, A's and B's task-URL parameters): scale_designs with ``units`` places on the fake Prolific, where
    participants A and B have started (each has an ACTIVE submission)."""
    data = tmp_path / "mephisto"
    register(data, fake, monkeypatch)
    run = ProlificMockRun("scale_designs", data, free_port(), fake,
                          scale_overrides(scale_items(tmp_path / "i.jsonl", units), task_name))
    study = run.study["study_id"]
    run.wait(lambda: fake.state.studies[study]["total_available_places"] == units, what="a place per unit")
    return run, arrive(fake, study, PID_A), arrive(fake, study, PID_B)


def test_identities_prolific_does_not_know_get_no_place(tmp_path, fake, monkeypatch):
    from parlai_dialeval.providers.prolific import verify

    run, a, b = launch(tmp_path, fake, monkeypatch, "sd_verify", 3)
    try:
        study = run.study["study_id"]
        fake.state.submissions[b["SESSION_ID"]]["status"] = "RETURNED"  # B returns the study on Prolific
        refused = {
            "the issue's outsider": knock(run, OUTSIDER, "FAKESESSION", study),
            "a made-up session": knock(run, PID_C, "FAKESESSION", study),
            "the same again": knock(run, PID_C, "FAKESESSION", study),
            "A's session, another participant": knock(run, PID_C, a["SESSION_ID"], study),
            "A, from another study": knock(run, PID_A, a["SESSION_ID"], "stu0000otherstudy"),
            "B, returned": knock(run, PID_B, b["SESSION_ID"], study),
            "no study named": knock(run, PID_C, "FAKESESSION2", None),
        }
        gone = refused.pop("B, returned")  # issue 53: told that the session ended, not that Prolific knows none
        assert gone["agent_id"] is None and gone["failure_reason"] == verify.GONE_MESSAGE
        for who, details in refused.items():
            assert details["agent_id"] is None and details["failure_reason"] == verify.UNKNOWN, who
        assert "open the study from your Prolific account" in verify.UNKNOWN
        assert lookups(fake, "FAKESESSION") == [404]  # once: the outsider's ids are never sent, the repeat remembered
        assert lookups(fake, a["SESSION_ID"]) == [200]  # with PID_C; A, from another study: refused unasked
        assert lookups(fake, b["SESSION_ID"]) == [200] and lookups(fake, "FAKESESSION2") == [404]
        # nothing of theirs exists: no worker, no agent, no unit taken
        assert [w.worker_name for w in run.db.find_workers()] == []
        assert run.db.find_agents() == [] and run.store.all("SELECT * FROM agents") == []

        details = knock(run, PID_A, a["SESSION_ID"], study)  # the genuine participant
        assert details["agent_id"] and details["failure_reason"] is None
        assert run.unit_agent(PID_A).get_worker().worker_name == PID_A
        # confirmed with one call of its own; once A holds the unit, Mephisto's launcher (a pass a second) may
        # also have asked about A's submission (ProlificUnit.get_status: at most once per POLL_SECONDS per unit)
        asked = lookups(fake, a["SESSION_ID"])
        assert asked in ([200, 200], [200, 200, 200])  # ...
        now = verify.clock()
        monkeypatch.setattr(verify, "clock", lambda: now)
        again = {"worker_name": PID_A, "assignment_id": a["SESSION_ID"], "study_id": study}
        assert verify.refusal(run.db, run.live_run.task_run.db_id, again, reconnecting="A's agent") is None
        asked = lookups(fake, a["SESSION_ID"])  # (asked again only if A's arrival was CONFIRMED_SECONDS ago)
        assert verify.refusal(run.db, run.live_run.task_run.db_id, again, reconnecting="A's agent") is None
        assert lookups(fake, a["SESSION_ID"]) == asked  # ... a page load within seconds is not asked about again
        assert verify.confirmed(run.db, a["SESSION_ID"])["participant_id"] == PID_A  # recorded in prolific.db
        monkeypatch.setattr(verify, "clock", lambda: now + 15)  # issue 53: one 15 s later is
        assert verify.refusal(run.db, run.live_run.task_run.db_id, again, reconnecting="A's agent") is None
        assert lookups(fake, a["SESSION_ID"]) == [*asked, 200]
    finally:
        run.shutdown()


def test_prolific_busy_or_down(tmp_path, fake, monkeypatch):
    from parlai_dialeval.providers.prolific import verify

    run, a, b = launch(tmp_path, fake, monkeypatch, "sd_verify_busy", 2)
    try:
        study = run.study["study_id"]
        fake.inject(429, 2, path=f"submissions/{a['SESSION_ID']}/", retry_after=0.1)
        assert knock(run, PID_A, a["SESSION_ID"], study)["agent_id"]  # waited out, as Prolific asks
        assert lookups(fake, a["SESSION_ID"]) == [429, 429, 200]
        fake.inject(503, 3, path=f"submissions/{b['SESSION_ID']}/")
        down = knock(run, PID_B, b["SESSION_ID"], study)
        assert down["agent_id"] is None and down["failure_reason"] == verify.UNCONFIRMED
        assert lookups(fake, b["SESSION_ID"]) == [503, 503, 503]  # the retries an arrival gets, no more
        assert knock(run, PID_B, b["SESSION_ID"], study)["agent_id"]  # Prolific back: B's reload is admitted
    finally:
        run.shutdown()


def test_unverified_work_is_marked_left_out_and_listed(tmp_path, fake, monkeypatch):
    """A launch without the check (as before this fix): the outsider and A both finish a unit. The export
    marks both unverified (neither was confirmed); the review confirms A from Prolific's list of the study's
    submissions and lists the outsider as unverified; the export then marks only the outsider."""
    from parlai_dialeval.crowdsourcing.platform.export import collect_from_db, export_task
    from parlai_dialeval.scripts.command_line import load_data
    from parlai_dialeval.providers.prolific import review
    from parlai_dialeval.providers.prolific.provider import ProlificProvider

    data = tmp_path / "mephisto"
    register(data, fake, monkeypatch)
    monkeypatch.setattr(ProlificProvider, "refuse_arrival", lambda self, task_run, crowd_data: None)
    run = ProlificMockRun("scale_designs", data, free_port(), fake,
                          scale_overrides(scale_items(tmp_path / "i.jsonl", 2), "sd_unverified"))
    try:
        knock(run, OUTSIDER, "FAKESESSION", run.study["study_id"])
        submit_static_unit(run, OUTSIDER, scale_answers, on_prolific=False)
        outsider = run.unit_agent(OUTSIDER)
        run.wait(lambda: run.live_agent(outsider).get_status() == "completed", 20, "the outsider's unit done")
        submit_scale_unit(run, PID_A)
    finally:
        run.shutdown()

    def exported():
        report, _ = collect_from_db(run.db, "sd_unverified")
        ratings = [r for r in report.records if r["type"] == "rating"]
        return ({r["worker_id"] for r in ratings if r.get("unverified")},
                {r["worker_id"] for r in ratings if not r.get("unverified")}, report)

    assert exported()[:2] == ({OUTSIDER, PID_A}, set())
    from parlai_dialeval.crowdsourcing.platform.quality import review_qc

    table, _ = review.review_table(run.db, "sd_unverified", *review_qc("sd_unverified", data))
    rows = {r.participant: r for r in table.itertuples()}
    assert rows[PID_A].prolific_status == "AWAITING REVIEW" and rows[PID_A].suggestion == "approve"
    assert rows[OUTSIDER].prolific_status == review.UNVERIFIED and rows[OUTSIDER].submission == "FAKESESSION"
    assert rows[OUTSIDER].suggestion.startswith("none (unverified")
    marked, plain, report = exported()
    assert marked == {OUTSIDER} and plain == {PID_A}
    assert any("identity never confirmed by Prolific" in note and OUTSIDER in note for note in report.notes)
    assert sum(r["type"] == "study" for r in report.records) == 1
    out = tmp_path / "sd_unverified.jsonl"
    export_task("sd_unverified", out, data)  # validated as a whole, the mark included
    said = []
    assert set(load_data({"data": [str(out)]}, log=said.append).ratings["worker_id"]) == {PID_A}
    assert any(line.startswith("left out the work of unverified identities") for line in said)
    kept = load_data({"data": [str(out)], "include_unverified": True}, log=None)
    assert set(kept.ratings["worker_id"]) == {PID_A, OUTSIDER}
