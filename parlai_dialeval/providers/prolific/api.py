"""A small client for Prolific's REST API: typed errors, bounded retries that honour ``Retry-After``.

Which calls are retried is decided per call (``retry``): reads, transitions (idempotent on Prolific) and
bonus set-ups (an unpaid set-up costs nothing) are retried on 429 and 5xx; creating a study and paying
bonuses only on 429 (the request was refused unprocessed), because after a 5xx the work may have been
done: the caller checks (an orphan study is looked up and deleted; a bonus is left "pending: check on
Prolific" and never paid again by itself, bonus.py). Lists are read whole, page after page (``results``),
each as its endpoint pages (``OFFSET_PAGED``). The token is sent in a header only, only to ``base_url``, and
never appears in an error message or in ``repr``.
"""
from __future__ import annotations

import logging
import re
import time
from decimal import ROUND_HALF_UP, Decimal

from parlai_dialeval.errors import DialevalError
from parlai_dialeval.retry import RetryPolicy

DEFAULT_API_BASE_URL = "https://api.prolific.com/api/v1/"
DEFAULT_COMPLETION_URL = "https://app.prolific.com/submissions/complete"
RETRY_ON_429 = frozenset({429})
RETRY_ON_429_5XX = frozenset({429, 500, 502, 503, 504})
MAX_RETRY_AFTER = 120.0  # seconds: a longer Retry-After means the caller should come back later
DEFAULT_TIMEOUT = 30.0  # seconds per request; a pay call that times out is ambiguous (review.py)
PAGE_SIZE = 100  # items asked per page of a list (Prolific's default is 20; Dallinger asks 100 of the live API)
# Lists paged by limit/offset, as Prolific's own CLI reads them (prolific-oss/cli client/client.go
# GetWorkspaces, GetProjects, GetParticipantGroups: ``?limit=&offset=``) and as Dallinger reads workspaces
# (dallinger/prolific.py get_workspaces: "?limit=1000", "without the limit param ... limited to 20"); they
# ignore ``page``. Every other list pages by ``page``/``page_size`` (docs "List submissions": "Paginate by
# page_size and page"; Dallinger _get_all_pages on submissions/ and studies/, checked against the live API).
OFFSET_PAGED = re.compile(r"workspaces/|workspaces/[^/]+/projects/|participant-groups/")


# httpx logs every request at INFO under Mephisto's logging set-up; our own messages say what matters.
logging.getLogger("httpx").setLevel(logging.WARNING)


class ProlificError(DialevalError):
    """Any failed Prolific call; ``status`` is the HTTP status (0: no answer)."""

    def __init__(self, message: str, status: int = 0):
        super().__init__(message)
        self.status = status


class ProlificAuthError(ProlificError):
    pass


class ProlificNotFound(ProlificError):
    pass


class ProlificRateLimited(ProlificError):
    pass


class ProlificServerError(ProlificError):
    pass


class ProlificRequestError(ProlificError):
    pass


def to_minor(amount: float | str | Decimal, what: str = "amount") -> int:
    """Major units (2.50 GBP) -> minor units (250 pence), rounding half up; Prolific takes minor units."""
    value = Decimal(str(amount))
    if value < 0:
        raise DialevalError(f"{what} must not be negative (got {amount})")
    return int((value * 100).quantize(Decimal("1"), rounding=ROUND_HALF_UP))


def to_major(minor: int) -> str:
    """250 -> '2.50' (for messages and Prolific's bonus CSV, which takes major units)."""
    return f"{Decimal(int(minor)) / 100:.2f}"


def _error_class(status: int) -> type[ProlificError]:
    if status == 401 or status == 403:
        return ProlificAuthError
    if status == 404:
        return ProlificNotFound
    if status == 429:
        return ProlificRateLimited
    if status >= 500:
        return ProlificServerError
    return ProlificRequestError


def _detail(response) -> str:
    try:
        body = response.json()
    except ValueError:
        return response.text[:200]
    error = body.get("error", body) if isinstance(body, dict) else body
    detail = error.get("detail", error) if isinstance(error, dict) else error
    return str(detail)[:300]


def _more_pages(body: dict, read: int, batch: int) -> bool:
    links = body.get("_links")
    if isinstance(links, dict) and "next" in links:
        nxt = links["next"]
        return bool(nxt.get("href") if isinstance(nxt, dict) else nxt)
    count = (body.get("meta") or {}).get("count")
    if isinstance(count, int):
        return read < count
    return batch >= PAGE_SIZE  # no links, no count: a full page may have a successor


class ProlificClient:
    """``ProlificClient(base_url, token)``; ``call(method, path, json=..., retry=...)`` returns the JSON."""

    def __init__(self, base_url: str, token: str, timeout: float | None = None, max_retries: int = 5,
                 backoff: float = 1.0, sleep=time.sleep):
        import httpx

        timeout = DEFAULT_TIMEOUT if timeout is None else timeout
        self.base_url = base_url.rstrip("/") + "/"
        self.max_retries, self.sleep = max_retries, sleep
        self.retry = RetryPolicy(backoff=backoff, max_backoff=60.0, max_retry_after=MAX_RETRY_AFTER)
        self._http = httpx.Client(base_url=self.base_url, timeout=timeout,
                                  headers={"Authorization": f"Token {token}", "Accept": "application/json"})

    def __repr__(self) -> str:
        return f"ProlificClient({self.base_url!r})"

    def close(self) -> None:
        self._http.close()

    def call(self, method: str, path: str, json=None, params=None, retry: frozenset = RETRY_ON_429_5XX):
        import httpx

        what = f"Prolific {method} {path}"
        for attempt in range(self.max_retries + 1):
            try:
                response = self._http.request(method, path.lstrip("/"), json=json, params=params)
            except httpx.TransportError as error:
                if 503 not in retry or attempt == self.max_retries:
                    raise ProlificServerError(
                        f"{what}: no answer from {self.base_url} ({type(error).__name__})") from None
                self.sleep(self.retry.wait(attempt + 1))
                continue
            if response.status_code < 400:
                is_json = response.content and "json" in response.headers.get("content-type", "")
                return response.json() if is_json else None
            status = response.status_code
            wait = self.retry.wait(attempt + 1, response.headers.get("Retry-After"))
            if status in retry and attempt < self.max_retries and wait is not None:
                self.sleep(wait)
                continue
            cls = _error_class(status)
            hint = {ProlificAuthError: " (the API token was refused: register a valid one with "
                                       "`dialeval prolific register NAME`)",
                    ProlificRateLimited: f" (still rate limited after {self.max_retries} retries; try again later)",
                    ProlificServerError: f" (Prolific failed{f' after {attempt} retries' if attempt else ''})",
                    }.get(cls, "")
            raise cls(f"{what}: HTTP {status}: {_detail(response)}{hint}", status)
        raise AssertionError("unreachable")

    # ---- the calls the provider and the review loop use
    def me(self) -> dict:
        return self.call("GET", "users/me/")

    def results(self, path: str, params=None) -> list[dict]:
        """Every item of a list endpoint, page after page as that endpoint pages (``OFFSET_PAGED``:
        ``limit``/``offset``, others ``page``/``page_size``) until Prolific's ``_links.next`` is null (or,
        where a list carries no links, until ``meta.count`` items are read). The next page is asked by
        number rather than by following the ``next`` address, so that the token only ever goes to
        ``base_url``. A page that brings nothing new ends the read (a list that ignores paging would
        otherwise be read for ever)."""
        by_offset = OFFSET_PAGED.fullmatch(path.lstrip("/")) is not None
        items: list[dict] = []
        seen: set = set()
        page = 1
        while True:
            paging = {"limit": PAGE_SIZE, "offset": len(items)} if by_offset else {"page": page, "page_size": PAGE_SIZE}
            body = self.call("GET", path, params={**(params or {}), **paging})
            batch = [item for item in body["results"] or [] if item.get("id") not in seen]
            items.extend(batch)
            seen.update(item.get("id") for item in batch)
            if not batch or not _more_pages(body, len(items), len(batch)):
                return items
            page += 1

    def cost(self, reward_minor: int, places: int) -> int:
        """What ``places`` places at ``reward_minor`` cost with Prolific's fees (minor units): the cost
        calculator answers ``total_cost`` only."""
        return self.call("POST", "study-cost-calculator/",
                         json={"reward": reward_minor, "total_available_places": places})["total_cost"]

    def balance(self, workspace_id: str) -> dict:
        return self.call("GET", f"workspaces/{workspace_id}/balance/")

    def study(self, study_id: str) -> dict:
        return self.call("GET", f"studies/{study_id}/")

    def submission(self, submission_id: str) -> dict:
        return self.call("GET", f"submissions/{submission_id}/")

    def submissions(self, study_id: str) -> list[dict]:
        return self.results("submissions/", params={"study": study_id})

    def groups(self, workspace_id: str) -> list[dict]:
        """The workspace's participant groups that are not deleted (deletes are soft on Prolific)."""
        return self.results("participant-groups/", params={"workspace_id": workspace_id, "active": "true"})

    def transition_submission(self, submission_id: str, action: str, message: str | None = None,
                              category: str | None = None) -> dict:
        body = {"action": action}
        if action == "REJECT":
            body.update(message=message, rejection_category=category)
        return self.call("POST", f"submissions/{submission_id}/transition/", json=body)
