"""Prolific's REST API as one client: one method per endpoint of ``endpoints.TABLE`` (named as its row), typed
errors, bounded retries that honour ``Retry-After``.

Which failures are retried is the endpoint's (its row's ``retry``, narrowed by a caller that must not wait):
reads, transitions (idempotent on Prolific) and bonus set-ups (an unpaid set-up costs nothing) on 429 and 5xx;
creating a study, paying bonuses and sending a message only on 429 (refused unprocessed), because after a 5xx
the work may have been done: the caller checks (an orphan study is looked up and deleted; a bonus or a message
is left "unsure" in the ledger and never sent again by itself, bonus.py, review.py). Lists are read whole, page
after page, each as its row pages (``results``). The token is sent in a header only, only to ``base_url``, and
never appears in an error message or in ``repr``. Each retry is said in one line on stderr (what failed, the try,
the wait): a silent API is retried for minutes, and a person waiting should see it is not hung.
"""
from __future__ import annotations

import logging
import sys
import time
from decimal import ROUND_HALF_UP, Decimal

from parlai_dialeval.errors import DialevalError
from parlai_dialeval.providers.prolific.endpoints import ENDPOINTS, Endpoint
from parlai_dialeval.retry import RetryPolicy
from parlai_dialeval.tls import shared_tls_context

DEFAULT_API_BASE_URL = "https://api.prolific.com/api/v1/"
DEFAULT_COMPLETION_URL = "https://app.prolific.com/submissions/complete"
MAX_RETRY_AFTER = 120.0  # seconds: a longer Retry-After means the caller should come back later
DEFAULT_TIMEOUT = 30.0  # seconds per request; a pay call that times out is ambiguous (bonus.py)
PAGE_SIZE = 100  # items asked per page of a list (Prolific's default is 20; Dallinger asks 100 of the live API)


# httpx logs every request at INFO under Mephisto's logging set-up; our own messages say what matters.
logging.getLogger("httpx").setLevel(logging.WARNING)


class ProlificError(DialevalError):
    """Any failed Prolific call; ``status`` is the HTTP status (0: no answer)."""

    def __init__(self, message: str, status: int = 0):
        super().__init__(message)
        self.status = status
        self.retry_after: str | None = None  # the answer's Retry-After, if it gave one


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
    """``ProlificClient(base_url, token)``: one method per Prolific endpoint this project uses
    (``endpoints.TABLE``), each answering Prolific's JSON (lists: every item, all pages read)."""

    endpoints = ENDPOINTS  # the rows the methods send by (a test may give one client other rows)

    def __init__(self, base_url: str, token: str, timeout: float | None = None, max_retries: int = 5,
                 backoff: float = 1.0, sleep=time.sleep):
        import httpx

        timeout = DEFAULT_TIMEOUT if timeout is None else timeout
        self.base_url, self.timeout = base_url.rstrip("/") + "/", timeout
        self.max_retries, self.sleep = max_retries, sleep
        self.retry = RetryPolicy(backoff=backoff, max_backoff=60.0, max_retry_after=MAX_RETRY_AFTER)
        self._http = httpx.Client(base_url=self.base_url, timeout=timeout, verify=shared_tls_context(),
                                  headers={"Authorization": f"Token {token}", "Accept": "application/json"})

    def __repr__(self) -> str:
        return f"ProlificClient({self.base_url!r})"

    def close(self) -> None:
        self._http.close()

    def send(self, name: str, *ids: str, json=None, params=None, retry: frozenset | None = None):
        """The response of endpoint ``name`` (its row of ``endpoints``) for ``ids``; ``retry`` narrows which
        failures are sent again (never widens the row's). Raises a ``ProlificError`` for any failure."""
        import httpx

        endpoint: Endpoint = self.endpoints[name]
        path = endpoint.url(*ids)
        retry = endpoint.retry if retry is None else endpoint.retry & retry
        what = f"Prolific {endpoint.method} {path}"
        started = time.monotonic()
        for attempt in range(self.max_retries + 1):
            try:
                response = self._http.request(endpoint.method, path, json=json, params=params)
            except httpx.TransportError as error:
                if 503 not in retry or attempt == self.max_retries:
                    # the tries and the time they took: a silent API held `prolific register` 3.5 minutes
                    raise ProlificServerError(
                        f"{what}: no answer from {self.base_url} ({type(error).__name__}; tried {attempt + 1} "
                        f"time{'s' if attempt else ''} over {time.monotonic() - started:.0f} s, waiting up to "
                        f"{self.timeout:g} s for each)") from None
                self._wait(f"{what}: no answer from {self.base_url} ({type(error).__name__})", attempt,
                           self.retry.wait(attempt + 1))
                continue
            if response.status_code < 400:
                return response
            status = response.status_code
            wait = self.retry.wait(attempt + 1, response.headers.get("Retry-After"))
            if status in retry and attempt < self.max_retries and wait is not None:
                self._wait(f"{what}: HTTP {status}", attempt, wait)
                continue
            cls = _error_class(status)
            hint = {ProlificAuthError: " (the API token was refused: register a valid one with "
                                       "`dialeval prolific register NAME`)",
                    ProlificRateLimited: f" (still rate limited after {attempt} retries; try again later)",
                    ProlificServerError: f" (Prolific failed{f' after {attempt} retries' if attempt else ''})",
                    }.get(cls, "")
            error = cls(f"{what}: HTTP {status}: {_detail(response)}{hint}", status)
            error.retry_after = response.headers.get("Retry-After")
            raise error
        raise AssertionError("unreachable")

    def _wait(self, failed: str, attempt: int, seconds: float) -> None:
        """Say the retry as it begins (stderr: the command's output stays its own), then wait."""
        print(f"{failed}: try {attempt + 1} of {self.max_retries + 1}; trying again in {seconds:.1f} s",
              file=sys.stderr, flush=True)
        self.sleep(seconds)

    def call(self, name: str, *ids: str, json=None, params=None, retry: frozenset | None = None):
        """Endpoint ``name``'s JSON answer (None for an empty one)."""
        response = self.send(name, *ids, json=json, params=params, retry=retry)
        is_json = response.content and "json" in response.headers.get("content-type", "")
        return response.json() if is_json else None

    def results(self, name: str, *ids: str, params=None) -> list[dict]:
        """Every item of list endpoint ``name``, page after page as its row pages (``offset``: ``limit``/``offset``,
        ``page``: ``page``/``page_size``) until Prolific's ``_links.next`` is null (or, where a list carries no
        links, until ``meta.count`` items are read). The next page is asked by number rather than by following
        the ``next`` address, so that the token only ever goes to ``base_url``. A page that brings nothing new
        ends the read (a list that ignores paging would otherwise be read for ever)."""
        by_offset = self.endpoints[name].paging == "offset"
        items: list[dict] = []
        seen: set = set()
        page = 1
        while True:
            paging = {"limit": PAGE_SIZE, "offset": len(items)} if by_offset else {"page": page, "page_size": PAGE_SIZE}
            body = self.call(name, *ids, params={**(params or {}), **paging})
            batch = [item for item in body["results"] or [] if item.get("id") not in seen]
            items.extend(batch)
            seen.update(item.get("id") for item in batch)
            if not batch or not _more_pages(body, len(items), len(batch)):
                return items
            page += 1

    # ---- account, workspaces, projects
    def me(self) -> dict:
        return self.call("me")

    def workspaces(self) -> list[dict]:
        return self.results("workspaces")

    def create_workspace(self, title: str) -> dict:
        return self.call("create_workspace", json={"title": title})

    def balance(self, workspace_id: str) -> dict:
        return self.call("balance", workspace_id)

    def projects(self, workspace_id: str) -> list[dict]:
        return self.results("projects", workspace_id)

    def create_project(self, workspace_id: str, title: str) -> dict:
        return self.call("create_project", workspace_id, json={"title": title})

    # ---- studies
    def project_studies(self, project_id: str) -> list[dict]:
        return self.results("project_studies", project_id)

    def cost(self, reward_minor: int, places: int) -> int:
        """What ``places`` places at ``reward_minor`` cost with Prolific's fees (minor units): the cost
        calculator answers ``total_cost`` only."""
        return self.call("cost", json={"reward": reward_minor, "total_available_places": places})["total_cost"]

    def create_study(self, body: dict) -> dict:
        return self.call("create_study", json=body)

    def study(self, study_id: str) -> dict:
        return self.call("study", study_id)

    def update_study(self, study_id: str, fields: dict, retry: frozenset | None = None) -> dict:
        return self.call("update_study", study_id, json=fields, retry=retry)

    def delete_study(self, study_id: str) -> None:
        self.call("delete_study", study_id)

    def transition_study(self, study_id: str, action: str, retry: frozenset | None = None) -> dict:
        return self.call("transition_study", study_id, json={"action": action}, retry=retry)

    # ---- submissions
    def submissions(self, study_id: str) -> list[dict]:
        return self.results("submissions", params={"study": study_id})

    def submission(self, submission_id: str, retry: frozenset | None = None) -> dict:
        return self.call("submission", submission_id, retry=retry)

    def transition_submission(self, submission_id: str, action: str, message: str | None = None,
                              category: str | None = None, completion_code: str | None = None) -> dict:
        body = {"action": action}
        if action == "REJECT":
            body.update(message=message, rejection_category=category)
        if action == "COMPLETE":
            body["completion_code"] = completion_code
        return self.call("transition_submission", submission_id, json=body)

    # ---- bonuses
    def set_up_bonuses(self, study_id: str, csv_bonuses: str) -> dict:
        """``csv_bonuses``: lines ``PARTICIPANT_ID,AMOUNT`` in major units (nothing is paid yet)."""
        return self.call("set_up_bonuses", json={"study_id": study_id, "csv_bonuses": csv_bonuses})

    def pay_bonuses(self, setup_id: str) -> None:
        self.call("pay_bonuses", setup_id)

    # ---- participant groups
    def groups(self, workspace_id: str) -> list[dict]:
        """The workspace's participant groups that are not deleted (deletes are soft on Prolific)."""
        return self.results("groups", params={"workspace_id": workspace_id, "active": "true"})

    def create_group(self, workspace_id: str, name: str, description: str | None = None) -> dict:
        return self.call("create_group", json={"workspace_id": workspace_id, "name": name,
                                               **({"description": description} if description else {})})

    def delete_group(self, group_id: str) -> None:
        self.call("delete_group", group_id)

    def members(self, group_id: str) -> list[dict]:
        return self.call("members", group_id)["results"]

    def add_members(self, group_id: str, participant_ids: list[str]) -> list[dict]:
        return self.call("add_members", group_id, json={"participant_ids": list(participant_ids)})["results"]

    def remove_members(self, group_id: str, participant_ids: list[str]) -> list[dict]:
        return self.call("remove_members", group_id, json={"participant_ids": list(participant_ids)})["results"]

    # ---- messages and demographics
    def send_message(self, participant_id: str, study_id: str, body: str) -> None:
        self.call("send_message", json={"recipient_id": participant_id, "study_id": study_id, "body": body})

    def demographic_export(self, study_id: str) -> str:
        """The study's demographic export, Prolific's CSV (no filters: the base demographic fields)."""
        return self.send("demographic_export", study_id, json={"filters": []}).text

    # ---- webhooks
    def hook_secrets(self, workspace_id: str) -> list[dict]:
        return self.call("hook_secrets", params={"workspace_id": workspace_id})["results"]

    def create_hook_secret(self, workspace_id: str) -> dict:
        return self.call("create_hook_secret", json={"workspace_id": workspace_id})

    def hook_subscriptions(self, workspace_id: str) -> list[dict]:
        return self.results("hook_subscriptions", params={"workspace_id": workspace_id})

    def create_hook_subscription(self, workspace_id: str, event_type: str, target_url: str) -> tuple[dict, str]:
        """(the subscription, its X-Hook-Secret header: what confirms it)."""
        response = self.send("create_hook_subscription", json={"workspace_id": workspace_id,
                                                               "event_type": event_type, "target_url": target_url})
        return response.json(), response.headers.get("X-Hook-Secret", "")

    def confirm_hook_subscription(self, subscription_id: str, hook_secret: str) -> dict:
        return self.call("confirm_hook_subscription", subscription_id, json={"secret": hook_secret})

    def delete_hook_subscription(self, subscription_id: str) -> None:
        self.call("delete_hook_subscription", subscription_id)
