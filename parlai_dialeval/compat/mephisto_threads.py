"""The changes this project makes to Mephisto 1.1.1 where several threads meet: the participants' sockets, the
world's thread, the run tracker, a stop and the unit launcher reach the same state at once (the rest of Mephisto's
patches: ``compat/mephisto.py``). Each checks the installed version first and that it took effect after.

- ``closed_channels_tolerated``: ``ClientIOHandler``'s channels close once, one stop at a time (two stops at
  once raised KeyError in ``shutdown``); a status or live update for an agent whose channel is closed is dropped
  instead of raising KeyError; the status ping iterates over a copy of the channels. Retire when Mephisto
  guards its channel table.
- ``safe_unit_launching``: a copied, fixed ``TaskLauncher.generate_units`` for the length of one launch
  call. Retire when ``generate_units`` iterates over a copy of ``unlaunched_units`` upstream.
- ``atomic_state_writes``: ``LocalMephistoDB.write_dict`` (every agent's state, after each message)
  replaces its file instead of rewriting it in place: two threads writing one agent's state at once (the
  world's and the socket's) left a file of two interleaved dumps, unreadable, in 7 units of 200 under
  load (benchmarks/bench_load.py), and encodes it with ``json.dumps`` (the C encoder; ``json.dump`` to a
  file runs the pure-Python one: at 500 participants a third of the server's interpreter time went to
  these encodings, docs/scaling.md), and does not rewrite a file with the text it holds (the agent's
  metadata, rewritten unchanged after every message). Retire when Mephisto writes its files atomically.
- ``chat_states_written_behind``: a chat agent's state file written by one thread within half a second of
  a message, not in the message's path. Retire when Mephisto keeps state writes out of a message's path.

The arrival checks (a provider vetting who gets a place, in threads of their own) are in
``compat/mephisto_arrivals.py``.
"""
from __future__ import annotations

import contextlib
import threading
import time

from parlai_dialeval.compat.mephisto import WRITTEN_FOR
from parlai_dialeval.compat.patching import is_ours, ours, require_call, require_ours, require_source, require_version, swapped

_LOCK = threading.Lock()
SMALL_STATE_CHARS = 2048  # texts up to this size are remembered, to skip rewriting them unchanged


def atomic_state_writes() -> None:
    """Mephisto's ``write_dict`` replacing the file whole (``atomic.replace_text``: a part file of the writing
    thread's, renamed over the target), encoded by ``json.dumps`` (``json.dump`` streams through the
    pure-Python encoder), and skipped where the file already holds that text: Mephisto rewrites an agent's
    metadata with its state after every message, unchanged. One writer a path at a time, so the text kept
    as written is the file's."""
    require_version("mephisto", WRITTEN_FOR, "atomic_state_writes")
    import json
    from collections import defaultdict

    from mephisto.abstractions.databases.local_database import LocalMephistoDB

    from parlai_dialeval.atomic import replace_text

    if is_ours(LocalMephistoDB.write_dict):
        return
    locks: defaultdict[str, threading.Lock] = defaultdict(threading.Lock)
    written: dict[str, str] = {}  # path -> the small text last written there (metadata, a few hundred bytes)

    @ours
    def write_dict(self, path_key: str, target_dict) -> None:
        self._assert_path_in_domain(path_key)
        text = json.dumps(target_dict)
        with locks[path_key]:
            if written.get(path_key) == text:
                return
            replace_text(path_key, text)
            if len(text) <= SMALL_STATE_CHARS:
                written[path_key] = text
            else:
                written.pop(path_key, None)

    LocalMephistoDB.write_dict = write_dict
    require_ours(LocalMephistoDB, "write_dict", "atomic_state_writes")


# Mephisto 1.1.1's ParlAIChatAgentState.update_data, which chat_states_written_behind replaces
CHAT_UPDATE_DATA_SOURCE = "dcab49f56b8182ff1d61c1a7a65cfa5432614460008e39fbbc7b750c625d4511"
STATE_WRITE_SECONDS = 0.5  # a chat agent's state file is at most this far behind its messages


class _StatesBehind:
    """Chat agents' states with messages not yet in their files, written by one thread of its own. Each is
    kept with its database and paths: a state reaches its agent through a weak reference, and the agent of
    a finished unit may be gone before its last messages are written."""

    def __init__(self, seconds: float):
        self.seconds, self.dirty, self.lock, self.thread = seconds, {}, threading.Lock(), None

    def mark(self, state) -> None:
        where = state.__dict__.get("_dialeval_files")  # found once per state, outside the lock (a database read)
        if where is None:
            where = state.__dict__["_dialeval_files"] = (state.agent.db, state._get_expected_data_file(),
                                                         state._get_metadata_path())
        with self.lock:
            self.dirty[id(state)] = (state, *where)
            if self.thread is None:
                self.thread = threading.Thread(target=self._run, name="dialeval-state-writer", daemon=True)
                self.thread.start()

    def _run(self) -> None:
        while True:
            time.sleep(self.seconds)
            self.flush()

    def flush(self) -> None:
        with self.lock:
            due, self.dirty = list(self.dirty.values()), {}
        for state, db, data_path, metadata_path in due:
            try:
                with saving(state):
                    db.write_dict(data_path, state.get_data())
                    db.write_dict(metadata_path, state.metadata.__dict__)
            except Exception as error:  # noqa: BLE001  (one agent's unwritable folder stops no other's writes)
                print(f"dialeval: {data_path} could not be written ({type(error).__name__}: {error})")


def saving(state) -> threading.Lock:
    """The state's own lock for writing it: one write at a time, so an older snapshot never lands over a newer."""
    return state.__dict__.setdefault("_dialeval_saving", threading.Lock())


STATES_BEHIND = _StatesBehind(STATE_WRITE_SECONDS)


def chat_states_written_behind() -> None:
    """A chat agent's state file (Mephisto's log of every message kept) written by one thread at most
    ``STATE_WRITE_SECONDS`` after the message instead of in its path: Mephisto's ``update_data`` rewrote the
    whole file before the world saw the participant's act and again before the reply went to the page, and
    with hundreds of participants those writes, each waiting for the interpreter lock at every system call,
    made most of a message's answer time (docs/scaling.md). What the study keeps does not wait on it: the
    world's own record (``session_world.save_record``) is written before a message is confirmed, and is what
    export and resume read; a final submission is still written at once (``update_submit``). A kill -9
    loses at most the last ``STATE_WRITE_SECONDS`` of Mephisto's log; ``flush_chat_states`` (the launch's
    shutdown, and at exit) writes what is due."""
    require_version("mephisto", WRITTEN_FOR, "chat_states_written_behind")
    import atexit

    from mephisto.abstractions._subcomponents.agent_state import AgentState
    from mephisto.abstractions.blueprints.parlai_chat.parlai_chat_agent_state import ParlAIChatAgentState

    if is_ours(ParlAIChatAgentState.update_data):
        return
    require_source(ParlAIChatAgentState.update_data, CHAT_UPDATE_DATA_SOURCE, "chat_states_written_behind")
    require_call(AgentState.update_submit, "self.save_data()", "chat_states_written_behind")

    @ours
    def update_data(self, live_update) -> None:
        live_update["timestamp"] = time.time()
        self.messages.append(live_update)
        STATES_BEHIND.mark(self)

    @ours
    def save_data(self) -> None:
        with saving(self):
            AgentState.save_data(self)

    ParlAIChatAgentState.update_data, ParlAIChatAgentState.save_data = update_data, save_data
    atexit.register(flush_chat_states)
    require_ours(ParlAIChatAgentState, "update_data", "chat_states_written_behind")


def flush_chat_states() -> None:
    """Write every chat agent's state that is behind its messages, now."""
    STATES_BEHIND.flush()


# Mephisto 1.1.1's ClientIOHandler._request_status_update, which the patch below copies (its loop, over a copy)
REQUEST_STATUS_UPDATE_SOURCE = "dadc17dd7464135be9bd0f8aaebf3ba7bfdaf0d9f6a9d44ea59a2cf5422dc3d1"
_CLOSING = threading.Lock()  # the channels' one closing at a time, across the process's runs (stops are rare)


def closed_channels_tolerated() -> None:
    """Mephisto's ``ClientIOHandler`` reaches a channel with ``self.channels[...]`` from several threads, while
    a stop deletes them: the run tracker (on a finished run), the launch's own stop and ``force_shutdown`` each
    close the channels, and two at once raised KeyError in ``shutdown``'s ``del self.channels[...]`` (seen at a
    killed adaptive launch, 2026-11-27). After the close, a status (an agent still at work marked disconnected)
    or a live update (the world's last message: its ``observe`` stores it first) raised KeyError too, into the
    launch's log or the world's thread; the status ping could iterate the dict while it shrank. Now the
    channels close once, one stop at a time; what is sent to a closed channel is dropped (no page can receive
    it); the ping goes over a copy."""
    require_version("mephisto", WRITTEN_FOR, "closed_channels_tolerated")
    from mephisto.data_model.packet import PACKET_TYPE_REQUEST_STATUSES, Packet
    from mephisto.operations.client_io_handler import SYSTEM_CHANNEL_ID, ClientIOHandler

    if is_ours(ClientIOHandler.shutdown):
        return
    require_call(ClientIOHandler._get_channel_for_agent, "self.channels[channel_id]", "closed_channels_tolerated")
    for sender in ("send_status_update", "send_live_update"):
        require_call(getattr(ClientIOHandler, sender), "self._get_channel_for_agent(agent_id)", "closed_channels_tolerated")
    require_call(ClientIOHandler.shutdown, "del self.channels[channel_id]", "closed_channels_tolerated")
    require_call(ClientIOHandler.shutdown, "self.is_shutdown = True", "closed_channels_tolerated")
    require_source(ClientIOHandler._request_status_update, REQUEST_STATUS_UPDATE_SOURCE, "closed_channels_tolerated")

    def to_open_channel(send):
        @ours
        def send_if_open(self, agent_id: str, *args):
            if self.agent_id_to_channel_id.get(agent_id) in self.channels:
                send(self, agent_id, *args)
        return send_if_open

    original_shutdown = ClientIOHandler.shutdown

    @ours
    def shutdown(self) -> None:
        with _CLOSING:
            if not self.is_shutdown:  # set once every channel is closed and deleted
                original_shutdown(self)

    @ours
    def _request_status_update(self) -> None:
        for channel in list(self.channels.values()):
            channel.enqueue_send(Packet(packet_type=PACKET_TYPE_REQUEST_STATUSES, subject_id=SYSTEM_CHANNEL_ID, data={}))

    ClientIOHandler.send_status_update = to_open_channel(ClientIOHandler.send_status_update)
    ClientIOHandler.send_live_update = to_open_channel(ClientIOHandler.send_live_update)
    ClientIOHandler._request_status_update = _request_status_update
    ClientIOHandler.shutdown = shutdown
    for name in ("send_status_update", "send_live_update", "_request_status_update", "shutdown"):
        require_ours(ClientIOHandler, name, "closed_channels_tolerated")


def _safe_unit_launcher():
    from mephisto.data_model.constants.assignment_state import AssignmentState
    from mephisto.operations import task_launcher

    class SafeUnitLauncher(task_launcher.TaskLauncher):
        """Mephisto 1.1.1's unit thread iterates over ``unlaunched_units`` (launching a unit at every step)
        while a generator's thread adds to it: "dictionary changed size during iteration" kills the unit
        thread and no HIT is launched again. Same loop over a copy taken under the launcher's lock."""

        @ours
        def generate_units(self):
            while self.keep_launching_units:
                for db_id, unit in list(self.launched_units.items()):
                    if unit.get_status() not in (AssignmentState.LAUNCHED, AssignmentState.ASSIGNED):
                        self.launched_units.pop(db_id)
                with self.unlaunched_units_access_condition:
                    waiting = list(self.unlaunched_units.items())
                room = self.max_num_concurrent_units - len(self.launched_units)
                for db_id, unit in waiting if self.max_num_concurrent_units == 0 else waiting[:max(room, 0)]:
                    self.launched_units[db_id] = unit
                    with self.unlaunched_units_access_condition:
                        self.unlaunched_units.pop(db_id)
                    yield unit
                time.sleep(task_launcher.UNIT_GENERATOR_WAIT_SECONDS)
                if not self.unlaunched_units:
                    break

    return SafeUnitLauncher


@contextlib.contextmanager
def safe_unit_launching(operator=None):
    """Within the block, the launchers Mephisto's operator creates are ``SafeUnitLauncher``s (for the
    launch call of a run fed by a generator); Mephisto's own class is left as it is. ``operator``:
    ``mephisto.operations.operator`` (or a copy of it, in tests)."""
    require_version("mephisto", WRITTEN_FOR, "safe_unit_launching")
    if operator is None:
        from mephisto.operations import operator
    require_call(operator.Operator._create_live_task_run, "launcher = TaskLauncher(", "safe_unit_launching")
    with _LOCK, swapped(operator, "safe_unit_launching", TaskLauncher=_safe_unit_launcher()):
        yield


def require_safe_launcher(launcher) -> None:
    """A launched run's launcher must be ours (``safe_unit_launching`` took effect)."""
    require_ours(type(launcher), "generate_units", "safe_unit_launching")


def check() -> list[str]:
    """What install.sh confirms: each patch takes effect."""
    atomic_state_writes()
    chat_states_written_behind()
    closed_channels_tolerated()
    with safe_unit_launching():
        from mephisto.operations import operator

        require_ours(operator.TaskLauncher, "generate_units", "safe_unit_launching")
    return [f"mephisto {WRITTEN_FOR}: closed channels tolerated, safe unit launching, atomic state writes, "
            "chat states written behind"]
