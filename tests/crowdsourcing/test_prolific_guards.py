"""Guards of the Prolific provider that an audit could remove without any other test failing (issue 42; the
mutation check in docs/prolific_contract.md lists each guard and the test that fails without it): the
workspace's currency must be the run's, a participant Prolific screens out frees the unit as one who
returns or times out does, and the fake's completion page answers people with a page, whoever they are."""
from __future__ import annotations

import httpx
import pytest
from omegaconf import OmegaConf

from parlai_dialeval.errors import DialevalError
from parlai_dialeval.providers.prolific import common, study  # noqa: F401  (study loads Mephisto before settings)
from parlai_dialeval.providers.prolific.datastore import save_token
from parlai_dialeval.providers.prolific.settings import preflight
from parlai_dialeval.testing.ports import free_port

from .prolific_harness import (TOKEN, ProlificMockRun, fake_prolific, register, scale_items,
                               scale_overrides)
from .prolific_harness import fake  # noqa: F401,F811  (the fixture)


def test_a_workspace_paying_in_another_currency_is_refused(tmp_path, monkeypatch):
    with fake_prolific(currency="USD") as server:
        monkeypatch.setattr(common, "provider_root", lambda: tmp_path)
        save_token(tmp_path, "lab", TOKEN, server.api_base_url)
        args = OmegaConf.create({"provider": {"requester_name": "lab", "api_base_url": server.api_base_url,
                                              "reward": "4.00", "estimated_completion_time": 10, "places": 2},
                                 "blueprint": {}, "task": {}})
        with pytest.raises(DialevalError) as refused:
            preflight(args, None, out=lambda *a, **k: None)
    assert str(refused.value) == ("mephisto.provider.currency: the workspace 'My workspace' pays in USD, not GBP; set "
                                  "mephisto.provider.currency=USD and the reward in USD")
    assert not server.state.studies


@pytest.mark.slow
def test_returned_timed_out_and_screened_out_free_their_units(tmp_path, fake, monkeypatch):  # noqa: F811
    """Prolific's "Submission statuses explained": RETURNED, TIMED-OUT and SCREENED OUT end a participant's
    work without a submission; the unit's next poll frees it (the agent is returned)."""
    from parlai_dialeval.providers.prolific.models import ProlificUnit

    data = tmp_path / "mephisto"
    register(data, fake, monkeypatch)
    items = scale_items(tmp_path / "items.jsonl", 3)
    run = ProlificMockRun("scale_designs", data, free_port(), fake, scale_overrides(items, "sd_gone"))
    try:
        gone = {"PID_R": "RETURNED", "PID_T": "TIMED-OUT", "PID_S": "SCREENED OUT"}
        for pid in gone:
            run.register(pid)
        agents = {pid: run.unit_agent(pid) for pid in gone}
        with fake.state.lock:
            for pid, status in gone.items():
                fake.state.submissions[run.submission(pid)["id"]]["status"] = status
        ProlificUnit._last_poll.clear()
        for agent in agents.values():
            agent.get_unit().get_status()
        assert {pid: run.db.get_agent(a.db_id)["status"] for pid, a in agents.items()} == {
            pid: "returned" for pid in gone}
    finally:
        run.shutdown()



def _published(fake, url: str, **fields) -> str:  # noqa: F811
    """A published study of one place on the fake, made in its state; returns its id."""
    st = fake.state
    with st.lock:
        ws = next(iter(st.workspaces))
        project = st.api_create_project(ws, {}, {"title": "p"})["id"]
        sid = st.api_create_study({}, {
            "project": project, "name": "n", "description": "d", "external_study_url": url,
            "prolific_id_option": "url_parameters", "completion_codes": [], "total_available_places": 1,
            "estimated_completion_time": 10, "reward": 200, **fields})["id"]
        st.api_transition_study(sid, {}, {"action": "PUBLISH"})
    return sid


def test_the_completion_page_knows_a_participant_after_a_browser_restart(fake):  # noqa: F811
    """Prolific keeps its participants signed in: the fake's session cookie outlives the browser (Max-Age),
    and a completion page that finds no submission of the visitor says so on a page, not in raw JSON."""
    sid = _published(fake, "https://x/?{{%PROLIFIC_PID%}}")
    started = httpx.get(fake.study_url(sid, "PID_1"))
    assert "Max-Age=86400" in started.headers["set-cookie"]
    stranger = httpx.get(fake.completion_url)
    assert stranger.status_code == 404 and stranger.headers["content-type"] == "text/html"
    assert "no submission of yours" in stranger.text and "{" not in stranger.text


def test_a_relaunch_stops_only_the_router_its_interrupted_run_recorded(tmp_path):
    """The marker records the router's pid and start time; the relaunch stops that process, and leaves a
    process that merely got the same pid later (another start time) alone."""
    import subprocess
    import sys
    from types import SimpleNamespace

    import psutil

    from parlai_dialeval.crowdsourcing.platform import resume

    router = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"], start_new_session=True)
    try:
        started = psutil.Process(router.pid).create_time()
        run = SimpleNamespace(db_id="4", get_run_dir=lambda: str(tmp_path))
        resume.write_marker(run, port=3999, router_pid=router.pid, router_started=started - 5)  # a reused pid
        assert resume.stop_orphaned_router(run) is None and router.poll() is None
        resume.write_marker(run, router_started=started)
        assert resume.stop_orphaned_router(run) == (
            f"Stopped the router (pid {router.pid}, port 3999) the interrupted run 4 left behind.")
        assert router.wait(5) == -15  # SIGTERM
        assert resume.stop_orphaned_router(run) is None  # gone: nothing more to stop
    finally:
        router.kill()
        router.wait()


def test_a_relaunch_at_another_address_than_the_published_study_is_refused(tmp_path, fake):  # noqa: F811
    """Prolific allows no change to a published study's external_study_url: taking the study over from a
    launch serving elsewhere would strand every participant, so it is refused, saying why and what to do."""
    from types import SimpleNamespace

    from parlai_dialeval.providers.prolific.api import ProlificClient
    from parlai_dialeval.providers.prolific.datastore import ProlificDatastore
    from parlai_dialeval.providers.prolific.page import external_study_url

    sid = _published(fake, external_study_url("http://localhost:3471"), internal_name="dialeval:t:run1:X")
    store = ProlificDatastore(tmp_path)
    store.run("INSERT INTO studies (task_run_id, study_id, internal_name, status) VALUES ('1', ?, 'dialeval:t:run1:X', "
              "'published')", sid)
    client = ProlificClient(fake.api_base_url, TOKEN, max_retries=0)
    try:
        with pytest.raises(DialevalError) as refused:
            study.take_over(client, store, "1", SimpleNamespace(db_id="2"), "http://localhost:3472")
        assert study.take_over(client, store, "1", SimpleNamespace(db_id="2"), "http://localhost:3471") == sid
    finally:
        client.close()
    assert str(refused.value).startswith(
        f"Prolific study {sid} of the interrupted run 1 sends participants to http://localhost:3471/, and Prolific "
        "allows no change to that once a study is published, but this launch would serve at http://localhost:3472/")
    assert str(refused.value).endswith("relaunch at the study's address (the interrupted launch's "
                                       "mephisto.architect.port and mephisto.provider.public_url), or under another "
                                       "mephisto.task.task_name for a new study")
