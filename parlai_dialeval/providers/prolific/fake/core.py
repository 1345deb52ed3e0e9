"""The fake Prolific's state and its routing: every request is matched to its row of ``endpoints.TABLE`` and
answered by the handler of the row's name (``api_<name>``), paged and with the status the row says; the
handlers live in the mixins beside this module (studies, people, hooks), all on this one state under one lock.
"""
from __future__ import annotations

import itertools
import re
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from urllib.parse import urlencode

from parlai_dialeval.providers.prolific.endpoints import route

API = "/api/v1/"
PAGE_SIZE = 20  # Prolific's default page size, and the most this fake gives in one page


class ApiError(Exception):
    def __init__(self, status: int, detail: str, headers: dict | None = None):
        super().__init__(detail)
        self.status, self.detail, self.headers = status, detail, headers or {}


@dataclass
class Reply:
    """A handler's answer with headers of its own (the status is its endpoint's)."""
    payload: object
    headers: dict = field(default_factory=dict)


class FakeProlificBase:
    """Everything the fake knows; every method runs under ``lock`` (the server is threaded)."""

    def __init__(self, token: str = "fake-token", balance: int = 100_000, currency: str = "GBP",
                 fee_rate: float = 0.333, min_hourly_minor: int | None = None, bonus_delay: float = 0.0,
                 clock: Callable[[], float] = time.time):
        self.lock = threading.RLock()
        self.tokens = {token}
        self.fee_rate, self.bonus_delay = fee_rate, bonus_delay
        self.clock = clock  # times bonus_delay: a test moves its own clock rather than sleeping
        # Prolific's minimum: 6 GBP or 8 USD an hour
        self.min_hourly_minor = min_hourly_minor or {"USD": 800}.get(currency, 600)
        self.publish_status = "ACTIVE"  # what PUBLISH moves a study to (tests set PUBLISHING or SCHEDULED)
        self.unseen_bonuses: list[tuple[float, str, int]] = []  # (visible at, submission id, amount)
        self.ids = itertools.count(1)
        self.workspaces: dict[str, dict] = {}
        self.projects: dict[str, dict] = {}
        self.studies: dict[str, dict] = {}
        self.submissions: dict[str, dict] = {}
        self.bonuses: dict[str, dict] = {}
        self.groups: dict[str, dict] = {}
        self.messages: list[dict] = []  # every message sent: recipient_id, study_id, body
        self.demographics: dict[str, dict] = {}  # participant id -> their demographic fields (tests set them)
        self.secrets: dict[str, dict] = {}  # workspace id -> its one webhook secret
        self.subscriptions: dict[str, dict] = {}
        self.deliveries: list[dict] = []  # every webhook event sent: headers, body, answer (status, text)
        self.faults: list[dict] = []
        self.calls: list[dict] = []  # every API call: method, path, status, time
        self.payments: list[dict] = []  # every bonus actually paid: participant_id, amount, setup id
        self.balances: dict[str, dict] = {}
        self.reserved: dict[str, int] = {}  # study id -> funds held for its places (minor units)
        self.stopped: set[str] = set()  # studies the researcher stopped
        self.add_workspace("My workspace", currency, balance)

    def add_workspace(self, title: str, currency: str = "GBP", balance: int = 0) -> dict:
        ws = self.new_id("ws")
        self.workspaces[ws] = {"id": ws, "title": title, "description": "", "users": []}
        self.balances[ws] = {"currency_code": currency, "total_balance": balance, "available_balance": balance}
        return self.workspaces[ws]

    def new_id(self, prefix: str) -> str:
        return f"{prefix}{next(self.ids):04d}{uuid.uuid4().hex[:16]}"

    @staticmethod
    def get(table: dict, key: str, what: str) -> dict:
        if key not in table:
            raise ApiError(404, f"{what} {key} not found")
        return table[key]

    def page(self, items: list, query: dict, path: str, scheme: str, links: bool) -> dict:
        """One page of a list, as Prolific answers it: ``scheme`` "page" reads ``page``/``page_size`` only
        (a page past the end is a 404), "offset" reads ``limit``/``offset`` only (past the end: no results);
        the other scheme's parameters are ignored, as Prolific ignores them (docs/prolific_contract.md)."""
        def number(key, default):
            try:
                return int((query.get(key) or [default])[0])
            except ValueError:
                raise ApiError(400, f"{key} must be an integer") from None

        by_offset = scheme == "offset"
        size = max(1, min(number("limit" if by_offset else "page_size", PAGE_SIZE), PAGE_SIZE))
        if by_offset:
            start = max(0, number("offset", 0))
        else:
            page, last = number("page", 1), max(1, -(-len(items) // size))
            if page < 1 or page > last:
                raise ApiError(404, "Invalid page.")
            start = (page - 1) * size
        body = {"results": items[start:start + size], "meta": {"count": len(items)}}
        if links:
            def href(at):
                moved = {"limit": size, "offset": at} if by_offset else {"page": at // size + 1, "page_size": size}
                return f"{path}?{urlencode({**{k: v[0] for k, v in query.items()}, **moved})}"

            body["_links"] = {"self": {"href": href(start), "title": "Current"},
                              "next": {"href": href(start + size) if start + size < len(items) else None,
                                       "title": "Next"},
                              "previous": {"href": href(max(0, start - size)) if start > 0 else None,
                                           "title": "Previous"},
                              "last": {"href": href(max(0, len(items) - 1) // size * size), "title": "Last"}}
        return body

    def take_fault(self, method: str, path: str) -> dict | None:
        for fault in self.faults:
            same_method = fault.get("method", method).upper() == method
            if fault["count"] > 0 and same_method and re.search(fault.get("path", ""), path):
                fault["count"] -= 1
                return fault
        return None

    def state(self) -> dict:
        def plain(obj):
            return {k: sorted(v) if k == "participants" else v for k, v in obj.items()}

        return {"workspaces": list(self.workspaces.values()), "projects": list(self.projects.values()),
                "studies": list(self.studies.values()), "submissions": list(self.submissions.values()),
                "bonuses": list(self.bonuses.values()), "groups": [plain(g) for g in self.groups.values()],
                "balances": self.balances, "payments": self.payments, "messages": self.messages,
                "subscriptions": list(self.subscriptions.values()), "deliveries": self.deliveries,
                "calls": self.calls, "faults": self.faults}

    def handle(self, method: str, path: str, query: dict, body: dict, token: str | None) -> tuple[int, object, dict]:
        """(status, payload, headers) of one API request (``path`` with /api/v1/), by its endpoint's row."""
        if token not in self.tokens:
            raise ApiError(401, "Invalid token.")
        self.show_paid_bonuses()
        found = route(method, path[len(API):])
        if found is None:
            raise ApiError(404, f"no such endpoint: {method} {path}")
        endpoint, ids = found
        result = getattr(self, f"api_{endpoint.name}")(*ids, query=query, body=body)
        headers = {}
        if isinstance(result, Reply):
            result, headers = result.payload, result.headers
        if endpoint.paging:
            result = self.page(result, query, path, endpoint.paging, endpoint.links)
        return endpoint.status, result, headers

    # ------------------------------------------------------------------ users, workspaces, projects
    def api_me(self, query, body):
        return {"id": "researcher01", "name": "Fake Researcher", "email": "researcher@example.org"}

    def api_workspaces(self, query, body):
        return list(self.workspaces.values())

    def api_create_workspace(self, query, body):
        return self.add_workspace(body.get("title", ""))

    def api_balance(self, ws, query, body):
        self.get(self.workspaces, ws, "workspace")
        return dict(self.balances[ws])

    def api_projects(self, ws, query, body):
        self.get(self.workspaces, ws, "workspace")
        return [p for p in self.projects.values() if p["workspace"] == ws]

    def api_create_project(self, ws, query, body):
        self.get(self.workspaces, ws, "workspace")
        pid = self.new_id("prj")
        self.projects[pid] = {"id": pid, "title": body.get("title", ""), "description": body.get("description", ""),
                              "workspace": ws}
        return self.projects[pid]


def now_text() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%S.000000Z", time.gmtime())
