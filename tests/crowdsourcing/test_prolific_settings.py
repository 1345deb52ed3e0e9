"""Prolific settings and study transitions that need no Mephisto run: the minimum hourly pay by currency
(Prolific: 6 GBP or 8 USD an hour), the token sent only to the https address it was registered with,
statuses that mean a failed PUBLISH went out after all, every submission status in the review table, and a
refused places PATCH that is logged, not raised (Mephisto's unit-launch thread must live on)."""
from __future__ import annotations

from types import SimpleNamespace

import pytest
from omegaconf import OmegaConf

from parlai_dialeval.errors import DialevalError
from parlai_dialeval.providers.prolific import common
from parlai_dialeval.providers.prolific.api import ProlificClient, ProlificServerError
from parlai_dialeval.providers.prolific.datastore import ProlificDatastore, save_token
from parlai_dialeval.providers.prolific.page import render_wrapper
from parlai_dialeval.providers.prolific.review import suggest
from parlai_dialeval.providers.prolific.settings import settings
from parlai_dialeval.providers.prolific.study import publish, sync_places

from .prolific_harness import TOKEN
from .prolific_harness import fake  # noqa: F401,F811  (the fixture)


def _draft(fake, **fields) -> dict:  # noqa: F811
    """An unpublished study on the fake, made in its state directly (call under its lock)."""
    ws = next(iter(fake.state.workspaces))
    project = fake.state.api_create_project(ws, {}, {"title": "p"})["id"]
    return fake.state.api_create_study({}, {
        "project": project, "name": "n", "description": "d", "external_study_url": "https://x/?{{%PROLIFIC_PID%}}",
        "prolific_id_option": "url_parameters", "completion_codes": [], "total_available_places": 1,
        "estimated_completion_time": 10, "reward": 200, **fields})


def _args(**provider):
    return OmegaConf.create({"provider": {"estimated_completion_time": 30, **provider}, "task": {}})


@pytest.mark.parametrize("currency, reward, ok", [
    ("GBP", "3.00", True), ("GBP", "2.99", False),  # 6.00 GBP an hour for 30 minutes
    ("USD", "4.00", True), ("USD", "3.99", False),  # 8.00 USD an hour: 3.00 USD passes in GBP, not in USD
    ("USD", "3.00", False)])
def test_minimum_hourly_pay_follows_the_currency(currency, reward, ok):
    args = _args(currency=currency, reward=reward)
    if ok:
        assert settings(args)["reward_minor"] == round(float(reward) * 100)
    else:
        with pytest.raises(DialevalError, match=f"below Prolific's minimum of {'6' if currency == 'GBP' else '8'}"
                                                f".00 {currency}/hour"):
            settings(args)


def test_another_currency_needs_its_minimum_given():
    with pytest.raises(DialevalError, match="minimum_hourly_rate: set Prolific's minimum hourly pay for EUR"):
        settings(_args(currency="EUR", reward="5"))
    assert settings(_args(currency="EUR", reward="5", minimum_hourly_rate=7.0))["currency"] == "EUR"
    with pytest.raises(DialevalError, match="max_submissions_per_participant: 1 or more, or -1"):
        settings(_args(reward="5", max_submissions_per_participant=0))


def test_token_goes_only_to_its_registered_https_address(tmp_path, monkeypatch):
    monkeypatch.setattr(common, "provider_root", lambda: tmp_path)
    save_token(tmp_path, "lab", TOKEN, "https://api.prolific.com/api/v1/")
    assert common.registered_url("lab", None) == (TOKEN, "https://api.prolific.com/api/v1/")
    assert common.registered_url("lab", "https://api.prolific.com/api/v1")[1] == "https://api.prolific.com/api/v1/"
    for elsewhere in ("http://api.prolific.com/api/v1/", "https://evil.example/api/v1/"):
        with pytest.raises(DialevalError, match="its token is sent nowhere else") as refused:
            common.registered_url("lab", elsewhere)
        assert TOKEN not in str(refused.value)
    save_token(tmp_path, "old", TOKEN, "http://prolific.example/api/v1/")  # an address registered before the check
    with pytest.raises(DialevalError, match="must be https://"):
        common.client_for("old")
    common.check_api_url("http://127.0.0.1:8765/api/v1/")  # the fake Prolific on this machine


def test_the_page_holds_no_completion_code(tmp_path, fake):  # noqa: F811
    """Issue 26, item 5: the page only sends participants back; going there without the server's
    COMPLETE leaves the submission unfinished."""
    text = render_wrapper("https://app.prolific.com/submissions/complete").read_text()
    assert 'completionUrl: "https://app.prolific.com/submissions/complete"' in text
    assert "cc=" not in text and "completionCode" not in text
    with fake.state.lock:
        study = _draft(fake, completion_codes=[{"code": "SECRET1", "code_type": "COMPLETED", "actions": []}])
        fake.state.api_transition_study(study["id"], {}, {"action": "PUBLISH"})
        _, sub = fake.state.start(study["id"], "PID_X")
    import httpx

    page = httpx.get(fake.completion_url, params={"participant": "PID_X"})
    assert "Waiting for the study to confirm" in page.text and sub["status"] == "ACTIVE"


@pytest.mark.parametrize("status, published", [("PUBLISHING", True), ("SCHEDULED", True), ("PROCESSING", True),
                                               ("ACTIVE", True), ("UNPUBLISHED", False)])
def test_a_failed_publish_that_went_out_counts_as_published(fake, status, published):  # noqa: F811
    client = ProlificClient(fake.api_base_url, TOKEN, max_retries=0)
    with fake.state.lock:
        study = _draft(fake)
        fake.state.publish_status = status if published else "ACTIVE"
    fake.inject(500, 1, path="transition", after=published)  # published: the work was done, the answer lost
    if published:
        publish(client, study["id"])
        assert fake.state.studies[study["id"]]["status"] == status
    else:
        with pytest.raises(ProlificServerError):
            publish(client, study["id"])


@pytest.mark.parametrize("status, suggestion", [
    ("PROCESSING", "wait (Prolific is processing a decision)"), ("PARTIALLY APPROVED", "done"),
    ("SCREENED OUT", "none (screened out)"), ("RESERVED", "wait (still working)"),
    ("TIMED-OUT", "none (returned)"), ("SOMETHING NEW", "check on Prolific (status 'SOMETHING NEW' is new")])
def test_every_submission_status_has_a_suggestion(status, suggestion):
    assert suggest(status, "completed", "pass").startswith(suggestion)


def test_a_failed_check_is_a_rejection_only_when_the_run_says_so():
    assert suggest("AWAITING REVIEW", "completed", "fail").startswith("ask to return")
    assert suggest("AWAITING REVIEW", "completed", "fail", "reject").startswith("reject FAILED_CHECK")
    assert suggest("AWAITING REVIEW", "completed", "pass", "reject") == "approve"
    with pytest.raises(DialevalError, match="failed_check: `return` or `reject`"):
        settings(_args(reward="5", failed_check="fine"))


def test_a_refused_places_patch_is_logged_and_caught_up(tmp_path, fake, monkeypatch):  # noqa: F811
    monkeypatch.setattr(common, "provider_root", lambda: tmp_path)
    save_token(tmp_path, "lab", TOKEN, fake.api_base_url)
    store = ProlificDatastore(tmp_path)
    with fake.state.lock:
        study = _draft(fake)
    store.run("INSERT INTO studies (task_run_id, requester_name, api_base_url, study_id, places, launched, status) "
              "VALUES ('7', 'lab', ?, ?, 1, 1, 'published')", fake.api_base_url, study["id"])
    db = SimpleNamespace(get_datastore_for_provider=lambda kind: store)
    fake.inject(500, 1, path="studies/", method="PATCH")
    store.launch_place("7")
    sync_places(db, "7")  # logged, not raised
    assert store.study_of_run("7")["places"] == 1 and fake.state.studies[study["id"]]["total_available_places"] == 1
    store.launch_place("7")
    sync_places(db, "7")
    assert store.study_of_run("7")["places"] == 3 and fake.state.studies[study["id"]]["total_available_places"] == 3


def test_review_completes_what_the_server_could_not_before_approving(tmp_path, fake, monkeypatch):  # noqa: F811
    from parlai_dialeval.providers.prolific import review
    from parlai_dialeval.providers.prolific.completion import complete_submission

    monkeypatch.setattr(common, "provider_root", lambda: tmp_path)
    save_token(tmp_path, "lab", TOKEN, fake.api_base_url)
    store = ProlificDatastore(tmp_path)
    with fake.state.lock:
        study = _draft(fake, completion_codes=[{"code": "SECRET2", "code_type": "COMPLETED", "actor": "researcher",
                                                  "actions": []}])
        fake.state.api_transition_study(study["id"], {}, {"action": "PUBLISH"})
        _, sub = fake.state.start(study["id"], "PID_Y")
    store.run("INSERT INTO studies (task_run_id, task_name, requester_name, api_base_url, study_id, completion_code, "
              "status) VALUES ('8', 't', 'lab', ?, ?, 'SECRET2', 'published')", fake.api_base_url, study["id"])
    db = SimpleNamespace(get_datastore_for_provider=lambda kind: store)
    statuses = []
    agent = SimpleNamespace(db_id="3", task_run_id="8", submission_id=lambda: sub["id"], update_status=statuses.append,
                            get_worker=lambda: SimpleNamespace(worker_name="PID_Y"))
    fake.inject(404, 2, path="submissions/")  # Prolific cannot be told when the unit is accepted
    assert complete_submission(db, agent) is False and sub["status"] == "ACTIVE"
    review.approve(db, agent)
    assert sub["status"] == "APPROVED" and sub["study_code"] == "SECRET2" and statuses == ["approved"]
    assert [c["body"].get("action") for c in fake.state.calls if c["path"].endswith("/transition/")][-2:] == [
        "COMPLETE", "APPROVE"]
