"""Whose budget a request takes, and what one source may never be refused (issue 52, items 2, 6 and 8), on the
real built router (crowdsourcing/router/dialeval_door.js, dialeval_claims.js), this test being the Mephisto server:

- item 2: the router took `X-Forwarded-For` from any loopback peer, so one client rotating the header opened
  300 of 300 sockets and had 600 of 600 requests answered; now a forwarding header is read only from a proxy the
  researcher names (`router_trusted_proxies`), and then only right of the last named proxy;
- item 8: a submission of finished work past its source's budget was refused 429 (a lab behind one address lost
  finished HITs); now it waits for the budget, in order, and is never refused for rate;
- item 6: a worker name of 100,000 characters was accepted (an agent and a 100,008-character `worker_id`); now
  ids longer than the stated limit are refused at the door with a reason the page shows.

Each client binds its own loopback address (127.0.0.0/8), so the router sees distinct peers as it would on the
internet.
"""
from __future__ import annotations

import asyncio
import json
import shutil
import subprocess
import time

import httpx
import pytest
import websockets

from parlai_dialeval.compat import mephisto_claims
from parlai_dialeval.compat import mephisto_router as compat_router

from .test_resume_router import built_router
from .test_router_hostile import require_router, run_router
from .test_router_posts import as_mephisto_server

BURST, RATE, SOCKETS = 12, 4, 3


def configure(router, **door) -> None:
    config = router / "dialeval_door.json"
    config.write_text(json.dumps({**json.loads(config.read_text()), **door}))


def client(address: str) -> httpx.AsyncClient:
    return httpx.AsyncClient(transport=httpx.AsyncHTTPTransport(local_address=address), timeout=30)


async def answered(ask, count: int = 3 * BURST) -> tuple[int, int, float]:
    """``count`` requests one after another (``ask(i)`` sends the i-th and returns its status): how many were
    answered 200, how many 429, and in how many seconds."""
    start = time.monotonic()
    codes = [await ask(i) for i in range(count)]
    return codes.count(200), codes.count(429), time.monotonic() - start


def within_one_budget(counts: tuple[int, int, float]) -> bool:
    """What one source's budget allows: some requests refused, and no more answered than its burst and what
    refilled while they were sent (a slower machine refills more, so the bound is the time they took, not a fixed
    count: 24 requests in 1.5 s on a loaded CI got 18 answers). A budget per forged header refuses none."""
    ok, refused, seconds = counts
    return refused >= 1 and ok <= BURST + RATE * seconds + 1


def test_the_client_address_is_the_peer_unless_a_named_proxy_names_another(tmp_path):
    """dialeval_sources.js's client_address on requests as node gives them: the peer; from a named proxy, the first
    address right to left that is no named proxy; never a header from anyone else."""
    require_router()
    shutil.copy2(compat_router.ROUTER_DIR / "dialeval_sources.js", tmp_path / "dialeval_sources.js")
    cases = {
        # (door settings, peer, headers) -> expected source
        "no proxy named: the header is ignored": ({}, "127.0.0.1", {"x-forwarded-for": "203.0.113.7"}, "127.0.0.1"),
        "a mapped IPv4 peer": ({}, "::ffff:198.51.100.4", {}, "198.51.100.4"),
        "an IPv6 peer counts as its /64": ({}, "2001:db8:1:2:aaaa::1", {}, "2001:db8:1:2::/64"),
        "a peer that is not the named proxy": ({"trusted_proxies": ["127.0.0.1"]}, "127.0.0.9",
                                               {"x-forwarded-for": "203.0.113.7"}, "127.0.0.9"),
        "the named proxy's entry, not the client's": ({"trusted_proxies": ["127.0.0.1"]}, "127.0.0.1",
                                                      {"x-forwarded-for": "6.6.6.6, 203.0.113.7"}, "203.0.113.7"),
        "two named proxies": ({"trusted_proxies": ["127.0.0.1", "10.0.0.0/8"]}, "127.0.0.1",
                              {"x-forwarded-for": "6.6.6.6, 198.51.100.9, 10.1.2.3"}, "198.51.100.9"),
        "a port and brackets": ({"trusted_proxies": ["127.0.0.1"]}, "127.0.0.1",
                                {"x-forwarded-for": "[2001:db8::5]:443"}, "2001:db8:0:0::/64"),
        "an entry that is no address stops at its proxy": ({"trusted_proxies": ["127.0.0.1"]}, "127.0.0.1",
                                                           {"x-forwarded-for": "6.6.6.6, unknown"}, "127.0.0.1"),
        "no header from the named proxy": ({"trusted_proxies": ["127.0.0.1"]}, "127.0.0.1", {}, "127.0.0.1"),
        "Forwarded, when named": ({"trusted_proxies": ["127.0.0.1"], "proxy_header": "forwarded"}, "127.0.0.1",
                                  {"forwarded": 'for=6.6.6.6, for="[2001:db8:cafe::17]:4711";proto=https',
                                   "x-forwarded-for": "1.1.1.1"}, "2001:db8:cafe:0::/64"),
        "another header than the one named is ignored": ({"trusted_proxies": ["127.0.0.1"], "proxy_header": "forwarded"},
                                                         "127.0.0.1", {"x-forwarded-for": "1.1.1.1"}, "127.0.0.1"),
        "CF-Connecting-IP": ({"trusted_proxies": ["::1"], "proxy_header": "cf-connecting-ip"}, "::1",
                             {"cf-connecting-ip": "198.51.100.77"}, "198.51.100.77"),
        "the lab's own address": ({"lab_addresses": ["192.0.2.0/24"]}, "192.0.2.40", {}, "192.0.2.40 lab"),
    }
    script = ["const path = require('path'); const fs = require('fs'); const out = {};",
              f"const cases = {json.dumps({k: list(v) for k, v in cases.items()})};",
              "for (const [name, [door, peer, headers]] of Object.entries(cases)) {",
              "  fs.writeFileSync(path.join(__dirname, 'dialeval_door.json'), JSON.stringify({host: '127.0.0.1', ...door}));",
              "  delete require.cache[require.resolve('./dialeval_sources')];",
              "  const d = require('./dialeval_sources'); const req = {socket: {remoteAddress: peer}, headers};",
              "  out[name] = d.source_of(req) + (d.from_lab(req) ? ' lab' : '');",
              "}",
              "console.log(JSON.stringify(out));"]
    (tmp_path / "table.js").write_text("\n".join(script))
    found = json.loads(subprocess.run(["node", "table.js"], cwd=tmp_path, capture_output=True, text=True,
                                      check=True).stdout)
    assert found == {name: case[-1] for name, case in cases.items()}


async def rotating_sockets(port: int, count: int) -> tuple[int, int]:
    """``count`` websockets from 127.0.0.1, each with a new X-Forwarded-For: (how many opened, how many were
    refused 429); those opened are closed again."""
    sockets, refused = [], 0
    for i in range(count):
        try:
            sockets.append(await websockets.connect(f"ws://127.0.0.1:{port}", local_addr=("127.0.0.1", 0),
                                                    extra_headers={"X-Forwarded-For": f"203.0.{i // 250}.{i % 250 + 1}"}))
        except websockets.InvalidStatusCode as refusal:
            refused += refusal.status_code == 429
    for socket in sockets:
        await socket.close()
    return len(sockets), refused


async def rotating_headers(port: int) -> dict:
    """One client on this machine (127.0.0.1: the router believed loopback peers' headers) sends requests and opens
    sockets, each with a new X-Forwarded-For; another client (127.0.0.3) asks once afterwards."""
    seen = {}
    async with client("127.0.0.1") as http:
        seen["requests"] = await answered(lambda i: status(http, port, f"198.51.{i // 250}.{i % 250 + 1}"))
    await asyncio.sleep(BURST / RATE + 0.5)  # the budget refills
    seen["sockets"] = await rotating_sockets(port, 3 * SOCKETS)
    async with client("127.0.0.3") as http:
        seen["another client"] = (await http.get(f"http://127.0.0.1:{port}/is_alive")).status_code
    return seen


async def through_a_proxy(port: int) -> dict:
    """A named proxy (127.0.0.4) passes on two clients' requests; one of them also writes addresses of its own
    into the header, left of the proxy's entry."""
    seen = {}
    async with client("127.0.0.4") as proxy:
        seen["spoofing client"] = await answered(lambda i: status(proxy, port, f"10.9.{i}.1, 203.0.113.20"))
        seen["other client"] = await status(proxy, port, "203.0.113.21")
    async with client("127.0.0.5") as stranger:  # not the named proxy: its header is its own
        seen["not the proxy"] = await answered(lambda i: status(stranger, port, f"203.0.113.{30 + i}"))
    return seen


async def status(http: httpx.AsyncClient, port: int, forwarded: str | None = None) -> int:
    """The router's answer to a page load (one that says it was forwarded for ``forwarded``, where given)."""
    headers = {"X-Forwarded-For": forwarded} if forwarded else {}
    return (await http.get(f"http://127.0.0.1:{port}/is_alive", headers=headers)).status_code


@pytest.mark.slow  # a router started, budgets refilled at their rate
def test_a_forwarding_header_buys_no_budget_unless_a_named_proxy_sends_it(tmp_path):
    require_router()
    router = built_router(tmp_path)
    configure(router, source_requests_burst=BURST, source_requests_per_second=RATE, source_sockets=SOCKETS)
    seen, output = run_router(router, rotating_headers)
    # before: every new X-Forwarded-For from a loopback peer was a new source with a full budget
    assert within_one_budget(seen["requests"]), seen
    assert seen["sockets"] == (SOCKETS, 2 * SOCKETS), seen
    assert seen["another client"] == 200
    assert "more than 3 open sockets from one source" in output

    configure(router, trusted_proxies=["127.0.0.4"])
    seen, _ = run_router(router, through_a_proxy)
    assert within_one_budget(seen["spoofing client"]), seen  # its own budget, whatever it wrote on the left
    assert seen["other client"] == 200  # another client behind the same proxy keeps its own
    assert within_one_budget(seen["not the proxy"]), seen


async def flooded_then_submitting(port: int) -> dict:
    """The Mephisto server (this test) is attached; one address empties its budget, then hands in SUBMITS
    finished units at once (each with its agent's token) and a forged one; a page load from it meanwhile."""
    seen, got = {}, []
    async with as_mephisto_server(port, got):
        async with client("127.0.0.2") as lab:
            seen["flood"] = await answered(lambda i: status(lab, port))
            start = time.monotonic()

            async def submit(agent: str, token: str) -> int:
                body = {"USED_AGENT_ID": agent, "agent_token": token, "final_data": {"done": agent}}
                return (await lab.post(f"http://127.0.0.1:{port}/submit_task", json=body)).status_code

            agents = [f"agent-{i}" for i in range(SUBMITS)]
            answers = asyncio.gather(*(submit(a, compat_router.token(a)) for a in agents),
                                     submit("agent-x", "0" * 64))
            await asyncio.sleep(0.3)
            seen["page load meanwhile"] = (await lab.get(f"http://127.0.0.1:{port}/is_alive")).status_code
            *honest, forged = await answers
            seen["submits"], seen["forged"], seen["seconds"] = honest, forged, time.monotonic() - start
    seen["server got"] = sorted(p["data"]["done"] for p in got if p.get("packet_type") == "submit_unit")
    return seen


SUBMITS = 16


@pytest.mark.slow  # a router started, budgets refilled at their rate
def test_finished_work_waits_for_the_budget_and_is_never_refused_for_rate(tmp_path):
    require_router()
    router = built_router(tmp_path)
    configure(router, source_requests_burst=BURST, source_requests_per_second=RATE)
    seen, output = run_router(router, flooded_then_submitting)
    assert within_one_budget(seen["flood"]), seen
    assert seen["submits"] == [200] * SUBMITS, seen  # before: 429 for each past the budget
    assert seen["forged"] == 403  # waited its turn like the others, then refused for its token
    assert seen["page load meanwhile"] == 429  # the submissions waiting are served first
    assert seen["seconds"] >= (SUBMITS - RATE) / RATE - 1, seen  # they waited for the budget: not a bypass
    assert seen["server got"] == sorted(f"agent-{i}" for i in range(SUBMITS))
    assert "missing or forged token" in output


@pytest.mark.slow  # a router started, budgets refilled at their rate
def test_an_id_longer_than_the_stated_limit_is_refused_with_a_reason_the_page_shows(tmp_path):
    """Mephisto accepted a worker name of 100,000 characters (an agent, and the export's worker_id of 100,008
    characters). Ids are at most ID_CHARS characters (a registration: two ids and a dash); longer ones are
    refused at the door, agent_details-shaped, so that mephisto-task shows the reason on the page."""
    require_router()
    router = built_router(tmp_path)
    from parlai_dialeval.compat.mephisto_door import ID_CHARS

    limits = {"worker_name": ID_CHARS, "assignment_id": ID_CHARS, "agent_registration_id": 2 * ID_CHARS + 1}

    async def ask(port: int) -> dict:
        seen = {}
        async with client("127.0.0.2") as http:
            for k, (field, limit) in enumerate(limits.items()):
                data = {"worker_name": f"w{k}", "agent_registration_id": f"a{k}-w{k}", "assignment_id": f"a{k}",
                        "provider_type": "mock"}
                reply = await http.post(f"http://127.0.0.1:{port}/request_agent", json={
                    "provider_data": {**data, field: "x" * 100_000}, "client_timestamp": 0})
                within = await asyncio.gather(http.post(f"http://127.0.0.1:{port}/request_agent", timeout=1, json={
                    "provider_data": {**data, field: "x" * limit}, "client_timestamp": 0}), return_exceptions=True)
                seen[field] = (reply.status_code, reply.json()["data"], type(within[0]).__name__)
        return seen

    seen, output = run_router(router, ask)
    for field, limit in limits.items():
        status, details, within = seen[field]
        assert status == 403 and details["agent_id"] is None, seen[field]
        assert f"an id in it is longer than {limit} characters" in details["failure_reason"]
        assert within == "ReadTimeout"  # at the limit: passed on to the server (none answers here)
    assert "refused POST /request_agent: provider_data.worker_name of 100000 characters" in output
    assert "x" * 100 not in output


def test_places_per_source_are_a_share_of_the_study_and_addresses_are_checked_at_launch():
    """Item 8: the places one address may take scale with the study (0.1 of them, at least 2; before: 10 for any
    study, so one address filled a study of 6); a malformed proxy or lab address stops the launch with one line."""
    from types import SimpleNamespace

    from omegaconf import OmegaConf

    from parlai_dialeval.compat.mephisto_door import door_config
    from parlai_dialeval.crowdsourcing.platform.runner import study_places
    from parlai_dialeval.errors import DialevalError

    assert [mephisto_claims.claims_per_source(n) for n in (1, 6, 20, 21, 200, 500)] == [2, 2, 2, 3, 20, 50]
    assert mephisto_claims.claims_per_source(None) == mephisto_claims.CLAIMS_PER_SOURCE  # a router without a run
    assert mephisto_claims.claims_per_source(30, share=0.5) == 15
    chat = OmegaConf.create({"mephisto": {"blueprint": {"num_conversations": 40}}})
    static = OmegaConf.create({"mephisto": {"blueprint": {"units_per_assignment": 3}}})
    adaptive = OmegaConf.create({"adaptive": True, "adaptive_budget": 25, "mephisto": {"blueprint": {}}})
    assert study_places(chat, SimpleNamespace()) == 40
    assert study_places(static, SimpleNamespace(static_task_data=[{}] * 7)) == 21
    assert study_places(adaptive, SimpleNamespace(static_task_data=[{}] * 7)) == 25

    config = door_config({"blueprint": {"router_trusted_proxies": ["127.0.0.1", "10.1.2.3/8"],
                                        "router_lab_addresses": ["2001:db8::/48"], "router_proxy_header": "Forwarded"}})
    assert (config["trusted_proxies"], config["lab_addresses"], config["proxy_header"]) == (
        ["127.0.0.1", "10.0.0.0/8"], ["2001:db8::/48"], "forwarded")
    assert door_config({})["trusted_proxies"] == []  # by default no header is believed
    # a rehearsal (mock provider) is the researcher at this machine: a third tab from 127.0.0.1 was refused a
    # place ("too many people ... from your network") before loopback was its lab; a crowd provider's is not
    assert door_config({})["lab_addresses"] == ["127.0.0.1", "::1"]
    assert door_config({"provider": {"_provider_type": "prolific"}, "blueprint": {}})["lab_addresses"] == []
    for blueprint, named in (({"router_trusted_proxies": ["proxy.example"]}, "'proxy.example' is not an IP address"),
                             ({"router_lab_addresses": "127.0.0.1"}, "a list of addresses"),
                             ({"router_proxy_header": "X Forwarded"}, "is not a header name")):
        try:
            door_config({"blueprint": blueprint})
        except DialevalError as error:
            assert named in str(error), error
        else:
            raise AssertionError(f"{blueprint} accepted")
