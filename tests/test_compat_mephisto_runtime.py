"""The patches of Mephisto at run time (parlai_dialeval/compat/mephisto*.py): the unit launcher, the run tracker's
pace, a forced shutdown, state files written whole, chat agents' state beside their messages, closed channels. Each
is checked on Mephisto as installed, and refuses a copy changed the way a release could change it."""
from __future__ import annotations

import json
import sys
import threading
import time

import pytest

from parlai_dialeval.compat import mephisto as compat_mephisto
from parlai_dialeval.compat import mephisto_threads
from parlai_dialeval.compat import parlai as compat_parlai
from parlai_dialeval.compat.patching import CompatError, is_ours
from upstream_copies import load_copy


# ------------------------------------------------------------------ functions replaced at run time
def test_downloads_are_refused_on_a_copy_and_restored_after(tmp_path):
    build_data = load_copy("parlai.core.build_data", tmp_path)
    originals = build_data.download, build_data.built, build_data.DownloadableFile.download_file
    with compat_parlai.downloads_refused(build_data):
        assert is_ours(build_data.download) and is_ours(build_data.DownloadableFile.download_file)
        with pytest.raises(compat_parlai.WouldDownload):
            build_data.download("http://example.org/x.tgz", str(tmp_path), "x.tgz")
        with pytest.raises(compat_parlai.WouldDownload):
            build_data.built(str(tmp_path / "never_built"))
    assert (build_data.download, build_data.built, build_data.DownloadableFile.download_file) == originals


def test_downloads_refused_fails_on_a_copy_without_the_function(tmp_path):
    # an upstream rename: the refusal would leave the renamed function free to download
    build_data = load_copy("parlai.core.build_data", tmp_path,
                           lambda text: text.replace("def download_from_google_drive(", "def download_gdrive("))
    download = build_data.download
    with pytest.raises(CompatError, match="has no download_from_google_drive"):
        with compat_parlai.downloads_refused(build_data):
            pass
    assert build_data.download is download  # nothing left half-patched


def test_the_help_fix_takes_effect_on_a_copy_and_refuses_a_changed_one(tmp_path):
    params = load_copy("parlai.core.params", tmp_path)
    compat_parlai.let_help_skip_required_options(params.ParlaiParser)
    assert is_ours(params.ParlaiParser.parse_known_args) and is_ours(params.ParlaiParser.error)
    parser = params.ParlaiParser(False, False)
    parser.add_argument("--data", required=True)
    assert parser.parse_known_args([], nohelp=True)[0].data is None  # the discovery pass lets it go
    with pytest.raises(SystemExit):
        parser.parse_args([])  # the real pass still checks
    changed = load_copy("parlai.core.params", tmp_path, lambda text: text.replace(
        "def parse_known_args(self, args=None, namespace=None, nohelp=False):",
        "def parse_known_args(self, args=None, namespace=None, discover=False):"))
    with pytest.raises(CompatError, match="no nohelp parameter"):
        compat_parlai.let_help_skip_required_options(changed.ParlaiParser)


def test_the_safe_unit_launcher_is_scoped_to_the_block_and_checked(tmp_path):
    from mephisto.operations import operator, task_launcher

    mephisto_generate_units = task_launcher.TaskLauncher.generate_units
    with mephisto_threads.safe_unit_launching():
        safe = operator.TaskLauncher
        assert issubclass(safe, task_launcher.TaskLauncher) and is_ours(safe.generate_units)
        assert task_launcher.TaskLauncher.generate_units is mephisto_generate_units  # Mephisto's class untouched
    assert operator.TaskLauncher is task_launcher.TaskLauncher
    mephisto_threads.require_safe_launcher(object.__new__(safe))
    with pytest.raises(CompatError, match="did not take effect"):
        mephisto_threads.require_safe_launcher(object.__new__(task_launcher.TaskLauncher))
    # an operator that no longer calls the class by its module-global name would not see the swap
    changed = load_copy("mephisto.operations.operator", tmp_path, lambda text: text.replace(
        "launcher = TaskLauncher(", "launcher = task_launcher_class("))
    with pytest.raises(CompatError, match="no longer calls 'launcher = TaskLauncher\\('"):
        with mephisto_threads.safe_unit_launching(changed):
            pass


def seconds_to_stop(tmp_path, before=lambda operator: None) -> float:
    """How long ``force_shutdown`` of an operator in the launch's environment (every patch of prepare_mephisto)
    takes, after ``before(operator)``."""
    import time

    from parlai_dialeval.crowdsourcing.platform.env import prepare_mephisto

    data_dir = prepare_mephisto(tmp_path / "mephisto")
    from mephisto.abstractions.databases.local_database import LocalMephistoDB
    from mephisto.operations.operator import Operator

    operator = Operator(LocalMephistoDB(database_path=str(data_dir / "database.db")))
    before(operator)
    start = time.monotonic()
    operator.force_shutdown(timeout=5)
    return time.monotonic() - start


@pytest.mark.parametrize("units, seconds", [(0, 1.0), (20, 1.0), (60, 3.0), (200, 10.0), (5000, 10.0)])
def test_the_run_tracker_looks_less_often_at_a_larger_run(units, seconds):
    """A look reads every assignment's status (228 ms for 200 units with SQLite): 1 s between looks up to 20
    units, one more second per 20 units, and never longer than Mephisto's own 10 s."""
    from mephisto.operations import operator

    try:
        compat_mephisto.prompt_run_tracking(units=units)
        assert operator.RUN_STATUS_POLL_TIME == seconds
    finally:
        compat_mephisto.prompt_run_tracking()


# (patch, upstream module, a change an upstream release could make, what the refusal says, its target afterwards)
PACE_PATCHES = [
    ("prompt_run_tracking", "mephisto.operations.operator",
     ("await asyncio.sleep(RUN_STATUS_POLL_TIME)\n            if self._using_prometheus",
      "await asyncio.sleep(self.poll_time)\n            if self._using_prometheus"),
     "prompt_run_tracking: .*no longer calls 'asyncio.sleep", lambda m: m.RUN_STATUS_POLL_TIME == 10),
    ("prompt_unit_launching", "mephisto.operations.task_launcher",
     ("time.sleep(UNIT_GENERATOR_WAIT_SECONDS)", "self.wake.wait(UNIT_GENERATOR_WAIT_SECONDS)"),
     "prompt_unit_launching: .*no longer calls 'time.sleep", lambda m: m.UNIT_GENERATOR_WAIT_SECONDS == 10),
    ("joined_force_shutdown", "mephisto.operations.operator",
     ("time.sleep(0.5)\n            if not shutdown_thread.is_alive():",
      "time.sleep(0.1)\n            if not shutdown_thread.is_alive():"),
     "joined_force_shutdown: Operator.force_shutdown is not the code the patch copied",
     lambda m: not is_ours(m.Operator.force_shutdown)),
]


@pytest.mark.parametrize("patch, module, change, refusal, untouched", PACE_PATCHES, ids=[p[0] for p in PACE_PATCHES])
def test_a_pace_patch_refuses_a_changed_copy_and_leaves_it_alone(tmp_path, patch, module, change, refusal, untouched):
    changed = load_copy(module, tmp_path, lambda text: text.replace(*change))
    with pytest.raises(CompatError, match=refusal):
        getattr(compat_mephisto, patch)(changed)
    assert untouched(changed)  # nothing set on a module the patch refused


def test_a_stopped_operator_does_not_wait_out_the_run_trackers_ten_second_sleep(tmp_path):
    """prompt_run_tracking: Mephisto's tracker sleeps 10 s between looks at its runs and force_shutdown awaits
    it, so every launch's end (by itself or Ctrl-C) took up to 10 s more; patched, the sleep is 1 s."""
    # the tracker has looked once and sleeps, as in a live run; unpatched the stop took 9.7 s (the rest of its sleep)
    assert seconds_to_stop(tmp_path, lambda operator: operator._run_loop_until(lambda: False, 0.3)) < 5


def test_a_force_shutdown_takes_what_its_steps_take(tmp_path, monkeypatch):
    """joined_force_shutdown: Mephisto's force_shutdown slept 0.5 s whenever one of its three steps' threads was still
    alive at its first look, so a stop whose steps take 50 ms each took at least 1.5 s (every launch's and test run's
    stop paid about that). Checked by its sleeps, which no load on the machine changes, and then by its time against
    that 1.5 s."""
    import time
    from types import SimpleNamespace

    slept, real_sleep = [], time.sleep

    def sleep(seconds):
        if sys._getframe(1).f_code.co_name == "force_shutdown":  # Mephisto's looks, in force_shutdown's own body
            slept.append(seconds)
        real_sleep(seconds)

    monkeypatch.setattr(time, "sleep", sleep)

    def step():
        real_sleep(0.05)

    def track_a_run(operator):  # what force_shutdown's steps stop, 50 ms each
        operator._task_runs_tracked["run"] = SimpleNamespace(
            task_launcher=SimpleNamespace(shutdown=step, expire_units=step), architect=SimpleNamespace(shutdown=step),
            shutdown=step)

    seconds = seconds_to_stop(tmp_path, track_a_run)
    assert slept == [] and seconds < 1.5, (slept, seconds)


def test_state_writes_replace_the_file_with_the_whole_dict(tmp_path):
    """Mephisto's write_dict, patched (atomic_state_writes: renamed into place, encoded by json.dumps): the
    file read back by the standard library is the dict, non-ASCII text included, and no part file is left."""
    import json

    from parlai_dialeval.crowdsourcing.platform.env import prepare_mephisto

    data_dir = prepare_mephisto(tmp_path / "mephisto")
    from mephisto.abstractions.databases.local_database import LocalMephistoDB

    db = LocalMephistoDB(database_path=str(data_dir / "database.db"))
    target = data_dir / "data" / "agent" / "agent_data.json"
    state = {"messages": [{"text": "héllo ✓", "task_data": {"n": [1, 2.5, None, True]}}] * 30}
    target.parent.mkdir(parents=True)
    target.write_text('{"messages": ["an older, longer state that must not show through"]}' * 100)
    db.write_dict(str(target), state)
    assert is_ours(LocalMephistoDB.write_dict)
    assert json.loads(target.read_text()) == state
    assert [p.name for p in target.parent.iterdir()] == ["agent_data.json"]


def test_state_writes_leave_a_file_holding_the_same_small_text_alone(tmp_path):
    """Mephisto rewrites an agent's metadata with its state after every message, unchanged: the patched
    write_dict leaves a file that already holds that text alone (the same inode: no new file renamed in), and
    writes it when the text changes; a large state (an agent's messages) is always written whole."""
    from mephisto.abstractions.databases.local_database import LocalMephistoDB

    from parlai_dialeval.compat.mephisto_threads import SMALL_STATE_CHARS
    from parlai_dialeval.crowdsourcing.platform.env import prepare_mephisto

    data_dir = prepare_mephisto(tmp_path / "mephisto")
    db = LocalMephistoDB(database_path=str(data_dir / "database.db"))
    meta, state = data_dir / "data" / "agent" / "agent_meta.json", data_dir / "data" / "agent" / "agent_data.json"

    def inode_after(path, data):
        db.write_dict(str(path), data)
        return path.stat().st_ino

    first = inode_after(meta, {"task_start": 1.5, "task_end": None})
    assert inode_after(meta, {"task_start": 1.5, "task_end": None}) == first
    assert inode_after(meta, {"task_start": 1.5, "task_end": 9.0}) != first
    assert json.loads(meta.read_text()) == {"task_start": 1.5, "task_end": 9.0}
    big = {"messages": ["x" * SMALL_STATE_CHARS]}
    assert inode_after(state, big) != inode_after(state, big)


class ChatAgentStub:
    """What a ParlAI-chat agent state uses of its agent: the database and the agent's data folder."""

    def __init__(self, db, folder):
        self.db, self.folder = db, folder

    def get_data_dir(self) -> str:
        return str(self.folder)


def chat_state(tmp_path, name: str):
    from mephisto.abstractions.blueprints.parlai_chat.parlai_chat_agent_state import ParlAIChatAgentState
    from mephisto.abstractions.databases.local_database import LocalMephistoDB

    from parlai_dialeval.crowdsourcing.platform.env import prepare_mephisto

    data_dir = prepare_mephisto(tmp_path / "mephisto")
    agent = ChatAgentStub(LocalMephistoDB(database_path=str(data_dir / "database.db")), data_dir / "data" / name)
    return agent, ParlAIChatAgentState(agent)


def stored_messages(agent) -> list[str]:
    path = agent.folder / "state.json"
    return [m["text"] for m in json.loads(path.read_text())["outputs"]["messages"]] if path.exists() else []


def test_a_chat_agents_state_is_written_beside_the_messages_path_not_in_it(tmp_path, monkeypatch):
    """chat_states_written_behind: Mephisto's update_data (a participant's act, a reply observed) keeps the
    message and returns without writing; flush_chat_states writes every state due, whole; a final submission
    (update_submit) is written at once, messages and all, and a later flush does not put an older state back."""
    agent, state = chat_state(tmp_path, "a1")
    monkeypatch.setattr(mephisto_threads, "STATES_BEHIND", mephisto_threads._StatesBehind(3600))
    state.update_data({"text": "hello"})
    state.update_data({"text": "the reply"})
    assert stored_messages(agent) == [] and [m["text"] for m in state.messages] == ["hello", "the reply"]
    mephisto_threads.flush_chat_states()
    assert stored_messages(agent) == ["hello", "the reply"]
    state.update_data({"text": "bye"})
    state.update_submit({"rating": 5})
    mephisto_threads.flush_chat_states()
    saved = json.loads((agent.folder / "state.json").read_text())
    assert stored_messages(agent) == ["hello", "the reply", "bye"] and saved["outputs"]["final_submission"] == {
        "rating": 5}
    assert json.loads((agent.folder / "agent_meta.json").read_text())["task_end"] is not None


def test_a_chat_agents_state_reaches_its_file_within_the_interval_of_its_own(tmp_path):
    """Without any flush: the writer thread writes a state within STATE_WRITE_SECONDS of its last message,
    also after its agent is gone (a finished unit's; the state holds it weakly)."""
    import gc

    agent, state = chat_state(tmp_path, "a2")
    folder = agent.folder
    state.update_data({"text": "written by the writer thread"})
    del agent
    gc.collect()
    deadline = time.monotonic() + 10 * mephisto_threads.STATE_WRITE_SECONDS
    while not (folder / "state.json").exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert [m["text"] for m in json.loads((folder / "state.json").read_text())["outputs"]["messages"]] == [
        "written by the writer thread"]


class RecordingChannel:
    """A channel that keeps what is sent to it and counts its closes; a close takes a moment, as a websocket
    channel's does (it joins its socket thread), so that two stops overlap."""

    def __init__(self):
        self.sent, self.closes = [], 0

    def enqueue_send(self, packet) -> bool:
        self.sent.append(packet)
        return True

    def close(self) -> None:
        time.sleep(0.05)
        self.closes += 1


def bare_client_io(channels: dict, agents: dict):
    from queue import Queue

    from mephisto.operations.client_io_handler import ClientIOHandler

    handler = ClientIOHandler.__new__(ClientIOHandler)
    handler.channels, handler.agent_id_to_channel_id = dict(channels), dict(agents)
    handler.message_queue, handler.is_shutdown, handler._status_task = Queue(), False, None
    return handler


def test_the_launch_environment_tolerates_closed_channels_in_a_fresh_process(tmp_path):
    """The launch's environment applies the patch (it was first applied only by compat.check)."""
    import subprocess

    code = ("import sys; from parlai_dialeval.crowdsourcing.platform.env import prepare_mephisto; "
            "prepare_mephisto(sys.argv[1]); from mephisto.operations.client_io_handler import ClientIOHandler as C; "
            "from parlai_dialeval.compat.patching import is_ours; "
            "print([is_ours(getattr(C, n)) for n in ('shutdown', 'send_status_update', 'send_live_update', "
            "'_request_status_update')])")
    fresh = subprocess.run([sys.executable, "-c", code, str(tmp_path / "fresh")], capture_output=True, text=True,
                           timeout=120)
    assert fresh.stdout.strip().endswith("[True, True, True, True]"), fresh.stdout[-500:] + fresh.stderr[-2000:]


def test_two_stops_at_once_close_each_channel_once_and_raise_nothing(tmp_path):
    """The run tracker (a finished run) and the launch's own stop both call ``ClientIOHandler.shutdown``: each
    listed the channels, closed them and deleted them, and the second ``del self.channels[...]`` raised KeyError
    (a killed adaptive launch, 2026-11-27, under two suites at once). Without the patch this test raises it
    every time: both stops are inside the first channel's close together."""
    from parlai_dialeval.crowdsourcing.platform.env import prepare_mephisto

    prepare_mephisto(tmp_path / "mephisto")
    channels = {"c1": RecordingChannel(), "c2": RecordingChannel()}
    handler = bare_client_io(channels, {})
    errors = []

    def stop():
        try:
            handler.shutdown()
        except Exception as error:  # what a stop's thread would have logged
            errors.append(repr(error))

    stops = [threading.Thread(target=stop) for _ in range(2)]
    for thread in stops:
        thread.start()
    for thread in stops:
        thread.join(10)
    assert errors == []
    assert [channel.closes for channel in channels.values()] == [1, 1]
    assert handler.channels == {} and handler.is_shutdown


def test_updates_for_an_agent_whose_channel_closed_are_dropped_and_the_open_ones_still_go(tmp_path):
    """At a stop the launch closes its channels, then Mephisto marks agents still at work disconnected and
    pushes that status, and a world may still send its last message (``Agent.observe`` stores it, then sends
    it): ``self.channels[...]`` raised KeyError, into the launch's log (test_tiny_ramp_loses_nothing counts
    them; it failed once on 2026-11-27) or into the world's thread. An open channel still gets both, and the
    status ping goes on when a channel closes under it."""
    from parlai_dialeval.crowdsourcing.platform.env import prepare_mephisto

    prepare_mephisto(tmp_path / "mephisto")
    open_channel = RecordingChannel()
    handler = bare_client_io({"c1": open_channel}, {"open_agent": "c1", "closed_agent": "c2"})
    handler.send_status_update("closed_agent", "disconnect")  # raised KeyError: 'c2'
    handler.send_live_update("closed_agent", {"text": "bye"})  # raised KeyError: 'c2'
    handler.send_status_update("open_agent", "in task")
    handler.send_live_update("open_agent", {"text": "hello"})
    assert [(p.type, p.data) for p in open_channel.sent] == [
        ("update_status", {"status": "in task"}), ("client_bound_live_update", {"text": "hello"})]

    pinged = bare_client_io({"c1": RecordingChannel(), "c2": RecordingChannel()}, {})
    first = pinged.channels["c1"]
    first.enqueue_send = lambda packet: pinged.channels.pop("c2")  # a stop closes c2 while c1 is pinged
    pinged._request_status_update()  # iterated the live dict: "dictionary changed size during iteration"
    assert list(pinged.channels) == ["c1"]
