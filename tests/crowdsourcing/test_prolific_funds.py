"""Money held by a published study (issue 42): Prolific reserves a study's cost when it is published, so
the workspace's available balance is "after removing funds assigned to already active studies" (docs.prolific.com,
"Get the balance of a workspace"), and releases what was not spent once the study is done. A resumed launch
takes over the interrupted run's study, whose open places are paid for already: its preflight asks only for the
places that are new. Figures: the fake's fee is 33.3 % of the rewards, rounded to the penny (2.50 GBP -> 0.83)."""
from __future__ import annotations

import pytest
from omegaconf import OmegaConf

from parlai_dialeval.errors import DialevalError
from parlai_dialeval.providers.prolific import common, study  # noqa: F401  (study loads Mephisto before settings)
from parlai_dialeval.providers.prolific.datastore import ProlificDatastore, save_token
from parlai_dialeval.providers.prolific.settings import preflight

from .prolific_harness import TOKEN
from .prolific_harness import fake  # noqa: F401,F811  (the fixture)

CODE = "DEFUNDS01"
PLACES_COST = 1000  # 3 places x 250 = 750 + fees round(750 x 0.333) = 250


def _published(fake, places: int = 3) -> dict:  # noqa: F811
    st = fake.state
    with st.lock:
        ws = next(iter(st.workspaces))
        project = st.api_create_project(ws, {}, {"title": "funds"})["id"]
        study = st.api_create_study({}, {
            "project": project, "name": "t", "description": "t", "internal_name": "dialeval:funds:run1:" + CODE,
            "external_study_url": "https://x/?p={{%PROLIFIC_PID%}}", "prolific_id_option": "url_parameters",
            "completion_codes": [{"code": CODE, "code_type": "COMPLETED", "actor": "researcher", "actions": []}],
            "total_available_places": places, "estimated_completion_time": 10, "reward": 250})
        st.api_transition_study(study["id"], {}, {"action": "PUBLISH"})
    return study


def _wallet(fake) -> tuple[int, int]:  # noqa: F811
    balance = next(iter(fake.state.balances.values()))
    return balance["available_balance"], balance["total_balance"]


def _finish(fake, study_id: str, pid: str) -> str:  # noqa: F811
    _, sub = fake.state.start(study_id, pid)
    fake.state.complete(CODE, sub["id"], None)
    return sub["id"]


def test_publishing_reserves_the_cost_and_completion_releases_what_is_unspent(fake):  # noqa: F811
    with fake.state.lock:
        fake.state.balances[next(iter(fake.state.balances))].update(available_balance=5000, total_balance=5000)
    study = _published(fake)
    assert _wallet(fake) == (4000, 5000)  # 10.00 held for 3 places
    with fake.state.lock:
        fake.state.api_update_study(study["id"], {}, {"total_available_places": 4})
        assert _wallet(fake) == (3667, 5000)  # one more place: 2.50 + 0.83
        approved, rejected = _finish(fake, study["id"], "PID_1"), _finish(fake, study["id"], "PID_2")
        fake.state.api_transition_submission(approved, {}, {"action": "APPROVE"})
        assert _wallet(fake) == (3667, 4667)  # one place paid out of what was held
        fake.state.api_transition_study(study["id"], {}, {"action": "STOP"})
        assert _wallet(fake) == (3667, 4667)  # a submission still awaits review: still held
        fake.state.api_transition_submission(rejected, {}, {
            "action": "REJECT", "message": "x" * 120, "rejection_category": "LOW_EFFORT"})
    assert _wallet(fake) == (4667, 4667)  # done: the three unspent places come back


def test_publishing_without_the_funds_is_refused(fake):  # noqa: F811
    with fake.state.lock:
        fake.state.balances[next(iter(fake.state.balances))]["available_balance"] = PLACES_COST - 1
    with pytest.raises(Exception, match="insufficient balance"):
        _published(fake)


def _resume_args(fake, places: int):  # noqa: F811
    return OmegaConf.create({"provider": {
        "requester_name": "lab", "api_base_url": fake.api_base_url, "reward": "2.50", "estimated_completion_time": 10,
        "places": places, "resume_from_run": "1"}, "blueprint": {}, "task": {}})


@pytest.mark.parametrize("places, new, ok", [(3, 0, True), (2, 0, True), (4, 1, False)])
def test_a_study_funded_with_exactly_its_cost_resumes(tmp_path, fake, monkeypatch, places, new, ok):  # noqa: F811
    """The account held exactly the study's cost: published, its balance is 0. The resumed launch needs no
    more places (3 or 2 units left of 3 places) and goes on; one unit more than the study holds costs 3.33."""
    monkeypatch.setattr(common, "provider_root", lambda: tmp_path)
    save_token(tmp_path, "lab", TOKEN, fake.api_base_url)
    with fake.state.lock:
        fake.state.balances[next(iter(fake.state.balances))].update(available_balance=PLACES_COST,
                                                                    total_balance=PLACES_COST)
    study = _published(fake)
    assert _wallet(fake) == (0, PLACES_COST)
    ProlificDatastore(tmp_path).run(
        "INSERT INTO studies (task_run_id, requester_name, api_base_url, study_id, internal_name, status) VALUES "
        "('1', 'lab', ?, ?, ?, 'published')", fake.api_base_url, study["id"], study["internal_name"])
    lines = []
    if ok:
        plan = preflight(_resume_args(fake, places), None, out=lambda line, **_: lines.append(line))
        assert plan["total_cost"] == 0
    else:
        with pytest.raises(DialevalError, match="the run costs 3.33 GBP, the workspace 'My workspace' has 0.00 GBP"):
            preflight(_resume_args(fake, places), None, out=lambda line, **_: lines.append(line))
    assert lines[0] == (f"Prolific: study {study['id']} of the interrupted run holds 3 open place(s), paid when "
                        f"published; {places} unit(s) left need {new} more.")
