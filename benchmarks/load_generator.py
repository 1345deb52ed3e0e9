"""Participants at human pace for load runs: the page's packets (tests/crowdsourcing/page_client.py), no browser.

A ``Participant`` does a whole live-chat DA HIT, a ``PwTurnParticipant`` a whole PW-Turn HIT, from the
server's state only, from a loopback address of its own (``own_address``), as a person would: seconds of reading and typing between messages (``Pace``), now and
then a long pause, a page reload mid-task (network blip, refresh) and, for a few, leaving for good.
Every action's latency is kept twice: as seen on the socket, and as the platform's own share, the
endpoint bots' time subtracted. The bots' time is known exactly from their reply: the fake endpoint
(``bot_script``) answers after ``latency`` seconds and streams one word every ``chunk_delay`` seconds, so a
reply of n words took ``latency + n * chunk_delay`` at the endpoint (a reply not from the script, e.g. the
offline QC bot's, counts as 0 bot time: all platform).

``Resources`` samples the router's and the server's CPU and memory while a step runs.
"""
from __future__ import annotations

import asyncio
import importlib
import importlib.util
import json
import os
import random
import signal
import sys
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

import psutil

ROOT = Path(__file__).resolve().parents[1]


HELPERS = "dialeval_test_helpers"  # tests/crowdsourcing under a name of its own: the repo's crowdsourcing/ is another


def test_helper(name: str):
    """A helper module of the tests (tests/ is not on sys.path), imported from tests/crowdsourcing as a package
    so that its relative imports (protocol_harness's zygote) resolve: ``page_client`` (``PageClient``) or
    ``protocol_harness`` (``CliRun``: `dialeval launch` in its own process group)."""
    if HELPERS not in sys.modules:
        folder = ROOT / "tests" / "crowdsourcing"
        spec = importlib.util.spec_from_file_location(HELPERS, folder / "__init__.py",
                                                      submodule_search_locations=[str(folder)])
        sys.modules[HELPERS] = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(sys.modules[HELPERS])
    return importlib.import_module(f"{HELPERS}.{name}")


PageClient = test_helper("page_client").PageClient


def stored_texts(task: str, data_dir: Path, out: Path):
    """Export the task (its report, its conversation records, and how often each human text was stored)."""
    from parlai_dialeval.crowdsourcing.platform import export

    report = export.export_task(task, out, data_dir=data_dir)
    records = [json.loads(line) for line in out.read_text().splitlines()]
    convs = [r for r in records if r["type"] == "conversation"]
    human = Counter(t["text"] for c in convs for t in c["turns"] if t["speaker"] == "human")
    return report, convs, human


@dataclass
class BotScript:
    """What the fake endpoint (parlai_dialeval/testing/fake_openai.py) does for every model: replies of
    ``words`` (low, high) words, ``latency`` s before the first word, one word per ``chunk_delay`` s."""
    latency: float = 0.8
    chunk_delay: float = 0.1
    words: tuple[int, int] = (2, 22)  # with the defaults: 1.0 to 3.0 s per reply
    count: int = 40

    def replies(self, seed: int = 0) -> list[str]:
        rng = random.Random(seed)
        vocabulary = "that sounds lovely and I would like to hear more about what you enjoy most".split()
        return [" ".join(rng.choice(vocabulary) for _ in range(rng.randint(*self.words))) + "."
                for _ in range(self.count)]

    def script(self, models: list[str]) -> dict:
        """The fake server's --script JSON."""
        return {m: {"replies": self.replies(i), "latency": self.latency, "chunk_delay": self.chunk_delay}
                for i, m in enumerate(models)}

    def seconds(self, text: str) -> float:
        """The endpoint's time for a reply it sent (0 for a text not in the script)."""
        known = getattr(self, "_known", None)
        if known is None:
            known = self._known = {r for i in range(8) for r in self.replies(i)}
        return self.latency + self.chunk_delay * len(text.split(" ")) if text in known else 0.0


@dataclass
class Pace:
    """How a person paces a HIT; ``scale`` multiplies every wait (a tiny test run uses 0.05)."""
    think: tuple[float, float] = (2.0, 6.0)  # reading the reply and typing the next message, s
    long_pause: float = 0.05  # chance, before a message, of a long pause (another tab, a phone call)
    long_pause_s: tuple[float, float] = (15.0, 40.0)
    reload: float = 0.03  # chance, after a reply, that the page reloads
    abandon: float = 0.04  # chance that the participant leaves for good, at a random message
    scale: float = 1.0

    def wait(self, rng: random.Random) -> float:
        seconds = rng.uniform(*self.think)
        if rng.random() < self.long_pause:
            seconds += rng.uniform(*self.long_pause_s)
        return seconds * self.scale


def own_address(i: int) -> str:
    """Participant ``i``'s loopback address (127.0.0.0/8 is all this machine's; 127.0.0.x is left to the servers):
    the router's budgets are per address, as on the internet, where each participant has one."""
    return f"127.1.{i // 250}.{i % 250 + 1}"


LAB_ADDRESS = "127.2.0.1"  # participants behind one address (a lab's), named in router_lab_addresses


class Participant(PageClient):
    """One live-chat DA participant at human pace (the page's packets; page_client.PageClient)."""

    def __init__(self, name: str, port: int, inputs: int, deadline: float, pace: Pace, bots: BotScript, seed: int,
                 address: str | None = None):
        super().__init__(name, port, inputs, think=0.0, deadline=deadline, address=address)
        self.pace, self.bots, self.rng = pace, bots, random.Random(seed)
        # (action, seconds the platform added to its answer: the bots' endpoint time subtracted, when answered)
        self.platform: list[tuple[str, float, float]] = []
        self.bot_seconds: list[float] = []
        self.joined: float | None = None  # seconds from arrival to the first state on the page
        self.arrived = time.time()
        self.reloads = 0
        # the message after which this participant leaves for good (None: stays to the end)
        self.leave_after = self.rng.randint(0, 3 * inputs - 1) if self.rng.random() < pace.abandon else None

    async def open(self, http) -> bool:
        if self.joined is None:
            self.arrived = time.time()
        opened = await super().open(http)
        if opened and self.joined is None:
            await self.until(lambda: self.joined is not None, 120)
        return opened

    def _on_update(self, message: dict) -> None:
        super()._on_update(message)
        # timed as the state arrives: open() returns only after its resend's 0.5 s wait (transport.js's, which a
        # page waits beside showing the state), which had made every 'joined' 0.5 s longer
        if self.joined is None and self.state:
            self.joined = time.time() - self.arrived

    async def act(self, task_data: dict, text: str = "") -> bool:
        self._acted = time.time()
        return await super().act(task_data, text)

    async def until(self, condition, timeout: float = 120) -> bool:
        return await super().until(condition, timeout)

    async def say(self, task_data: dict, text: str, answered) -> bool:
        replied = await super().say(task_data, text, answered)
        if replied:
            bot = self.reply_seconds()
            self.bot_seconds.append(bot)
            self.timed("message", self.latencies[-1] - bot)
        return replied

    def timed(self, action: str, seconds: float) -> None:
        self.platform.append((action, seconds, time.time()))

    def reply_seconds(self) -> float:
        return self.bots.seconds(self.last_reply)

    async def pause(self) -> None:
        if self.leave_after is not None and len(self.sent) > self.leave_after:
            self.gone = True  # closes the tab: the socket drops and never comes back
            self.seen.append("left mid-task")
            await self.close()
            return
        if self.rng.random() < self.pace.reload:
            self.reloads += 1
            await self.ws.close()  # the run loop reloads the page, as a person pressing F5
            await self.until(lambda: False, 2)
            return
        await asyncio.sleep(self.pace.wait(self.rng))

    async def step(self, http) -> None:
        """Non-chat actions (topic, ratings, feedback) also take a person a few seconds; their answer time
        is all platform."""
        state = self.state
        chatting = state.get("phase") == "chat" and state.get("inputs", 0) < state.get("min_inputs", self.inputs)
        if not chatting and not state.get("task_done"):
            await asyncio.sleep(self.pace.wait(self.rng) / 2)
        sent_before, version = len(self.sent), self.version
        self._acted = None
        await super().step(http)
        if len(self.sent) == sent_before and self._acted is not None and self.version > version:
            self.timed(state.get("phase") or "start", time.time() - self._acted)


class PwTurnParticipant(Participant):
    """One PW-Turn participant: each turn the world shows two replies (the two bots answer one after the
    other, both streamed), the person picks one and says why, then writes the next message."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.leave_after = self.rng.randint(0, 5) if self.leave_after is not None else None

    def reply_seconds(self) -> float:
        return self.bots.seconds(self.state.get("left") or "") + self.bots.seconds(self.state.get("right") or "")

    async def onboarded(self, http) -> None:
        """The page's "Continue" after a passed onboarding: POST /submit_onboarding, whose answer is the
        unit's agent; the page connects again as that agent."""
        start = time.time()
        reply = await http.post(self.http_url + "/submit_onboarding", timeout=60, json={
            "provider_data": {"USED_AGENT_ID": self.agent_id, "agent_token": self.token,
                              "onboarding_data": {"passed": True}}, "client_timestamp": time.time()})
        try:
            details = reply.json()["data"]
        except (ValueError, KeyError):
            self.seen.append(f"onboarding submission refused: HTTP {reply.status_code}")
            self.gone = True
            return
        if await self.adopt(details) and await self.until(lambda: bool(self.state.get("phase"))):
            # the unit's first state comes with both bots' replies to the fixed opening
            self.timed("onboarded", time.time() - start - self.reply_seconds())

    async def step(self, http) -> None:
        state, version = dict(self.state), self.version
        phase = state.get("phase")
        if phase == "onboarding":  # the four pairs of Appendix A, each answered right
            from parlai_dialeval.crowdsourcing.pw_turn.protocol import ONBOARDING_CONVERSATION

            good = {pair.good for _, pair in ONBOARDING_CONVERSATION}
            await asyncio.sleep(self.pace.wait(self.rng))
            start, version = time.time(), self.version
            if await self.act({"action": "onboarding", "choices": [
                    "left" if pair["left"] in good else "right" for pair in state["pairs"]]}):
                if await self.until(lambda: self.version > version):
                    self.timed("onboarding", time.time() - start)
            return
        if phase == "onboarding_done":
            await self.onboarded(http)
            return
        if state.get("task_done") or phase not in ("chat", "choose"):
            await super().step(http)  # submit, or wait for the world's next state
            if not state.get("task_done"):
                await self.until(lambda: self.version > version)
            return
        if phase == "choose":
            await asyncio.sleep(self.pace.wait(self.rng))
            start = time.time()
            side = self.rng.choice(("left", "right"))
            if await self.act({"action": "choose", "choice": side, "justification": f"{side} reads better"}):
                if await self.until(lambda: self.version > version and self.state.get("phase") != "choose"
                                    or bool(self.state.get("warning")) or bool(self.state.get("task_done"))):
                    self.timed("choose", time.time() - start)
            return
        turn = state.get("turn")
        if await self.say({"action": "message"}, f"{self.name} message {len(self.sent)}: what do you like to read?",
                          lambda: self.state.get("phase") == "choose" and self.state.get("turn") == turn
                          and self.version > version):
            await self.pause()


async def crash_and_relaunch(run, relaunch):
    """kill -9 of a `dialeval launch` (``protocol_harness.CliRun``: its process group) and of its node
    router, as in a crash; its log is kept as launch_killed.log and ``relaunch()`` (run in a thread: a
    launch takes seconds to minutes) starts it again. Returns the new launch."""
    os.killpg(run.proc.pid, signal.SIGKILL)
    if run.router_pid:
        os.kill(run.router_pid, signal.SIGKILL)
    await asyncio.to_thread(run.proc.wait, 10)
    run.log_path.rename(run.log_path.with_name("launch_killed.log"))
    return await asyncio.to_thread(relaunch)


class Resources:
    """CPU (% of one core, mean and peak) and memory (RSS, MB, peak) of the router and of the server
    (the launch process and its children but the router), sampled every ``every`` seconds."""

    def __init__(self, router_pid: int | None, server_pid: int, every: float = 1.0):
        self.pids = {"router": router_pid, "server": server_pid}
        self.every = every
        self.cpu: dict[str, list[float]] = {"router": [], "server": []}
        self.rss: dict[str, list[float]] = {"router": [], "server": []}
        self._stop = asyncio.Event()

    def _processes(self, pid):
        try:
            process = psutil.Process(pid)
            return [process, *process.children(recursive=True)]
        except (psutil.Error, TypeError, ValueError):
            return []

    async def run(self) -> None:
        known: dict[int, psutil.Process] = {}
        while not self._stop.is_set():
            for part, pid in self.pids.items():
                cpu = rss = 0.0
                # the router is the launch process's child: counted once, as the router
                for process in (p for p in self._processes(pid) if part == "router" or p.pid != self.pids["router"]):
                    process = known.setdefault(process.pid, process)  # cpu_percent needs the same object
                    try:
                        cpu += process.cpu_percent(None)
                        rss += process.memory_info().rss / 2**20
                    except psutil.Error:
                        pass
                self.cpu[part].append(cpu)
                self.rss[part].append(rss)
            try:
                await asyncio.wait_for(self._stop.wait(), self.every)
            except asyncio.TimeoutError:
                pass

    def stop(self) -> None:
        self._stop.set()

    def summary(self, part: str) -> str:
        cpu, rss = self.cpu[part][1:] or [float("nan")], self.rss[part] or [float("nan")]
        return f"{sum(cpu) / len(cpu):.0f}% / {max(cpu):.0f}% CPU, {max(rss):.0f} MB"
