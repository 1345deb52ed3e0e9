"""What the chat worlds (SM-Turn + SM-Dialog, PW-Turn, live-chat DA) share.

Each keeps its whole state in a protocol session object (its task's ``protocol.py``), sends the page
blind state (speakers are 'human' or 'bot', never model names), saves its record in the worker's data
folder after every event so partial work survives a worker who leaves, and finishes by releasing
unfinished models or, when complete, running the Smith et al. Appendix B worker checks with an
optional soft block. What the participant sends is checked (platform/participant_input.py: types,
sizes, rate) before a world sees it; the record's size is bounded by those limits, so rewriting it after
every event stays cheap. Hooks (``saved_models``, ``choose_models``, ``bot_failed``, ``end_session``,
``record``) let a protocol differ: live chat fails one slot when a bot fails and saves its own record shape.

After a crash (platform/resume.py) a world carries on the saved record of the worker's unit where it
stopped. The record keeps the update id of every act the world took (``ACTS_KEY``): the page resends what
the server never confirmed (frontend/src/components/transport.js), and a copy of an act already stored is
dropped here, then confirmed again by Mephisto's acknowledgement (compat/mephisto_router.py). A resent act
is taken only by the unit it was first sent to (``SENT_TO_KEY``, the agent ids the unit ran under).
"""
from __future__ import annotations

import itertools
import json
import secrets
import time
from pathlib import Path

from mephisto.data_model.exceptions import AbsentAgentError

from parlai_dialeval.analysis.worker_checks import check_messages, violations, worker_messages
from parlai_dialeval.atomic import replace_text
from parlai_dialeval.compat.mephisto_router import acknowledge_taken, refuse_taken
from parlai_dialeval.crowdsourcing.platform.participant_input import FloodGuard, limits_of, screen
from parlai_dialeval.crowdsourcing.platform.resume import CONTINUED_FROM, take_resumable

SYSTEM_ID = "System"
ACTS_KEY = "acts"  # record key: the update ids of the participant's acts the world took, in order
AGENTS_KEY = "agent_ids"  # record key: the Mephisto agents this unit ran under (one more per relaunch)
# display-only updates' ids: unique in this process and apart from other launches' (uuid4 costs a system call,
# and a streamed reply sends several updates a second to each page)
DISPLAY_ID_PREFIX, DISPLAY_IDS = f"show-{secrets.token_hex(8)}-", itertools.count()
MAX_UPDATE_ID_CHARS = 64  # a longer update id is not kept in the record (it could only bloat it)
SENT_TO_KEY = "dialeval_sent_to"  # act key the page adds to a resent act: the agent it was first sent to
PARTICIPANT_ID = "You"  # the participant's own messages when a world shows them again (any id but bot/System)
BOT_FAILED = ("Sorry, the chatbot stopped working, so this conversation ends here. Your work so far is saved: "
              "please submit.")


def wait_for_act(agent, turn_timeout: float):
    """The worker's next act, waiting up to the task's ``turn_timeout`` seconds.

    Mephisto marks the agent timed out when ``act(timeout=T)`` gets nothing within T, so T must be the
    task's idle limit, never a short poll interval (a one-second poll ended every worker who paused).
    The wait returns early, with Mephisto's AbsentAgentError, when the worker disconnects or returns the
    HIT or the run is stopped."""
    return agent.act(timeout=turn_timeout)


def save_record(agent, record: dict, name: str) -> None:
    """Write ``record`` as JSON file ``name`` in the worker's Mephisto data folder (read back by export)."""
    mephisto_agent = getattr(agent, "mephisto_agent", None)
    if mephisto_agent is not None:
        # whole or not at all: export may read it at any moment; json.dumps is the C encoder (json.dump is not)
        replace_text(str(Path(mephisto_agent.get_data_dir()) / name), json.dumps(record))


def block_worker(agent, qualification: str) -> None:
    """Soft block: grant the run's block qualification, which Mephisto refuses on later units."""
    from parlai_dialeval.crowdsourcing.platform.quality import soft_block

    mephisto_agent = getattr(agent, "mephisto_agent", None)
    if mephisto_agent is not None:
        soft_block(mephisto_agent.db, [mephisto_agent.get_worker().worker_name], qualification)


def hit_models(initialization_data) -> list[str] | None:
    """The models an adaptive launch chose for this HIT (platform/adaptive/config.py), kept in the unit's
    server-side data (never sent to the page); None: the pool chooses."""
    from parlai_dialeval.crowdsourcing.platform.blueprint import SERVER_KEY

    unit_data = getattr(initialization_data, "unit_data", None) or [{}]
    return (unit_data[0].get(SERVER_KEY) or {}).get("models")


def blind_history(turns: list[dict]) -> list[dict]:
    return [{"speaker": "human" if t["speaker"] == "human" else "bot", "text": t["text"]} for t in turns]


class SessionWorld:
    """Base world: subclasses set ``record_file``, build ``self.session`` and parley."""

    record_file: str

    def __init__(self, opt: dict, agent, num_models: int = 0, models: list[str] | None = None):
        self.opt = opt
        self.agent = agent
        self.pool = opt["pool"]
        # ``saved``: the worker's record from an interrupted run (platform/resume.py), or None; a worker
        # back after a restart gets their HIT's models again
        self.saved = take_resumable(opt, agent)
        kept = self.saved_models(self.saved["record"]) if self.saved else None
        # ``models``: chosen for this HIT by an adaptive launch (platform/adaptive/config.py), not the pool's
        self.models = list(kept or models or []) or self.choose_models(num_models)
        self.reserved = [] if kept or models else list(self.models)  # given back to the pool if not completed
        self.restarted_from = self.saved["agent_id"] if self.saved else None
        saved = self.saved["record"] if self.saved else {}
        self.acts = list(saved.get(ACTS_KEY) or [])
        own = getattr(getattr(agent, "mephisto_agent", None), "db_id", None)
        self.agent_ids = list(saved.get(AGENTS_KEY) or []) + [own]
        self.resent = False  # the act just taken was resent by the page after a relaunch
        self.last_act = None  # the act just taken (refused: refuse)
        self.status, self.ended, self.blocked, self.error = "incomplete", None, False, None
        self.started = self.saved["record"].get("started", time.time()) if self.saved else time.time()
        self.limits = limits_of(opt)
        self.flood = FloodGuard(self.limits)
        # seconds between the worker's previous act and this one, on the server's clock: no time the page
        # claims for an answer may exceed it (platform/answer_record.py); None for an act resent after a relaunch
        self.last_act_at, self.elapsed = time.time(), None

    def saved_models(self, record: dict) -> list[str] | None:
        """The models of a saved HIT, which goes on with them."""
        return record.get("hit_models")

    def choose_models(self, num_models: int) -> list[str]:
        """This HIT's models, reserved from the pool."""
        return self.pool.reserve(num_models)

    def observe_state(self, state: dict) -> None:
        # the page refuses a longer message itself, saying why (components/MessageInput.jsx)
        state = {**state, "max_message_chars": self.limits.max_message_chars}
        self.agent.observe({"id": SYSTEM_ID, "text": "", "task_data": state})
        self.save()

    def save(self) -> None:
        save_record(self.agent, self.record(), self.record_file)

    def save_and_confirm(self) -> None:
        """Save, then confirm to the page the acts taken so far (their effect is in the record now): for a
        world that stores the worker's act before a long step, such as a reply that streams for a minute."""
        self.save()
        mephisto_agent = getattr(self.agent, "mephisto_agent", None)
        if mephisto_agent is not None:
            acknowledge_taken(mephisto_agent)

    def release(self, model: str) -> None:
        """Give a model this HIT reserved back to the pool, once."""
        if model in self.reserved:
            self.reserved.remove(model)
            self.pool.release(model)

    def poll(self) -> dict | None:
        """The worker's next act, or None; a worker who left ends the session as incomplete."""
        try:
            return wait_for_act(self.agent, self.opt["turn_timeout"])
        except AbsentAgentError:
            self._finish("incomplete")
            raise

    def take(self) -> tuple[str, dict] | None:
        """The worker's next act as (text, task_data), checked (participant_input.screen); None when none
        came, it was already stored or sent to another unit, or it was dropped as part of a flood or refused
        (the worker is told why)."""
        act = self.last_act = self.poll()
        if act is not None and not self._new_act(act):
            return None
        taken = screen(act, self.agent, self.limits, self.flood, self.warn)
        if taken is not None:
            now = time.time()
            self.elapsed = None if self.resent else now - self.last_act_at
            self.last_act_at = now
        return taken

    def answer_record(self, data: dict, text: str | None = None) -> dict | None:
        """The page's record of how the answer in ``data`` was made (``provenance``), checked against the
        answer's ``text`` and the server's clock (platform/answer_record.py); None when the page sent none."""
        from parlai_dialeval.crowdsourcing.platform.answer_record import clean_record

        return clean_record(data.get("provenance"), text=text, elapsed=self.elapsed)

    def refuse(self, message: str) -> None:
        """The act just taken is not stored: ``message`` shown on the page, and the act never confirmed as sent."""
        refuse_taken(self.agent, self.last_act, message)
        self.warn(message)

    def _new_act(self, act) -> bool:
        """Whether ``act`` is new to this unit (then its update id is kept in the record)."""
        if not isinstance(act, dict):
            return True  # screen refuses it
        update_id, sent_to = act.get("update_id"), act.get(SENT_TO_KEY)
        if update_id in self.acts or (sent_to is not None and sent_to not in self.agent_ids):
            return False
        self.resent = sent_to is not None and sent_to != self.agent_ids[-1]
        if isinstance(update_id, str) and len(update_id) <= MAX_UPDATE_ID_CHARS:  # the page's are uuid4 strings
            self.acts.append(update_id)
        return True

    def show_history(self, turns: list[dict], bot_id: str) -> None:
        """Show the conversation so far as chat messages (a page reloaded onto a relaunched server)."""
        for turn in turns:
            speaker = PARTICIPANT_ID if turn["speaker"] == "human" else bot_id
            self.agent.observe({"id": speaker, "text": turn["text"] if turn["text"].strip() else " "})

    def resume_fields(self) -> dict:
        """What every record keeps so that a relaunch carries it on (module docstring)."""
        return {ACTS_KEY: self.acts, AGENTS_KEY: self.agent_ids, CONTINUED_FROM: self.restarted_from}

    def warn(self, message: str) -> None:
        """Show ``message`` on the worker's page (pages merge task_data, so the rest of it stays)."""
        self.agent.observe({"id": SYSTEM_ID, "text": "", "task_data": {"warning": message}})

    def bot_turn(self, step):
        """Run ``step``, a turn that needs the bots, and return what it returns. A bot that fails (an
        endpoint's last retry, a model that crashes) goes to ``bot_failed``: never a crashed world or a
        hung page. None when it failed."""
        try:
            return step()
        except Exception as error:  # any bot failure ends this conversation, never the worker's page
            self.bot_failed(f"{type(error).__name__}: {error}")
            return None

    def streaming(self, bot, key: str = "streaming"):
        """``with self.streaming(bot): ...``: that bot's reply shown on the page as it arrives (bots.StreamToPage)."""
        from parlai_dialeval.crowdsourcing.platform.bots import StreamToPage

        return StreamToPage(self.show, bot, key=key)

    def show(self, task_data: dict) -> None:
        """A display-only update (a reply as it streams): sent to the page, not kept in Mephisto's agent
        state, which rewrites the agent's whole state file for every message it keeps (under hundreds of
        participants those rewrites held the server, docs/scaling.md). The reply's final message is kept,
        so a page reloaded mid-stream loses nothing."""
        mephisto_agent = getattr(self.agent, "mephisto_agent", None)
        message = {"id": SYSTEM_ID, "text": "", "task_data": task_data}
        if mephisto_agent is None or not mephisto_agent.agent_in_active_run():
            self.agent.observe(message)
            return
        update_id = f"{DISPLAY_ID_PREFIX}{next(DISPLAY_IDS)}"
        mephisto_agent.get_live_run().client_io.send_live_update(mephisto_agent.get_agent_id(),
                                                                 {**message, "update_id": update_id})

    def bot_failed(self, error: str) -> None:
        """End this conversation as ``failed`` with the error in the record and the worker told."""
        self.error = error
        self.agent.observe({"id": SYSTEM_ID, "text": "", "task_data": {
            "phase": "failed", "history": blind_history(self.session.turns), "warning": BOT_FAILED}})
        self._finish("failed")

    def episode_done(self) -> bool:
        return self.ended is not None

    def shutdown(self) -> None:
        if self.ended is None:
            self._finish("incomplete")

    def prep_save_data(self, agents) -> dict:
        # Mephisto sends this to the worker's page too: name the record file, never the models in it.
        return {"dialeval_record_file": self.record_file}

    def record(self) -> dict:
        return {**self.session.state(), "status": self.status, "started": self.started, "ended": self.ended,
                "blocked": self.blocked, "hit_models": self.models, "error": self.error,
                "dropped_acts": self.flood.dropped, **self.resume_fields()}

    def end_session(self, status: str) -> list[str]:
        """The session ends with ``status``; returns the models whose conversation did not complete."""
        return [] if status == "complete" else list(self.reserved)

    def _finish(self, status: str) -> None:
        self.status, self.ended = status, time.time()
        for name in self.end_session(status):
            self.release(name)
        if status == "complete" and self.opt.get("block_on_worker_checks"):
            self.blocked = bool(violations(check_messages(worker_messages(self.session.turns))))
            if self.blocked:
                block_worker(self.agent, self.opt["block_qualification"])
        self.save()
