"""Issue 38, items 3 to 5: nobody takes a seat that is not theirs, before or after a crash, and places cannot be
claimed in bulk (a real `dialeval launch live_chat_da conf=offline_small`, the real router).

The attacker knows what is in the victim's URL (worker id and assignment id, so the registration
`<assignment>-<worker>`) and comes from another address (127.0.0.2). Asking for the victim's registration or
worker without the victim's page's secret is refused (403) and brings back no agent, token or message;
scripted claims from one address stop at the limit and the places of agents whose page never opened a socket come
back, so a later honest participant gets one. After kill -9 of the launch and a relaunch the attacker gets nothing
of the victim's; the victim's page, with its secret, gets its HIT back and finishes it. Each time the export holds
exactly the honest participants' work as complete: every message they saw confirmed stored once; the attacker's
places, given back, are incomplete and empty.
"""
from __future__ import annotations

import asyncio
import json
import secrets
import time
from collections import Counter

import httpx
import pytest

from parlai_dialeval.testing.ports import free_port

from .page_client import PageClient
from .protocol_harness import CliRun

pytestmark = [pytest.mark.slow, pytest.mark.timeout(600)]
ATTACKER = "127.0.0.2"  # another source address on the loopback
INPUTS = 2



def launch(tmp_path, task: str, units: int, *extra: str) -> tuple[CliRun, int]:
    port = free_port()
    return CliRun("live_chat_da", tmp_path, [
        "conf=offline_small", f"mephisto.architect.port={port}", f"mephisto.task.task_name={task}",
        f"mephisto.blueprint.num_conversations={units}", "mephisto.task.max_num_concurrent_units=0",
        f"live_chat.min_inputs={INPUTS}", "live_chat.seed=0", *extra], real_process=True), port


def attacker_http() -> httpx.AsyncClient:
    return httpx.AsyncClient(transport=httpx.AsyncHTTPTransport(local_address=ATTACKER), timeout=60)


async def ask(http: httpx.AsyncClient, port: int, worker: str, registration: str, secret: str | None = None):
    data = {"worker_name": worker, "agent_registration_id": registration, "assignment_id": registration.split("-")[0],
            "provider_type": "mock"}
    if secret is not None:
        data["dialeval_secret"] = secret
    return await http.post(f"http://127.0.0.1:{port}/request_agent",
                           json={"provider_data": data, "client_timestamp": time.time()})


async def assert_takeovers_refused(port: int, victim: PageClient) -> list[str]:
    """Item 3/4: the victim's registration without the secret or with another, and the victim's worker under
    another registration: each refused, nothing of the victim's in the answer. Returns the answers' texts."""
    registration = f"{victim.name}-{victim.name}"
    answers = []
    async with attacker_http() as http:
        for worker, asked, secret in ((victim.name, registration, None), (victim.name, registration, secrets.token_hex(32)),
                                      (victim.name, f"other-{victim.name}", None)):
            reply = await ask(http, port, worker, asked, secret)
            answers.append(reply.text)
            assert reply.status_code == 403, (asked, reply.status_code, reply.text)
            assert reply.json()["data"]["agent_id"] is None and "another browser" in reply.json()["data"]["failure_reason"]
            assert "agent_token" not in reply.text and not any(text in reply.text for text in victim.sent)
    return answers


def exported(run: CliRun, task: str, tmp_path) -> tuple[list[dict], str]:
    out = tmp_path / f"{task}.jsonl"
    printed = run.export(task, out).stdout
    return [r for r in map(json.loads, out.read_text().splitlines()) if r["type"] == "conversation"], printed


def assert_exactly_their_work(convs: list[dict], honest: list[PageClient]) -> None:
    """The honest participants' conversations complete, each message they saw confirmed stored once; the
    places held by pages that never connected exported as incomplete and empty."""
    names = {c.name for c in honest}
    workers = {c["worker_id"].removesuffix("_sandbox") for c in convs if c["status"] == "complete"}
    assert workers == names, workers
    held = [c for c in convs if c["worker_id"].removesuffix("_sandbox") not in names]
    assert all(c["status"] != "complete" and not any(t["speaker"] == "human" for t in c["turns"]) for c in held)
    for client in honest:
        mine = [c for c in convs if c["worker_id"].startswith(client.name)]
        assert len({c["assignment_id"] for c in mine}) == 1 and {c["status"] for c in mine} == {"complete"}
    stored = Counter(t["text"] for c in convs for t in c["turns"] if t["speaker"] == "human")
    assert [t for c in honest for t in c.confirmed if stored[t] != 1] == []  # every confirmed message once
    assert all(n == 1 for n in stored.values())


def test_no_takeover_by_registration_and_no_places_in_bulk(tmp_path):
    task = "identity_places"
    run, port = launch(tmp_path, task, 5, "mephisto.blueprint.router_first_socket_seconds=5",
                       "mephisto.blueprint.router_claims_per_source=3")
    victim = PageClient("victim", port, INPUTS, think=0.3, deadline=time.time() + 420)
    late = PageClient("late", port, INPUTS, think=0.3, deadline=time.time() + 420)
    outcome = {}

    async def attack(http_honest: httpx.AsyncClient):
        while len(victim.confirmed) < 1 and not victim.done:
            await asyncio.sleep(0.2)
        outcome["takeovers"] = await assert_takeovers_refused(port, victim)
        async with attacker_http() as http:  # scripted claims, no page behind them
            replies = [await ask(http, port, f"bot{k}", f"a{k}-bot{k}") for k in range(10)]
        outcome["bulk"] = [(r.status_code, (r.json().get("data") or {}).get("agent_id")) for r in replies]
        async with httpx.AsyncClient(transport=httpx.AsyncHTTPTransport(local_address="127.0.0.3"), timeout=60) as http:
            outcome["other_source"] = (await ask(http, port, "early", "e-early")).json()["data"]
        # the places of agents whose page never connected come back: a newcomer refused now and then gets one
        while not late.done and time.time() < late.deadline:
            await late.run(http_honest)
            await asyncio.sleep(2)

    async def main():
        async with httpx.AsyncClient() as http:
            await asyncio.gather(victim.run(http), attack(http))

    try:
        asyncio.run(main())
    finally:
        run.stop()
    assert victim.done and late.done, (victim.seen, late.seen)
    assert late.seen[0].startswith("refused: There is currently no available work")  # all places were held
    granted = [agent for status, agent in outcome["bulk"] if status == 200 and agent]
    assert len(granted) == 3 and [status for status, _ in outcome["bulk"]][3:] == [429] * 7  # 3 per address
    assert outcome["other_source"]["agent_id"]  # another address got the place left
    log = run.log()
    assert log.count("no socket within 5 s, its place is given back") == 4, log[-3000:]
    assert "registration held by another page" in log and "worker held by another page" in log
    assert_exactly_their_work(exported(run, task, tmp_path)[0], [victim, late])


def test_after_kill_9_the_hit_goes_back_to_its_page_and_to_no_one_naming_the_worker(tmp_path):
    task = "identity_crash"
    run, port = launch(tmp_path, task, 1)
    runs = [run]
    victim = PageClient("returning", port, INPUTS, think=0.3, deadline=time.time() + 500)

    async def main():
        async with httpx.AsyncClient() as http:
            away = asyncio.create_task(victim.run(http))
            while len(victim.confirmed) < 1:
                assert not away.done(), victim.seen
                await asyncio.sleep(0.2)
            run.crash()
            away.cancel()  # the person is away while the server comes back
            await victim.close()
            runs.append(await asyncio.to_thread(run.relaunch))
            await assert_takeovers_refused(port, victim)
            victim.ws, victim.connected = None, False
            await victim.run(http)

    try:
        asyncio.run(main())
    finally:
        for launched in runs:
            launched.stop()
    assert len(runs) == 2
    assert "1 worker(s) who were mid-HIT get their HIT back" in runs[-1].log()
    assert victim.done, victim.seen
    convs, printed = exported(runs[-1], task, tmp_path)
    assert "continued after a restart" in printed
    assert_exactly_their_work(convs, [victim])


def test_places_held_without_an_act_are_listed_for_the_dashboard(tmp_path, monkeypatch):
    """platform/places.py: of two workers given a place, the one who never acted is listed (MockArchitect,
    in-process, as tests/crowdsourcing/test_live_chat_da_world.py runs it), and the dashboard's page shows
    them."""
    from parlai_dialeval.crowdsourcing.platform.places import idle_places
    from parlai_dialeval.crowdsourcing.platform.registry import get_task
    from parlai_dialeval.dashboard import source as dashboard_source
    from parlai_dialeval.dashboard.app import create_app

    from .test_live_chat_da_world import ECHO, MockWorker
    from .test_live_chat_da_world import launch as launch_in_process

    run = launch_in_process(tmp_path, free_port(), {"qc": ECHO, "a": ECHO, "b": ECHO}, num_slots=3, task_name="idle_places")
    try:
        active, idle = MockWorker(run, "active"), MockWorker(run, "idle")
        active.wait_phase("topic", 0)
        idle.wait_phase("topic", 0)
        act = {"text": "", "task_data": {"action": "topic", "topic": "books", "attitude": "like"}, "id": active.agent_id,
               "episode_done": False, "update_id": "topic-act"}  # a page's act carries its update id
        active.server.send_agent_act(active.agent_id, act)
        active.wait_phase("chat", 0)
        files = get_task("live_chat_da").extra["export_files"]
        held = idle_places(run.db, "idle_places", files, idle_seconds=0)
        later = idle_places(run.db, "idle_places", files, idle_seconds=3600)
        monkeypatch.setattr(dashboard_source, "IDLE_PLACE_SECONDS", 0)
        app = create_app(dashboard_source.TaskSource("idle_places", run.data_dir), "a-secret-of-twelve+")
        app.testing = True
        with app.test_client() as client:
            client.post("/login", data={"token": "a-secret-of-twelve+"})
            page = client.get("/").get_data(as_text=True)
    finally:
        run.shutdown()
    listed = page[page.index('data-testid="idle-places"'):]
    listed = listed[:listed.index("</table>")]
    assert "<bdi>idle</bdi>" in listed and "active" not in listed, listed
    assert [(place["worker"], place["agent_id"]) for place in held] == [("idle", idle.agent_id)]
    assert held[0]["registration"] == "assignment-idle" and later == []  # the mock server registers it so
