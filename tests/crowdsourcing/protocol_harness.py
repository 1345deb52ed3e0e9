"""Test harness of the protocol tasks: ``MockRun`` runs a task in-process with MockArchitect +
MockProvider (no node, npm or browser) to drive its world with scripted workers; ``CliRun`` runs it for real
(`dialeval launch`, node router), for headless Chromium (browser_page.py) or a client of our own; the steps a
participant takes on the live tasks' pages.
"""
from __future__ import annotations

import concurrent.futures
import contextlib
import json
import os
import re
import signal
import subprocess
import threading
import time
import uuid
from pathlib import Path

import psutil

from parlai_dialeval.crowdsourcing.platform.env import database_path, prepare_mephisto

from .zygote import DIALEVAL, dialeval_run, zygote


class MockRun:
    def __init__(self, task: str, data_dir: Path, port: int, overrides: list[str] | None = None):
        data_dir = prepare_mephisto(data_dir)
        from mephisto.abstractions.databases.local_database import LocalMephistoDB
        from mephisto.operations.operator import Operator
        from mephisto.tools.scripts import augment_config_from_db

        from parlai_dialeval.crowdsourcing.platform.config import compose
        from parlai_dialeval.crowdsourcing.platform.registry import get_task

        self.spec = get_task(task)
        self.db = LocalMephistoDB(database_path=str(database_path(data_dir)))
        cfg = compose(self.spec, ["mephisto/architect=mock", f"mephisto.architect.port={port}",
                                  "mephisto.architect.should_run_server=true", *(overrides or [])])
        self.config = augment_config_from_db(cfg, self.db)
        self.operator = Operator(self.db)
        self.operator.launch_task_run(self.config.mephisto, shared_state=self.spec.shared_state(self.config))
        self._hold_live_run()

    def _hold_live_run(self) -> None:
        """The operator's running task run and its mock server, every packet written on the server's loop; what
        every way of starting a run (this one, runner.start's) must do before a worker sends anything."""
        self.live_run = list(self.operator.get_running_task_runs().values())[0]
        self.server = self.live_run.architect.server
        writes_on_the_server_loop(self.server)
        self._count_handled_packets()
        self._record_agent_details()

    def _count_handled_packets(self) -> None:
        """Count the packets Mephisto's ClientIOHandler has handled (on its loop), for ``settle`` to match against
        the packets the mock server wrote."""
        client_io, self.handled = self.live_run.client_io, 0
        handle = client_io._on_message

        def counted(packet, channel_id):
            try:
                return handle(packet, channel_id)
            finally:
                self.handled += 1

        client_io._on_message = counted

    def wait(self, condition, timeout: float = 10.0, what: str = "condition") -> None:
        assert self.operator._run_loop_until(condition, timeout), f"timed out waiting for {what}"

    def settle(self) -> None:
        """Until Mephisto has handled every packet the mock server wrote, and answered every registration. It
        handles them only while a wait runs the operator's loop: a sleep, then a wait for the registrations alone,
        returned with the packet unread."""
        self.wait(lambda: self.handled >= self.server.packets_written
                  and not self.live_run.client_io.request_id_to_channel_id, 30, "Mephisto to handle the packets sent")

    def register(self, worker: str, registration: str) -> None:
        self.server.register_mock_agent(worker, registration)
        self.settle()

    def onboarding_agent(self, worker: str):
        name = f"{worker}_sandbox"
        self.wait(lambda: any(a.get_worker().worker_name == name for a in self.db.find_onboarding_agents()),
                  what=f"onboarding agent of {worker}")
        return [a for a in self.db.find_onboarding_agents() if a.get_worker().worker_name == name][-1]

    def unit_agent(self, worker: str):
        name = f"{worker}_sandbox"
        self.wait(lambda: any(a.get_worker().worker_name == name for a in self.db.find_agents()),
                  what=f"unit agent of {worker}")
        return [a for a in self.db.find_agents() if a.get_worker().worker_name == name][-1]

    def _record_agent_details(self) -> None:
        """Keep every agent-details payload Mephisto queues for a worker's browser (the router forwards
        them as they are: the init data of units and onboarding included)."""
        client_io = self.live_run.client_io
        send = client_io.enqueue_agent_details

        def record(request_id, details):
            self.sent_details.append(details)
            return send(request_id, details)

        self.sent_details: list[dict] = []
        client_io.enqueue_agent_details = record

    def sent_init_data(self) -> list:
        """The ``init_task_data`` of every agent-details payload sent towards browsers so far."""
        return [d["init_task_data"] for d in self.sent_details if d.get("init_task_data") is not None]

    def live_agent(self, agent):
        """The operator's own copy of an agent: a copy read from the database keeps a stale state."""
        return self.live_run.worker_pool.get_agent_for_id(agent.get_agent_id()) or agent

    def unit_inputs(self, agent) -> dict:
        """The data Mephisto set for ``agent``'s page (a unit's or an onboarding's). The agent is in the
        database a moment before the worker pool holds it, and held a moment before its data is set."""
        def inputs():
            held = self.live_run.worker_pool.get_agent_for_id(agent.get_agent_id())
            return None if held is None else held.state.get_data().get("inputs")
        self.wait(lambda: inputs() is not None, what=f"the data of agent {agent.get_agent_id()}")
        return inputs()

    def submit(self, agent, data: dict) -> None:
        """The worker's page submits ``data``; returns once the database holds the agent as submitted (with
        only the channel's requests settled, an export under load still read the unit as in progress)."""
        from parlai_dialeval.crowdsourcing.platform.export import FINISHED

        self.server.submit_mock_unit(agent.get_agent_id(), data)
        self.settle()
        self.wait(lambda: self.db.get_agent(agent.get_agent_id())["status"] in FINISHED, 30,
                  f"agent {agent.get_agent_id()} submitted")

    def last_task_data(self, agent, after: int = 0, key: str = "phase") -> dict:
        """The latest task_data carrying ``key`` that the world sent to ``agent`` (waits for one newer than
        message number ``after``)."""
        def found():
            messages = self.live_agent(agent).state.get_data()["outputs"]["messages"]
            return [m for m in messages[after:] if key in (m.get("task_data") or {})]
        self.wait(lambda: bool(found()), what=f"task_data with {key}")
        return found()[-1]["task_data"]

    def world_data(self, agent) -> dict:
        """What the world's ``prep_save_data`` sent to the worker's page when the episode ended."""
        def found():
            messages = self.live_agent(agent).state.get_data()["outputs"]["messages"]
            return [m["WORLD_DATA"] for m in messages if "WORLD_DATA" in m]
        self.wait(lambda: bool(found()), what="WORLD_DATA")
        return found()[-1]

    def message_count(self, agent) -> int:
        return len(self.live_agent(agent).state.get_data()["outputs"]["messages"])

    def act(self, agent, task_data: dict, text: str = "") -> None:
        """The worker's page sends an act, with an update id as every page's act has (Mephisto's frontend adds one)."""
        self.server.send_agent_act(agent.get_agent_id(), {"text": text, "task_data": task_data, "id": "worker",
                                                          "episode_done": False, "update_id": str(uuid.uuid4())})
        self.settle()

    def shutdown(self) -> None:
        try:
            # channels first, as LaunchedTask.shutdown does: force_shutdown stops the mock server before it
            # closes them, and each channel's close then waits on a server that is gone (5 s, force_shutdown's cap)
            self.live_run.client_io.shutdown()
            self.operator.force_shutdown(timeout=5)
        finally:
            self.server.shutdown_mock()


def writes_on_the_server_loop(server) -> None:
    """Every packet of Mephisto's MockServer written on its IOLoop thread. MockServer writes to tornado's socket
    from the caller's thread, which tornado does not support, and retries a write that raised even where its frame
    went out: loaded runs stored one act three times (test_resume.py) and delivered one registration twice, two
    workers made at once and one failing (test_acute_mock.py)."""
    from tornado.ioloop import IOLoop

    loop = server.running_instance
    if not hasattr(server, "packets_written"):
        server.packets_written = 0  # what MockRun.settle waits for Mephisto to have handled

    def write(text: str, done: concurrent.futures.Future) -> None:
        try:
            server._get_sub().write_message(text)
            server.packets_written += 1
            done.set_result(None)
        except Exception as error:  # handed to the sending thread
            done.set_exception(error)

    def send(message: dict) -> None:
        end = time.monotonic() + 10
        while not server.subs and time.monotonic() < end:  # Mephisto's channel still connecting
            time.sleep(0.05)
        done = concurrent.futures.Future()
        if IOLoop.current(instance=False) is loop:
            write(json.dumps(message), done)
        else:
            loop.add_callback(write, json.dumps(message), done)
        done.result(timeout=10)

    server._send_message = send


class WriteThreads:
    """The thread of every packet ``server`` writes to its socket from now on, and the thread of its IOLoop:
    the check that a way of starting a run went through ``writes_on_the_server_loop``."""

    def __init__(self, server):
        loop_thread = concurrent.futures.Future()
        server.running_instance.add_callback(lambda: loop_thread.set_result(threading.get_ident()))
        socket, self.writes = server._get_sub(), []
        write = socket.write_message

        def watched(*args, **kwargs):
            self.writes.append(threading.get_ident())
            return write(*args, **kwargs)

        socket.write_message = watched
        self.loop = loop_thread.result(timeout=10)

    def off_the_loop(self) -> int:
        return sum(ident != self.loop for ident in self.writes)


def assert_blind(payload, model_names) -> None:
    """Nothing the worker's browser receives may name a model (blind evaluation)."""
    text = json.dumps(payload)
    leaked = sorted(name for name in model_names if name in text)
    assert not leaked, f"model names {leaked} reach the worker's browser: {text[:500]}"


# ---------------------------------------------------------------- real-browser runs
class CliRun:
    """`dialeval launch TASK ...` in its own process group (LocalArchitect + node router + MockProvider): a fork
    of this test process's pre-imported zygote (tests/crowdsourcing/zygote.py), or with ``real_process`` (tests
    of start-up, signals and crashes) a process of its own.

    ``command``, ``env`` and ``cwd`` start another installation's dialeval (tests/test_packaging.py), always as a
    real process; ``own_data=False`` leaves out --mephisto-data, so the launch uses its default data folder."""

    _router: psutil.Process | None = None  # the node router the launch printed (``router_pid``)

    def __init__(self, task: str, tmp_path: Path, overrides: list[str], data_dir: Path | None = None, *,
                 command: list[str] = DIALEVAL, env: dict | None = None, cwd: Path | None = None,
                 own_data: bool = True, real_process: bool = False):
        self.tmp_path, self.data_dir = tmp_path, data_dir or tmp_path / "mephisto"
        self.relaunch_args = (task, overrides, dict(command=command, env=env, cwd=cwd, own_data=own_data,
                                                    real_process=real_process))
        tmp_path.mkdir(parents=True, exist_ok=True)
        self.log_path = tmp_path / "launch.log"
        data = ["--mephisto-data", str(self.data_dir)] if own_data else []
        self.proc = start_in_session(["launch", task, *overrides, *data], self.log_path, command=command, env=env,
                                     cwd=cwd, real_process=real_process)
        self.url, self.router_pid, end = None, None, time.time() + 180
        while time.time() < end and (self.url is None or self.router_pid is None):
            text = self.log()
            self.url = self.url or (re.search(r"Open (http://\S+) in your browser", text) or [None, None])[1]
            pid = re.search(r"Server running locally with pid (\d+)", text)
            self.router_pid = self.router_pid or (int(pid[1]) if pid else None)
            if self.proc.poll() is not None:
                break
            time.sleep(0.5)
        if self.url is None:
            self.stop()
            raise AssertionError("launch printed no worker URL:\n" + self.log_path.read_text()[-3000:])

    def worker_url(self, worker: str) -> str:
        return re.sub(r"worker_id=[^&]+", f"worker_id={worker}", self.url)

    def log(self) -> str:
        """What the launch printed in the terminal, then its log file's lines (Mephisto's, the router's: the
        file its first line names, platform/launch_log.py)."""
        text = self.log_path.read_text()
        named = re.search(r"messages go to (\S+\.log)", text)
        return text + (Path(named[1]).read_text(errors="replace") if named and Path(named[1]).is_file() else "")

    def terminal(self) -> str:
        return self.log_path.read_text()

    def export(self, task_name: str, out: Path) -> subprocess.CompletedProcess:
        return dialeval("export", task_name, "--out", str(out), "--mephisto-data", str(self.data_dir))

    def crash(self) -> None:
        """kill -9 of the whole server side, as when it dies: the launch's process group and its node router
        (in a group of its own, it would outlive the launch and keep the port)."""
        os.killpg(self.proc.pid, signal.SIGKILL)
        self.proc.wait(30)
        self.signal_router(signal.SIGKILL)

    def freeze(self, frozen: bool, router: bool = True) -> None:
        """SIGSTOP (or SIGCONT) for the whole server side: while frozen it confirms nothing more, so a test
        can see which messages are still unconfirmed when it kills it. ``router=False``: the launch alone, its
        router still answering pages (a server that stopped answering behind a live router)."""
        os.killpg(self.proc.pid, signal.SIGSTOP if frozen else signal.SIGCONT)
        if router:
            self.signal_router(signal.SIGSTOP if frozen else signal.SIGCONT)

    def relaunch(self) -> "CliRun":
        """The same `dialeval launch` again on the same data (after ``crash``): it resumes the crashed run
        (crowdsourcing/platform/resume.py). The crashed launch's log is kept as launch_crashed_N.log."""
        kept = len(list(self.tmp_path.glob("launch_crashed_*.log")))
        self.log_path.rename(self.tmp_path / f"launch_crashed_{kept}.log")
        task, overrides, options = self.relaunch_args
        return CliRun(task, self.tmp_path, overrides, self.data_dir, **options)

    def stop(self) -> None:
        """Ctrl-C twice (the first one waits for units in flight, the second stops at once)."""
        for _ in range(2):
            if self.proc.poll() is None:
                with contextlib.suppress(ProcessLookupError):  # it ended by itself meanwhile (its last unit done)
                    os.killpg(self.proc.pid, signal.SIGINT)
                with contextlib.suppress(subprocess.TimeoutExpired):
                    self.proc.wait(2)
        try:
            self.proc.wait(30)
        except subprocess.TimeoutExpired:
            os.killpg(self.proc.pid, signal.SIGKILL)
        self.signal_router(signal.SIGTERM)  # in a process group of its own, it outlives a killed launch

    @property
    def router_pid(self) -> int | None:
        return self._router.pid if self._router else None

    @router_pid.setter
    def router_pid(self, pid: int | None) -> None:
        # psutil keeps the process's start time, so a signal is never sent to another process given the pid after
        # the router ended (a launch stops its router; pids wrap at 32,768 on CI-sized VMs, and a suite starts
        # thousands of processes and threads)
        self._router = None
        if pid:
            with contextlib.suppress(psutil.NoSuchProcess):
                self._router = psutil.Process(pid)

    def signal_router(self, sig: int) -> None:
        """``sig`` to the run's node router, if that process still runs."""
        if self._router:
            with contextlib.suppress(psutil.NoSuchProcess):
                self._router.send_signal(sig)


def start_in_session(args: list[str], log_path: Path, *, command: list[str] = DIALEVAL, env: dict | None = None,
                     cwd: Path | None = None, real_process: bool = False):
    """`dialeval ARGS` in a process group of its own, printing into ``log_path``: a fork of this test process's
    zygote (its imports done: 3 s of CPU less a command), else (``real_process``, another installation's
    ``command``, an ``env`` or ``cwd`` of its own) a process of its own. Returns what ``poll``/``wait``/``pid``."""
    forker = None if real_process or command is not DIALEVAL or env or cwd else zygote()
    with open(log_path, "w") as log, open(os.devnull) as stdin:
        if forker:
            return forker.start(args, stdin.fileno(), log.fileno(), log.fileno(), new_session=True)
        return subprocess.Popen(command + args, stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
                                env=env, cwd=cwd)


def dialeval(*args: str, timeout: float = 240) -> subprocess.CompletedProcess:
    """`dialeval ARGS` to its end, forked from the zygote (a real process where DIALEVAL_TEST_ZYGOTE=0)."""
    done = dialeval_run(list(args), timeout)
    assert done.returncode == 0, f"dialeval {' '.join(args)} failed:\n{done.stdout[-2000:]}\n{done.stderr[-3000:]}"
    return done


def set_slider(slider, value) -> None:
    """Move a range input as a person's drag would: React listens to the native value setter + input event
    (Playwright's fill() on a range input is not portable)."""
    slider.evaluate("""(el, v) => {
        const setter = Object.getOwnPropertyDescriptor(HTMLInputElement.prototype, 'value').set;
        setter.call(el, String(v));
        el.dispatchEvent(new Event('input', {bubbles: true}));
        el.dispatchEvent(new Event('change', {bubbles: true}));
    }""", value)


def start_live_chat(page, topic: str = "gardening", timeout: float = 60000) -> None:
    """A live-chat slot's topic form, once it shows within ``timeout`` ms: ``topic``, liked, Start."""
    from playwright.sync_api import TimeoutError as PlaywrightTimeout

    try:
        page.wait_for_selector("[data-testid=topic-form]", timeout=timeout)
    except PlaywrightTimeout:  # what the participant saw instead, for the failure's message
        raise AssertionError(f"no topic form within {timeout / 1000:.0f} s; the page said: "
                             f"{page.inner_text('body')[-1500:]!r}") from None
    page.fill("#topic-input", topic)
    page.check("#attitude-like")
    page.click("[data-testid=start-chat]")
    page.wait_for_selector("[data-testid=chat-panel]")


def live_chat_conversation(page, messages: list[str], rating: int, topic: str = "gardening") -> None:
    """One live-chat slot in the worker's page: topic, the messages (each answered), every statement
    rated ``rating`` (not the sliders' starting 50, which the page does not count as moved)."""
    start_live_chat(page, topic)
    for text in messages:
        before = page.locator(".dialeval-msg-other").count()
        page.fill(".response-text-input", text)
        page.click(".submit-response")
        page.wait_for_function(f"document.querySelectorAll('.dialeval-msg-other').length > {before}", timeout=30000)
    rate_this_chatbot(page, rating)


def rate_this_chatbot(page, rating: int) -> None:
    """'Next chatbot', then every statement of the rating form at ``rating``, then its Next."""
    page.click("[data-testid=next-chatbot]")
    page.wait_for_selector("[data-testid=rating-form]")
    sliders = page.locator("[data-testid=rating-form] input[type=range]")
    for k in range(sliders.count()):
        set_slider(sliders.nth(k), rating)
    page.click("[data-testid=submit-ratings]")


def pause(page, seconds: float) -> None:
    """A person reading or thinking: the page keeps running (heartbeats, incoming messages) meanwhile."""
    page.wait_for_timeout(int(seconds * 1000))


def assert_still_active(page) -> None:
    """Mephisto has not ended the worker (its "timed out" / "disconnected" screens)."""
    inactive = page.locator("[data-testid=inactive]")
    assert inactive.count() == 0, inactive.inner_text()


def rate_partner_and_submit(page, ratings: dict, think: float = 0) -> None:
    """SM-Dialog's end of a HIT in the worker's page: each Likert rating (criterion -> value) after ``think``
    seconds, then the final Submit."""
    for criterion, value in ratings.items():
        pause(page, think)
        page.check(f"[data-testid=likert-{criterion}-{value}]")
    page.click("[data-testid=submit-ratings]")
    submit_hit(page)


def submit_hit(page) -> None:
    """Press the live tasks' final Submit (the mock provider's alert is accepted) as a worker still in the task."""
    page.click("[data-testid=submit-hit]", timeout=60000)
    pause(page, 1.5)
    assert_still_active(page)

