"""Issue 52, items 2, 6 and 8 on a real `dialeval launch live_chat_da conf=offline_small` (the real router): while
honest participants chat, an attacker tries each door, and after each attack every message the honest pages
sent is stored once (the export), and the attacker's refused work is not.

- item 2: one client rotates `X-Forwarded-For` on every request and socket (before: 300 of 300 sockets and 600 of
  600 requests granted); no proxy is named, so the header buys nothing;
- item 6: a participant sends a 400 KB message (before: acknowledged, shown as sent, never stored) and a message
  over the task's limit; a stranger asks with a 100,000-character worker name (before: an agent); each is
  refused with a sentence the page shows, in the page's catalogue;
- item 8: one address asks for every place (before: a fixed 10 per address, a 6-place study filled by one);
  it gets its share of the study's places, another address still gets one, and the lab's own address
  (`router_lab_addresses`) takes more than the share.

Every client binds its own loopback address (127.0.0.0/8): the router sees them as distinct peers.
"""
from __future__ import annotations

import asyncio
import json
import time
from collections import Counter

import httpx
import pytest

from parlai_dialeval.tls import shared_tls_context

from .page_client import PageClient
from .protocol_harness import CliRun
from .test_page_catalogues import server_key
from .test_router_hostile import require_router
from .test_router_sources import rotating_sockets

pytestmark = [pytest.mark.slow, pytest.mark.timeout(900)]
PLACES = 16  # a share of 0.1: 2 places per address and window
LAB = "127.0.0.4"
INPUTS = 2


@pytest.fixture(scope="module")
def launch(tmp_path_factory):
    require_router()
    from parlai_dialeval.testing.ports import free_port

    port, folder = free_port(), tmp_path_factory.mktemp("doors")
    run = CliRun("live_chat_da", folder, [
        "conf=offline_small", f"mephisto.architect.port={port}", "mephisto.task.task_name=hostile_doors",
        f"mephisto.blueprint.num_conversations={PLACES}", "mephisto.task.max_num_concurrent_units=0",
        "mephisto.blueprint.router_first_socket_seconds=5", f"mephisto.blueprint.router_lab_addresses=[{LAB}]",
        f"live_chat.min_inputs={INPUTS}", "live_chat.seed=0"])
    yield run, port, folder
    run.stop()


def honest(names: dict[str, str], port: int) -> list[PageClient]:
    """Honest participants, each on its own address (name -> address)."""
    deadline = time.time() + 400
    return [PageClient(name, port, INPUTS, think=0.3, deadline=deadline, address=address)
            for name, address in names.items()]


async def chat_while(clients: list[PageClient], attack) -> object:
    """The honest clients do their whole HIT while ``attack()`` runs (once they are in); its result."""
    async def attack_once_in():
        while not all(getattr(c, "agent_id", None) or c.seen for c in clients):
            await asyncio.sleep(0.3)
        return await attack()

    async def work(client: PageClient) -> None:
        async with client.http_client(timeout=60) as http:
            await client.run(http)

    *_, result = await asyncio.gather(*map(work, clients), attack_once_in())
    return result


def assert_stored_once(launch, clients: list[PageClient], absent: tuple[str, ...] = ()) -> None:
    """Every message the honest pages sent (not only those confirmed) stored exactly once; ``absent`` nowhere."""
    run, _, folder = launch
    out = folder / f"export_{clients[0].name}.jsonl"
    run.export("hostile_doors", out)
    convs = [r for r in map(json.loads, out.read_text().splitlines()) if r["type"] == "conversation"]
    stored = Counter(t["text"] for c in convs for t in c["turns"] if t["speaker"] == "human")
    assert all(c.done for c in clients), [c.seen for c in clients]
    assert {t: stored[t] for c in clients for t in c.sent} == {t: 1 for c in clients for t in c.sent}
    assert all(sorted(c.confirmed) == sorted(c.sent) for c in clients)
    assert not [text for text in stored if any(text.startswith(a[:50]) for a in absent)]


def test_item_2_a_rotating_forwarded_for_header_buys_no_budget(launch):
    _, port, _ = launch
    clients = honest({"alice": "127.0.1.1", "bob": "127.0.1.2"}, port)

    async def attack() -> dict:
        seen = {}
        # from this machine (127.0.0.1), whose headers the router believed before
        reader, writer = await asyncio.open_connection("127.0.0.1", port, local_addr=("127.0.0.1", 0))
        requests = [f"GET /is_alive HTTP/1.1\r\nHost: x\r\nX-Forwarded-For: 198.51.{i // 250}.{i % 250 + 1}\r\n\r\n"
                    for i in range(600)]
        start = time.monotonic()
        writer.write("".join(requests).encode())
        await writer.drain()
        answers = b""
        while answers.count(b"HTTP/1.1 ") < 600:
            chunk = await asyncio.wait_for(reader.read(1 << 20), 60)
            if not chunk:
                break
            answers += chunk
        seen["seconds"] = time.monotonic() - start
        writer.close()
        seen["requests"] = (answers.count(b"HTTP/1.1 200"), answers.count(b"HTTP/1.1 429"))
        await asyncio.sleep(11)  # its request budget refills (a burst of 400 at 40 a second)
        seen["sockets"] = await rotating_sockets(port, 150)
        return seen

    seen = asyncio.run(chat_while(clients, attack))
    # the source's budget (dialeval_door.js): a burst of 400, refilled at 40 a second while the 600 are served.
    # Before: 600 answered, none refused. (A fixed ">= 150 refused" failed once in CI: 462 answered in a slow run.)
    answered, turned_away = seen["requests"]
    assert answered + turned_away == 600 and answered <= 400 + 40 * seen["seconds"] + 1, seen
    opened, refused = seen["sockets"]  # the Mephisto server's own socket comes from 127.0.0.1 too
    assert opened in (99, 100) and opened + refused == 150, seen  # before: 150 of 150 (300 of 300 in the issue)
    assert_stored_once(launch, clients)


def test_item_6_oversized_messages_and_names_are_refused_with_a_reason_the_page_shows(launch):
    run, port, _ = launch
    clients = honest({"carol": "127.0.1.3", "dave": "127.0.1.4"}, port)
    huge, long = "H" * 400_000, "L" * 3_000

    async def attack() -> dict:
        seen = {}
        mallory = PageClient("mallory", port, INPUTS, think=0.3, deadline=time.time() + 300, address="127.0.0.3")
        async with mallory.http_client(timeout=60) as http:
            assert await mallory.open(http)
            await mallory.act({"action": "topic", "topic": "books", "attitude": "like"})
            assert await mallory.until(lambda: mallory.state.get("phase") == "chat")
            for text in (huge, long):
                await mallory.act({"action": "message"}, text)
                assert await mallory.until(lambda: len([s for s in mallory.seen if s.startswith("act refused")]) ==
                                           (1 if text is huge else 2), 60), mallory.seen
            await asyncio.sleep(9)  # past the page's first resend of an unconfirmed act: nothing comes back
            seen["refusals"] = [s.removeprefix("act refused: ") for s in mallory.seen if s.startswith("act refused")]
            seen["confirmed"] = list(mallory.confirmed)
            reply = await http.post(f"http://127.0.0.1:{port}/request_agent", json={"provider_data": {
                "worker_name": "N" * 100_000, "agent_registration_id": "n-n", "assignment_id": "n",
                "provider_type": "mock"}, "client_timestamp": time.time()})
            seen["long name"] = (reply.status_code, reply.json()["data"])
            await mallory.close()
        return seen

    seen = asyncio.run(chat_while(clients, attack))
    door, world = seen["refusals"]
    assert door == "Your message is 400,000 characters long; the limit is 20,000. Please shorten it."
    assert world == "Your message is 3,000 characters long; the limit is 2,000. Please shorten it."
    assert seen["confirmed"] == []  # before: the 400 KB message was acknowledged, shown as sent, never stored
    status, details = seen["long name"]
    assert status == 403 and details["agent_id"] is None, seen["long name"]
    # every sentence the page shows is one of its catalogue's server texts: translated on a Hebrew page
    assert [server_key(text) for text in (door, world, details["failure_reason"])] == [
        "server.too_long", "server.too_long", "server.id_too_long"]
    assert_stored_once(launch, clients, absent=(huge, long))
    assert "N" * 200 not in run.log()


async def ask(port: int, address: str, name: str) -> tuple[int, dict]:
    async with httpx.AsyncClient(transport=httpx.AsyncHTTPTransport(local_address=address, verify=shared_tls_context()), timeout=60) as http:
        reply = await http.post(f"http://127.0.0.1:{port}/request_agent", json={"provider_data": {
            "worker_name": name, "agent_registration_id": f"{name}-{name}", "assignment_id": name,
            "provider_type": "mock"}, "client_timestamp": time.time()})
    return reply.status_code, reply.json()["data"]


def test_item_8_one_address_takes_its_share_of_the_places_and_the_lab_more(launch):
    _, port, _ = launch
    clients = honest({"erin": "127.0.0.6"}, port)

    async def attack() -> dict:
        return {"one address": [await ask(port, "127.0.0.5", f"bulk{k}") for k in range(5)],
                "lab": [await ask(port, LAB, f"lab{k}") for k in range(4)]}

    async def main():
        seen = await attack()  # before the honest newcomer arrives
        await chat_while(clients, lambda: asyncio.sleep(0))
        return seen

    seen = asyncio.run(main())
    statuses = [status for status, _ in seen["one address"]]
    assert statuses == [200, 200, 429, 429, 429], seen["one address"]  # 0.1 of 16 places, at least 2
    busy = seen["one address"][-1][1]["failure_reason"]
    assert server_key(busy) == "server.network_busy", busy
    assert [status for status, _ in seen["lab"]] == [200] * 4 and all(d["agent_id"] for _, d in seen["lab"])
    assert_stored_once(launch, clients)
