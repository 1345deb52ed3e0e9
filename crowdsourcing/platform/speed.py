"""How long people wait for a bot: the patience threshold the launch's endpoint check and the dashboard
warn at, and the launch's measurement of an endpoint bot's speed (time to first token, tokens per second): several
replies, the slowest reported, since one reply's time varies from one to the next (the same model on the same
server took 17.6 s and 6.3 s for 80 tokens in one launch)."""
from __future__ import annotations

from dataclasses import dataclass

# Nielsen (Usability Engineering, 1993, ch. 5): 10 s is about the limit for keeping a person's attention on
# a dialogue; past it they turn to other things. A chat partner silent that long loses the participant.
PATIENCE_SECONDS = 10.0
PROBE_TOKENS = 16  # the measured reply: enough tokens for a rate, short enough not to hold up the launch
PROBE_REPLIES = 3  # replies timed per bot: the slowest is what the warning judges
REPLY_TOKENS = 256  # a whole reply's length where the bot sets no max_tokens (the server's own cap is unknown)


@dataclass(frozen=True)
class Speed:
    """The slowest of ``replies`` measured replies: the longest seconds to a first token (to the whole reply when
    not streamed), the lowest tokens per second after it, and the longest reply the bot may give (its
    max_tokens)."""

    first_token: float
    tokens_per_second: float | None
    reply_tokens: int
    replies: int = 1

    @property
    def whole_reply(self) -> float | None:
        """Seconds a reply of ``reply_tokens`` takes at this pace (None without a rate)."""
        return self.first_token + self.reply_tokens / self.tokens_per_second if self.tokens_per_second else None

    def describe(self) -> str:
        rate = f"{self.tokens_per_second:.1f} tokens/s" if self.tokens_per_second else "no token rate"
        whole = f", so a whole reply ({self.reply_tokens} tokens) takes about {self.whole_reply:.1f} s" \
            if self.whole_reply is not None else ""
        slowest = f"slowest of {self.replies} replies: " if self.replies > 1 else ""
        return f"{slowest}first token after {self.first_token:.2f} s, {rate}{whole}"


def measure(agent, replies: int = PROBE_REPLIES) -> Speed | None:
    """The bot's speed from ``replies`` short replies, the slowest of each (first token, rate), for bots that can
    say (``measure_speed``: endpoint bots); None for the others (bots in this process answer as fast as the
    server's CPU allows)."""
    if not hasattr(agent, "measure_speed"):
        return None
    firsts, rates, max_tokens = [], [], None
    for _ in range(replies):
        done, max_tokens = agent.measure_speed(PROBE_TOKENS)
        firsts.append(done.first_token_latency if done.first_token_latency is not None else done.latency)
        if (done.completion_tokens or 0) >= 2 and done.tokens_per_second:  # one token gives no rate
            rates.append(done.tokens_per_second)
    return Speed(max(firsts), min(rates) if rates else None, int(max_tokens or REPLY_TOKENS), replies)


def too_slow(name: str, speed: Speed, patience: float) -> str | None:
    """The warning for a bot that keeps people waiting longer than ``patience`` seconds, else None."""
    waits = [(what, value) for what, value in (("its first token", speed.first_token),
                                               ("a whole reply", speed.whole_reply)) if value is not None]
    slow = [f"{what} about {value:.1f} s" for what, value in waits if value > patience]
    if not slow:
        return None
    return (f"WARNING: bot {name!r} is too slow for people: {' and '.join(slow)}, over the {patience:g} s they "
            f"wait ({speed.describe()}). Use a faster endpoint, a lower max_tokens, or set slow_reply in its "
            "model entry if this is expected.")


def check(name: str, agent, patience: float = PATIENCE_SECONDS, say=print) -> Speed | None:
    """Measure an endpoint bot at launch (``PROBE_REPLIES`` replies): its slowest speed goes to the log (``print``), a warning to the
    person at the terminal (``say``) when people would wait longer than ``patience``."""
    from parlai_dialeval.errors import DialevalError

    try:
        speed = measure(agent)
    except DialevalError as error:  # it answered the ping: a failed timing is worth a line, not a stopped launch
        say(f"WARNING: bot {name!r} could not be timed: {error}")
        return None
    if speed is None:
        return None
    print(f"bot {name!r}: {speed.describe()}", flush=True)
    warning = too_slow(name, speed, patience)
    if warning:
        say(warning)
    return speed
