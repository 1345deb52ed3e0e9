"""What strangers may make us ask Prolific: the calls an arrival check makes with the researcher's token are
counted per source and in total over a sliding minute, and all of them pause after Prolific's 429.

Anyone can open a study link with a made-up session: each such arrival would cost one ``GET submissions/{id}/``
with the researcher's token, and Prolific rate-limits the token, so a flood could block honest arrivals and the
review's payments (issue 52). With these budgets one source costs at most ``per_source`` calls a minute and all
sources together at most ``total``; an honest participant from another source still finds calls left, because
one source can take only a small share of the total. Beyond a budget an arrival is told to reload in a minute,
and nothing is asked. A 429 pauses every check for as long as Prolific's ``Retry-After`` says, else as
``retry.RetryPolicy`` backs off (doubling with each 429 in a row): a throttled token is not hammered further.

Hand-written (a sliding-window counter per key): the limiters on PyPI either count per process only in fixed
windows or need a Redis; this is ten lines over ``collections.deque``.
"""
from __future__ import annotations

import threading
import time
from collections import OrderedDict, deque

from parlai_dialeval.retry import RetryPolicy

WINDOW = 60.0  # seconds the counts run over
SOURCES_KEPT = 10_000  # sources remembered (the oldest go: a stranger can make up any number of addresses)
PAUSE_POLICY = RetryPolicy(backoff=5.0, max_backoff=300.0, max_retry_after=300.0)


class CallBudget:
    def __init__(self, per_source: int = 30, total: int = 300, window: float = WINDOW, clock=time.monotonic):
        self.per_source, self.total, self.window, self.clock = per_source, total, window, clock
        self._lock = threading.Lock()
        self._all: deque[float] = deque()
        self._sources: OrderedDict[str, deque[float]] = OrderedDict()
        self._paused_until = 0.0
        self._throttled = 0  # 429s in a row
        self.refused = {"source": 0, "total": 0, "paused": 0}  # arrivals not checked, by why

    def _trim(self, times: deque[float], now: float) -> None:
        while times and now - times[0] >= self.window:
            times.popleft()

    def take(self, source: str | None) -> str | None:
        """Count one call for ``source`` (None: unknown, counted in the total only); None when it may be made,
        else why not: ``paused`` (after a 429), ``source`` or ``total`` (a budget spent)."""
        with self._lock:
            now = self.clock()
            why = None
            if now < self._paused_until:
                why = "paused"
            self._trim(self._all, now)
            mine = None
            if why is None and source is not None:
                mine = self._sources.pop(source, None) or deque()
                self._sources[source] = mine  # most recent last
                while len(self._sources) > SOURCES_KEPT:
                    self._sources.popitem(last=False)
                self._trim(mine, now)
                if len(mine) >= self.per_source:
                    why = "source"
            if why is None and len(self._all) >= self.total:
                why = "total"
            if why is not None:
                self.refused[why] += 1
                return why
            self._all.append(now)
            if mine is not None:
                mine.append(now)
            return None

    def throttled(self, retry_after: str | None) -> float:
        """Prolific answered 429: pause every call; returns the seconds paused."""
        with self._lock:
            self._throttled += 1
            wait = PAUSE_POLICY.wait(self._throttled, retry_after)
            wait = PAUSE_POLICY.max_retry_after if wait is None else wait
            self._paused_until = max(self._paused_until, self.clock() + wait)
            return wait

    def answered(self) -> None:
        """Prolific answered (not 429): the back-off starts again from its first step."""
        with self._lock:
            self._throttled = 0
