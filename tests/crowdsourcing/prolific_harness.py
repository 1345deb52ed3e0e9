"""Harness of the Prolific provider tests: the fake Prolific, a registered requester, and ``ProlificMockRun``
(MockArchitect in-process, as ``MockRun``) whose participants arrive the way Prolific sends them: the
study URL the fake hands out, redirected to the task with PROLIFIC_PID, STUDY_ID and SESSION_ID."""
from __future__ import annotations

import re
import time
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import parse_qs, urlparse

import httpx
import pytest

from parlai_dialeval.crowdsourcing.platform.env import prepare_mephisto
from parlai_dialeval.providers.prolific.fake import FakeProlific
from parlai_dialeval.tls import shared_tls_context

from .prolific_contract import violations
from .protocol_harness import CliRun, MockRun, start_in_session

TOKEN = "tok-Secret-7f3a9c1e5b"  # distinctive, so a leak is found by grep
REQUESTER = "lab"


def fake_prolific(**kwargs) -> FakeProlific:
    """A fake Prolific accepting the harness's token (use as a context manager)."""
    return FakeProlific(token=TOKEN, **kwargs)


@pytest.fixture
def fake():
    """A running fake Prolific (import this fixture into a test module); afterwards every call made to it
    must fit Prolific's contract (prolific_contract.py), requests and answers, and so must every webhook event
    it sent."""
    with fake_prolific() as server:
        yield server
    assert violations(server.state.calls, server.state.deliveries) == []


def register(data_dir: Path, fake: FakeProlific, monkeypatch) -> None:
    """`dialeval prolific register lab --token-env PROLIFIC_TOKEN` against the fake, in-process."""
    prepare_mephisto(data_dir)
    from mephisto.abstractions.databases.local_database import LocalMephistoDB

    from parlai_dialeval.crowdsourcing.platform.env import database_path
    from parlai_dialeval.providers.prolific.models import ProlificRequester, register_token

    monkeypatch.setenv("PROLIFIC_TOKEN", TOKEN)
    register_token(REQUESTER, "PROLIFIC_TOKEN", None, fake.api_base_url)
    db = LocalMephistoDB(database_path=str(database_path(data_dir)))
    if not db.find_requesters(requester_name=REQUESTER):
        ProlificRequester.new(db, REQUESTER)


def provider_overrides(fake: FakeProlific, reward: str = "2.50", minutes: int = 15) -> list[str]:
    return ["mephisto/provider=prolific", f"mephisto.provider.requester_name={REQUESTER}",
            f"mephisto.provider.api_base_url={fake.api_base_url}",
            f"mephisto.provider.completion_url={fake.completion_url}",
            f"mephisto.provider.reward={reward}", f"mephisto.provider.estimated_completion_time={minutes}"]


def arrive(fake: FakeProlific, study_id: str, pid: str) -> dict:
    """A participant opens the study on (fake) Prolific; returns the task URL's query parameters."""
    answer = httpx.get(fake.study_url(study_id, pid), follow_redirects=False, verify=shared_tls_context())
    assert answer.status_code == 302, answer.text
    return {k: v[0] for k, v in parse_qs(urlparse(answer.headers["location"]).query).items()}


def knock(run, pid: str, session: str, study_id: str | None, registration: str | None = None,
          source: str | None = None) -> dict:
    """A registration straight to the task server, as a page (or anyone) sends it: ``registration`` defaults
    to the page's own ``SESSION-PID`` (then a known one is a reload: Mephisto's reconnect); ``source``: the
    address the router would add. Returns the agent details Mephisto sent back to that page."""
    from mephisto.data_model.packet import PACKET_TYPE_REGISTER_AGENT

    before = len(run.sent_details)
    data = {"worker_name": pid, "assignment_id": session, "agent_registration_id": registration or f"{session}-{pid}",
            "provider_type": "prolific", **({"study_id": study_id} if study_id else {}),
            **({"dialeval_source": source} if source else {})}
    run.server._send_message({"packet_type": PACKET_TYPE_REGISTER_AGENT, "subject_id": "MockServer",
                              "data": {"request_id": data["agent_registration_id"], "provider_data": data}})
    run.wait(lambda: len(run.sent_details) > before, 20, "the answer to the page")
    run.settle()
    (details,) = run.sent_details[before:]
    return details


def lookups(fake: FakeProlific, session: str) -> list[int]:
    """The statuses of the calls that asked Prolific about ``session``."""
    return [c["status"] for c in fake.state.calls if c["path"] == f"/api/v1/submissions/{session}/"]


def back_to_prolific(fake: FakeProlific, pid: str) -> httpx.Response:
    """What the page's wrapper does on submit: back to Prolific's completion page (no code: the server
    completes the submission)."""
    return httpx.get(fake.completion_url, params={"participant": pid}, verify=shared_tls_context())


def scale_items(path: Path, n: int = 3) -> Path:
    """``n`` rating-scale items, one per unit with ``items_per_unit=1`` (a quick static task)."""
    import json

    path.write_text("".join(json.dumps({
        "item_id": f"i{k}", "context": ["How was your day?"], "reference": "Great.",
        "responses": {"a": "Good.", "b": "Fine."},
        "reference_metrics": {"readability": 80, "coherence": 40}}) + "\n" for k in range(n)))
    return path


def scale_overrides(items: Path, task_name: str) -> list[str]:
    return [f"scale_designs.items_file={items}", "scale_designs.design=bme", "scale_designs.items_per_unit=1",
            "mephisto.blueprint.units_per_assignment=1", f"mephisto.task.task_name={task_name}"]


def submit_scale_unit(run, pid: str) -> Finished:
    """``pid`` arrives from Prolific, rates the unit's item, submits and is sent back to Prolific."""
    run.register(pid)
    return submit_static_unit(run, pid, scale_answers)


def scale_answers(inputs: dict) -> dict:
    """A whole, valid scale_designs submission for the unit's ``inputs``."""
    prior = {"prior_experience_evaluating": False, "prior_experience_agents": True}
    return {"ratings": {item["item_id"]: {c: {"values": {r["key"]: 50 for r in item["responses"]}}
                                          for c in ("readability", "coherence")}
                        for item in inputs["shown"]},
            "prior_experience": prior, "duration": 5.0, "item_durations": {}}


def submit_static_unit(run, pid: str, final_data, on_prolific: bool = True) -> Finished | None:
    """``pid``'s page submits ``final_data(inputs)`` for its unit, then goes back to Prolific (``finish``;
    not ``on_prolific``: someone who never came from Prolific, None)."""
    agent = run.unit_agent(pid)
    inputs = run.unit_inputs(agent)  # the worker pool holds the agent then: a submission before is refused
    run.submit(agent, final_data(inputs))
    return finish(run, pid) if on_prolific else None


@dataclass(frozen=True)
class Finished:
    """Where a participant's unit ended: its status in Mephisto, the submission's status and completion code
    on Prolific, whether Prolific's completion page greeted the participant, and the Mephisto worker's name."""
    unit: str
    submission: str
    study_code: str | None
    completion_page: bool
    worker: str


def completed_on_prolific(run, pid: str) -> Finished:
    """What a finished unit shows: completed in Mephisto, awaiting review on Prolific with the study's
    completion code (never sent to the page), the participant back on Prolific's completion page, and the
    Prolific participant id as the worker."""
    return Finished("completed", "AWAITING REVIEW", run.study["completion_code"], True, pid)


def finish(run, pid: str) -> Finished:
    """After ``pid``'s page submitted: what Mephisto and Prolific show once both settled (or 20 s passed), and
    whether the participant, sent back to Prolific, lands on its completion page (the test asserts them)."""
    agent = run.unit_agent(pid)
    run.operator._run_loop_until(lambda: run.live_agent(agent).get_status() == "completed"
                                 and run.submission(pid)["status"] == "AWAITING REVIEW", 20)
    submission = run.submission(pid)
    return Finished(run.live_agent(agent).get_status(), submission["status"], submission.get("study_code"),
                    "Submission complete" in back_to_prolific(run.fake, pid).text, agent.get_worker().worker_name)


class ProlificMockRun(MockRun):
    def __init__(self, task: str, data_dir: Path, port: int, fake: FakeProlific, overrides: list[str] | None = None):
        self.fake = fake
        super().__init__(task, data_dir, port, [*provider_overrides(fake), *(overrides or [])])
        from parlai_dialeval.providers.prolific.common import datastore

        self.store = datastore(self.db)
        self.study = self.store.study_of_run(self.live_run.task_run.db_id)

    def register(self, worker: str, registration: str | None = None) -> dict:
        """``worker`` (a Prolific participant id) takes a place on Prolific and lands on the task page."""
        from mephisto.data_model.packet import PACKET_TYPE_REGISTER_AGENT

        params = arrive(self.fake, self.study["study_id"], worker)
        provider_data = {"worker_name": params["PROLIFIC_PID"], "assignment_id": params["SESSION_ID"],
                         "agent_registration_id": f"{params['SESSION_ID']}-{params['PROLIFIC_PID']}",
                         "study_id": params["STUDY_ID"], "provider_type": "prolific"}
        self.server._send_message({"packet_type": PACKET_TYPE_REGISTER_AGENT, "subject_id": "MockServer",
                                   "data": {"request_id": provider_data["agent_registration_id"],
                                            "provider_data": provider_data}})
        self.settle()
        return params

    def unit_agent(self, worker: str):
        self.wait(lambda: any(a.get_worker().worker_name == worker for a in self.db.find_agents()),
                  what=f"unit agent of {worker}")
        return [a for a in self.db.find_agents() if a.get_worker().worker_name == worker][-1]

    def onboarding_agent(self, worker: str):
        self.wait(lambda: any(a.get_worker().worker_name == worker for a in self.db.find_onboarding_agents()),
                  what=f"onboarding agent of {worker}")
        return [a for a in self.db.find_onboarding_agents() if a.get_worker().worker_name == worker][-1]

    def submission(self, pid: str) -> dict:
        return [s for s in self.fake.state.submissions.values() if s["participant_id"] == pid][-1]


class ProlificCliRun(CliRun):
    """`dialeval launch TASK ... mephisto/provider=prolific` (live_chat_da unless ``task``): ready once the
    launch says which Prolific study it serves (there is no worker URL to print: participants come from
    Prolific); ``study`` is that study on the fake; ``stop`` as ``CliRun``."""

    def __init__(self, tmp_path, fake, overrides: list[str], data_dir: Path | None = None, task: str = "live_chat_da"):
        self.tmp_path, self.data_dir = tmp_path, data_dir or tmp_path / "mephisto"
        tmp_path.mkdir(parents=True, exist_ok=True)
        self.log_path = tmp_path / "launch.log"
        self.proc = start_in_session(["launch", task, *overrides, "--mephisto-data", str(self.data_dir)],
                                     self.log_path)
        self.url, self.router_pid, end = None, None, time.time() + 180
        served = None
        while time.time() < end and not (self.router_pid and served) and self.proc.poll() is None:
            found = re.search(r"Server running locally with pid (\d+)", self.log())
            self.router_pid = int(found[1]) if found else None
            served = re.search(r"^Prolific study (\S+) ", self.log(), re.M)
            time.sleep(0.5)
        if not served or served[1] not in fake.state.studies:
            self.stop()
            raise AssertionError("no study published:\n" + self.log()[-3000:])
        self.study = fake.state.studies[served[1]]
