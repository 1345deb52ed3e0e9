"""The one retry policy of this project's outgoing HTTP (the OpenAI-compatible chat client, the Prolific
client): wait as the server's ``Retry-After`` says (seconds or an HTTP date, RFC 9110 10.2.3) and give up
when it asks for longer than the cap; without it, back off exponentially, capped, with jitter.

Only the wait is shared, not the loop: each client decides per response whether to retry at all (a 400
the chat client learns from is no retry, a 404 ends the turn), which stamina's or tenacity's decorators
would have to be told through exceptions; the clocks are parameters so tests never sleep.
"""
from __future__ import annotations

import email.utils
import random
import time
from dataclasses import dataclass


def retry_after_seconds(value: str | None, now=time.time) -> float | None:
    """``Retry-After`` as seconds from ``now()``: a number or an HTTP date; None when absent or unreadable."""
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - now())


@dataclass(frozen=True)
class RetryPolicy:
    backoff: float = 1.0  # the first wait without Retry-After, doubled each retry
    max_backoff: float = 60.0
    max_retry_after: float = 60.0  # a server asking for longer is treated as down for now
    jitter: float = 0.5  # the back-off is drawn from [1 - jitter, 1] times itself: clients never retry in step

    def wait(self, retry: int, retry_after: str | None = None, now=time.time, rng=random.random) -> float | None:
        """Seconds before retry number ``retry`` (1 for the first); None: give up (Retry-After beyond the cap)."""
        after = retry_after_seconds(retry_after, now)
        if after is not None:
            return after if after <= self.max_retry_after else None
        return min(self.max_backoff, self.backoff * 2 ** (retry - 1)) * (1 - self.jitter * rng())
