"""What a page's own, valid session may POST (crowdsourcing/router/dialeval_guard.js), on the real router, this
test being the Mephisto server. Found by attacking a `live_chat_da` launch with raw HTTP (audit 41):

- `/submit_task` whose final data carries `files`: Mephisto's ``ClientIOHandler._on_submit_unit`` has the
  architect copy ``/tmp/<filename>`` to ``<agent dir>/<filename>`` for each (a `../` path reads and writes
  outside both) and raises on a missing file or a non-list; final data that is no object (a string, `null`)
  raises in every static task's ``StaticAgentState._update_submit`` after the unit was marked submitted.
- `/log_error`: the server logs ``error_data`` whole through rich, whose wrapping takes time quadratic in the
  text (10 KB: 1 s, 40 KB: 18 s), blocking the event loop that serves every participant; an error that is not
  an object raises in ``_log_frontend_error``.
- `/submit_onboarding` whose `onboarding_data` is no object raises in the static tasks' agent state, logging
  the whole packet (so through rich again); so does a live update whose `update_id` is no string (a list, an
  object) in Mephisto's duplicate check, and one whose data is a list.
- `/request_agent` without a `worker_name` string raises in Mephisto's ``WorkerPool.register_worker``.
- `/submit_metadata` (tips and feedback, which no task of ours asks for): a malformed one raises in
  ``Agent.handle_metadata_submit``, and each accepted one grows the agent's saved state without bound.
"""
from __future__ import annotations

import asyncio
import contextlib
import json

import httpx
import websockets

from parlai_dialeval.compat import mephisto_router as compat_router

from .test_resume_router import built_router
from .test_router_hostile import require_router, run_router


def signed(agent: str, **fields) -> dict:
    return {"USED_AGENT_ID": agent, "agent_token": compat_router.token(agent), "client_timestamp": 0, **fields}


@contextlib.asynccontextmanager
async def as_mephisto_server(port: int, packets: list):
    """This test as the Mephisto server: a socket to the router announced with the system token; every packet
    the router sends it is appended to ``packets`` until the block ends (a second later)."""
    async with websockets.connect(f"ws://127.0.0.1:{port}", max_size=None) as server:
        await server.send(json.dumps({"packet_type": "alive", "subject_id": compat_router.SYSTEM_ID,
                                      "data": {"agent_token": compat_router.token(compat_router.SYSTEM_ID)}}))

        async def read():
            async for raw in server:
                packets.append(json.loads(raw))

        reader = asyncio.create_task(read())
        try:
            yield server
        finally:
            await asyncio.sleep(1.0)
            reader.cancel()


async def post_all(port: int) -> tuple[dict[str, int], list[dict]]:
    """Each POST's HTTP status by name, and the packets the server got."""
    statuses, packets, url = {}, [], f"http://127.0.0.1:{port}"
    async with as_mephisto_server(port, packets):
        posts = {
            "files": ("/submit_task", signed("1", final_data={"answers": [], "files": [{"filename": "../etc/passwd"}]})),
            "string files": ("/submit_task", signed("2", final_string_data=json.dumps({"files": 5}))),
            "string": ("/submit_task", signed("3", final_data="abc")),
            "null": ("/submit_task", signed("4", final_string_data="null")),
            "list": ("/submit_task", signed("5", final_data=[1])),
            "honest submission": ("/submit_task", signed("6", final_data={"answers": [{"choice": 0}]})),
            "honest string submission": ("/submit_task", signed("7", final_string_data=json.dumps({"answers": []}))),
            "metadata": ("/submit_metadata", signed("8", metadata={"tips": {"header": "h", "text": "t"}})),
            "error not an object": ("/log_error", signed("9", error_data=5)),
            "error of 40 KB": ("/log_error", signed("9", error_data={"text": "x" * 40_000})),
            "honest error": ("/log_error", signed("10", error_data={"text": "TypeError: x is undefined"})),
        }
        async with httpx.AsyncClient() as http:
            for name, (path, body) in posts.items():
                statuses[name] = (await http.post(url + path, json=body, timeout=10)).status_code
            for i in range(30):  # a page that logs an error in a loop
                statuses["error flood"] = (await http.post(url + "/log_error", timeout=10, json=signed(
                    "11", error_data={"text": f"error {i}"}))).status_code
            for name, data in (("onboarding string", "x" * 3000), ("onboarding list", [1])):
                body = {"provider_data": signed("onboarding_12", onboarding_data=data), "client_timestamp": 0}
                try:  # passed on, it would wait for the server's answer
                    statuses[name] = (await http.post(url + "/submit_onboarding", json=body, timeout=3)).status_code
                except httpx.ReadTimeout:
                    statuses[name] = "passed on"
            for name, registration in (("no worker name", {}), ("worker name an object", {"worker_name": {"x": 1}}),
                                       ("study id a list", {"worker_name": "w", "study_id": ["s"]})):
                body = {"provider_data": {"agent_registration_id": f"r-{name}", "provider_type": "mock",
                                          **registration}, "client_timestamp": 0}
                try:  # passed on, it would wait for the server's answer
                    statuses[name] = (await http.post(url + "/request_agent", json=body, timeout=3)).status_code
                except httpx.ReadTimeout:
                    statuses[name] = "passed on"
            registration = {"worker_name": "w", "agent_registration_id": "a-w", "assignment_id": "a",
                            "study_id": None, "provider_type": "prolific"}
            honest_registration = asyncio.create_task(http.post(url + "/request_agent", timeout=10, json={
                "provider_data": registration, "client_timestamp": 0}))
            # an honest onboarding: its answer waits for the server (which this test does not give)
            honest = asyncio.create_task(http.post(url + "/submit_onboarding", timeout=10, json={
                "provider_data": signed("onboarding_13", onboarding_data={"outputs": {"answers": []}})}))
            async with websockets.connect(f"ws://127.0.0.1:{port}") as page:
                for update_id in (["u0"], {"u": 1}, 5, "u1"):
                    await page.send(json.dumps({"packet_type": "mephisto_bound_live_update", "subject_id": "14",
                                                "agent_token": compat_router.token("14"),
                                                "data": {"text": f"update {update_id}", "update_id": update_id}}))
                await page.send(json.dumps({"packet_type": "mephisto_bound_live_update", "subject_id": "14",
                                            "agent_token": compat_router.token("14"), "data": ["update list"]}))
                await asyncio.sleep(1.0)
            honest.cancel()
            honest_registration.cancel()
    return statuses, [p for p in packets if p.get("packet_type") != "alive"]


def test_a_page_posts_only_what_the_server_takes_without_raising(tmp_path):
    require_router()
    (statuses, packets), output = run_router(built_router(tmp_path), post_all)
    assert statuses == {"files": 400, "string files": 400, "string": 400, "null": 400, "list": 400,
                        "honest submission": 200, "honest string submission": 200, "metadata": 403,
                        "error not an object": 400, "error of 40 KB": 413, "honest error": 200,
                        "error flood": 429, "onboarding string": 400, "onboarding list": 400,
                        "no worker name": 400, "worker name an object": 400, "study id a list": 400}, output[-3000:]
    registrations = [p["data"]["provider_data"]["agent_registration_id"] for p in packets
                     if p["packet_type"] == "register_agent"]
    assert registrations == ["a-w"]
    onboardings = {p["subject_id"]: p["data"]["onboarding_data"] for p in packets if p["packet_type"] == "submit_onboarding"}
    assert onboardings == {"onboarding_13": {"outputs": {"answers": []}}}
    # an update id that is no string raised in the server's duplicate check (a set lookup), logging the packet
    updates = [p["data"] for p in packets if p["packet_type"] == "mephisto_bound_live_update"]
    assert [u["text"] for u in updates if isinstance(u, dict)] == ["update u1"] and len(updates) == 1
    units = {p["subject_id"]: p["data"] for p in packets if p["packet_type"] == "submit_unit"}
    assert units == {"6": {"answers": [{"choice": 0}]}, "7": {"answers": []}}
    assert not [p for p in packets if p["packet_type"] == "submit_metadata"]
    errors = [p for p in packets if p["packet_type"] == "log_error"]
    assert errors[0] == {**errors[0], "subject_id": "10", "data": {"text": "TypeError: x is undefined"}}
    # agent 11's first errors get through, then no more: a page in an error loop cannot fill the log
    flood = [p["data"]["text"] for p in errors if p["subject_id"] == "11"]
    assert 0 < len(flood) < 30 and flood == [f"error {i}" for i in range(len(flood))]
    for reason in ("without a worker_name string", "onboarding_data that is not a JSON object", "update_id that is not a string",
                   "final data with files", "final data that is not a JSON object", "tips and feedback",
                   "error_data that is not a JSON object", "error_data of", "more error logs"):
        assert reason in output, f"router log has no refusal {reason!r}"
