"""What a chat world accepts from a participant's page: types, sizes and rate (issue 26).

Everything a participant sends is hostile until checked: the page is ours, but anyone with the task's
URL can send the server any JSON. ``read_act`` turns an act into (text, task_data) of the right types
or refuses it with a sentence for the page; ``bounded_text`` checks a free-text field; ``FloodGuard``
drops what a participant sends faster than a person can (never passed on to the bots). Limits come
from the task's ``limits`` config group (``InputLimits``).
"""
from __future__ import annotations

import logging
import time
from dataclasses import dataclass, field

TOO_FAST = ("You are sending messages faster than the chat can take them: the extra ones were dropped and not "
            "sent to the chatbot. Please wait for each reply.")
UNREADABLE = "Your last message could not be read; please send it again."
LOGGER = logging.getLogger(__name__)


@dataclass
class InputLimits:
    """A chat task's limits on what one participant may send (``<task>.limits.*=`` on the command line)."""

    max_message_chars: int = field(default=2000, metadata={"kind": "positive_int",
        "help": "longest chat message a participant may send (characters); a longer one is refused with a "
                "message on the page and never reaches the bots"})
    max_topic_chars: int = field(default=300, metadata={
        "kind": "positive_int", "help": "longest conversation topic (characters)"})
    max_free_text_chars: int = field(default=5000, metadata={"kind": "positive_int",
        "help": "longest free-text answer: a justification or the final feedback (characters)"})
    rate_per_minute: int = field(default=120, metadata={"kind": "positive_int",
        "help": "sustained number of actions (messages, clicks) a participant may send per minute; faster ones "
                "are dropped with a message on the page, never sent to the bots"})
    rate_burst: int = field(default=30, metadata={"kind": "positive_int",
        "help": "actions a participant may send in a quick burst above rate_per_minute"})


class Refused(ValueError):
    """An act the world does not accept; the message is shown to the participant."""


def limits_of(opt: dict) -> InputLimits:
    """The world's limits (a world_opt built from the task config; defaults when it gives none)."""
    limits = opt.get("limits")
    return limits if isinstance(limits, InputLimits) else InputLimits(**dict(limits or {}))


def bounded_text(value, limit: int, what: str) -> str:
    """``value`` as a string of at most ``limit`` characters (None: empty); Refused otherwise."""
    if value is None:
        return ""
    if not isinstance(value, str):
        raise Refused(UNREADABLE)
    if len(value) > limit:
        raise Refused(f"Your {what} is {len(value):,} characters long; the limit is {limit:,}. Please shorten it.")
    return value


def read_act(act, limits: InputLimits) -> tuple[str, dict]:
    """(text, task_data) of an act from the page: text a string within ``max_message_chars``, task_data a
    dict; Refused for anything else (a non-dict act, a number as text, a list as task_data...)."""
    if not isinstance(act, dict):
        raise Refused(UNREADABLE)
    data = act.get("task_data")
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise Refused(UNREADABLE)
    return bounded_text(act.get("text"), limits.max_message_chars, "message"), data


class FloodGuard:
    """A token bucket over the acts a world takes from one participant, plus a cap on the backlog.

    The bucket alone is not enough: the world takes acts one at a time, after each bot reply, so with a
    slow endpoint a flood queued meanwhile would trickle through at the bucket's rate and every message
    would reach the bot. A backlog larger than a burst cannot come from a person (the page waits for each
    reply), so it is dropped whole, with the act just taken."""

    def __init__(self, limits: InputLimits, clock=time.monotonic):
        self.rate, self.burst, self.clock = limits.rate_per_minute / 60.0, max(1, limits.rate_burst), clock
        self.tokens, self.last = float(self.burst), clock()
        self.dropped = 0  # acts dropped in this session, kept in its record
        self.told = False  # the participant was told of the flood in progress (until the bucket refills)

    def admit(self, agent=None) -> bool:
        """True when the act just taken from ``agent`` (a ParlAI wrapper of a Mephisto agent, or None) may
        go on; False when it is dropped, with the backlog behind it."""
        now = self.clock()
        self.tokens = min(self.burst, self.tokens + (now - self.last) * self.rate)
        self.last = now
        if self.tokens >= self.burst:  # a full bucket: the participant paused, any flood is over
            self.told = False
        backlog = self._drop_backlog(agent)
        if not backlog and self.tokens >= 1:
            self.tokens -= 1
            return True
        self.dropped += 1 + backlog
        return False

    def _drop_backlog(self, agent) -> int:
        """Discard the acts waiting in the participant's Mephisto queue when there are more than a burst of
        them; returns how many. They never reach Mephisto's saved state either (it records an act only when
        the world takes it)."""
        live = getattr(agent, "mephisto_agent", None)
        queue = getattr(live, "pending_actions", None)
        if queue is None or queue.qsize() <= self.burst:
            return 0
        dropped = 0
        while not queue.empty():
            queue.get_nowait()
            dropped += 1
        # Mephisto waits on this event and then reads the queue, which it checks for emptiness first,
        # so clearing it after an act arrived meanwhile loses nothing
        live.has_live_update.clear()
        self.tokens = 0.0
        return dropped

    def notice(self) -> str | None:
        """What to tell the participant once per flood (None: nothing new to tell)."""
        if not self.dropped or self.told:
            return None
        self.told = True
        return TOO_FAST


def screen(act, agent, limits: InputLimits, flood: FloodGuard, warn) -> tuple[str, dict] | None:
    """The act just taken from ``agent`` as (text, task_data) (``read_act``); None when there is none, or it
    is dropped as part of a flood or refused; ``warn(message)`` then tells the participant (once per flood),
    and the page is told the act was not stored (never confirmed as sent: ``refuse_taken``)."""
    from parlai_dialeval.compat.mephisto_router import refuse_taken

    if act is None:
        return None
    if not flood.admit(agent):
        refuse_taken(agent, act, TOO_FAST)
        notice = flood.notice()
        if notice:
            LOGGER.warning("agent %s sends more than %s actions a minute: dropping them (%s so far)",
                           getattr(getattr(agent, "mephisto_agent", None), "db_id", "?"), limits.rate_per_minute,
                           flood.dropped)
            warn(notice)
        return None
    try:
        return read_act(act, limits)
    except Refused as refusal:
        refuse_taken(agent, act, str(refusal))
        warn(str(refusal))
        return None
