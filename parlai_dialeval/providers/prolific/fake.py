"""Fake Prolific: a stdlib HTTP server on 127.0.0.1 that keeps state the way Prolific's API does.

Tests point ``mephisto.provider.api_base_url`` and ``completion_url`` at it; researchers run it by hand
to rehearse a study without spending money::

    python -m parlai_dialeval.providers.prolific.fake --port 8765 --token rehearsal-token --balance 500

It holds workspaces (with a balance), projects, studies and their transitions, submissions and theirs,
bonus set-ups (paid by a separate, non-idempotent ``pay``), participant groups, and the study cost
calculator. Hooks for people and tests (not part of Prolific's API):

- ``GET /studies/<id>/start?PROLIFIC_PID=<pid>``: a participant takes a place; redirected to the
  study URL with ``{{%PROLIFIC_PID%}}``, ``{{%STUDY_ID%}}``, ``{{%SESSION_ID%}}`` filled in.
- ``GET /submissions/complete?cc=<code>``: Prolific's completion page (the participant's session cookie,
  or ``&participant=<pid>``, says whose submission): the right code moves it to AWAITING REVIEW; without
  ``cc`` it shows the submission's state (completed by the researcher's server with the COMPLETE
  transition, or still waiting for it: the page reloads itself).
- ``POST /__fake__/faults`` ``{"status": 429, "count": 1, "path": "regex", "method": "POST",
  "retry_after": 1, "after": false, "delay": 0}``: the next ``count`` matching API calls answer ``status``
  (401, 404, 429, 500, 503); with ``after`` the call does its work first and only the answer is lost;
  ``delay`` holds the answer that many seconds (a client's timeout).

Lists page as Prolific's do, each its own way (``LISTS``): submissions and a project's studies by
``page``/``page_size`` (a page past the end is a 404), workspaces, projects and participant groups by
``limit``/``offset``; each ignores the other scheme's parameters, and gives at most 20 a page here
(Prolific's default), with ``meta.count`` and, except workspaces and projects (Prolific's CLI,
client/responses.go), ``_links`` (``next.href`` null on the last page). A submission's list item and its
own record differ as on Prolific (``_listed``, ``_single``). Bonuses paid show in
the submission's ``bonus_payments`` only ``bonus_delay`` seconds later (Prolific pays "in the following
minutes"). Every call is logged with its query, body and answer (``calls``) for the contract tests.
- ``GET /__fake__/state``, ``POST /__fake__/balance`` ``{"available_balance": pence}``,
  ``POST /__fake__/return`` ``{"submission_id": id}`` (the participant returns the study).

It is a stdlib server, not a framework app, so that it starts in milliseconds inside tests and needs
nothing beyond Python. It is longer than our other modules because it is one state machine (studies,
submissions, bonuses and groups change each other's state, as on Prolific); split, each part would need
the others' state.
"""
from __future__ import annotations

import argparse
import itertools
import json
import re
import threading
import time
import uuid
from collections.abc import Callable
from html import escape
from http.cookies import SimpleCookie
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlencode, urlparse

API = "/api/v1/"
REJECTION_CATEGORIES = {"TOO_QUICKLY", "TOO_SLOWLY", "FAILED_INSTRUCTIONS", "INCOMP_LONGITUDINAL", "FAILED_CHECK",
                        "LOW_EFFORT", "MALINGERING", "NO_CODE", "BAD_CODE", "NO_DATA", "UNSUPP_DEVICE", "OTHER"}
STUDY_REQUIRED = ("name", "description", "external_study_url", "prolific_id_option", "completion_codes",
                  "total_available_places", "estimated_completion_time", "reward")
# from state -> {action: to state}
STUDY_TRANSITIONS = {"UNPUBLISHED": {"PUBLISH": "ACTIVE"}, "PUBLISHING": {}, "SCHEDULED": {"STOP": "AWAITING REVIEW"},
                     "AWAITING REVIEW": {"STOP": "AWAITING REVIEW"},
                     "ACTIVE": {"PAUSE": "PAUSED", "STOP": "AWAITING REVIEW"},
                     "PAUSED": {"START": "ACTIVE", "STOP": "AWAITING REVIEW"}}
FREE_PLACE = {"RETURNED", "TIMED-OUT", "SCREENED OUT"}  # submissions in these states give their place back
PAGE_SIZE = 20  # Prolific's default page size, and the most this fake gives in one page
# How each list pages (a handler answers (key, items)): "page" = page/page_size, "offset" = limit/offset;
# links: whether the answer carries ``_links`` (Prolific's CLI, client/responses.go: workspaces and projects
# answer ``meta`` only). Which endpoint pages how: api.py OFFSET_PAGED.
LISTS = {"page+links": ("page", True), "offset+meta": ("offset", False), "offset+links": ("offset", True)}


class ApiError(Exception):
    def __init__(self, status: int, detail: str, headers: dict | None = None):
        super().__init__(detail)
        self.status, self.detail, self.headers = status, detail, headers or {}


class FakeProlificState:
    """Everything the fake knows; every method runs under one lock (the server is threaded)."""

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

    def show_paid_bonuses(self) -> None:
        """Bonuses paid at least ``bonus_delay`` seconds ago appear in their submission's bonus_payments."""
        now, unseen = self.clock(), []
        for due, sub_id, amount in self.unseen_bonuses:
            if due <= now:
                self.submissions[sub_id]["bonus_payments"].append(amount)
            else:
                unseen.append((due, sub_id, amount))
        self.unseen_bonuses = unseen

    def new_id(self, prefix: str) -> str:
        return f"{prefix}{next(self.ids):04d}{uuid.uuid4().hex[:16]}"

    # ------------------------------------------------------------------ hooks
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
                "balances": self.balances, "payments": self.payments, "calls": self.calls,
                "faults": self.faults}

    def excluded(self, study: dict, pid: str) -> str | None:
        """Why ``pid`` may not take part in ``study`` (None when eligible)."""
        for flt in study.get("filters") or []:
            values = flt.get("selected_values") or []
            fid = flt.get("filter_id")
            if fid == "custom_blocklist" and pid in values:
                return "on the study's block list"
            if fid == "custom_allowlist" and pid not in values:
                return "not on the study's allow list"
            groups = [self.groups[g] for g in values if g in self.groups and not self.groups[g]["is_deleted"]]
            if fid == "participant_group_blocklist" and any(pid in g["participants"] for g in groups):
                return "in a blocked participant group"
            if fid == "participant_group_allowlist" and not any(pid in g["participants"] for g in groups):
                return "not in an allowed participant group"
        return None

    def start(self, study_id: str, pid: str) -> tuple[str, dict]:
        study = self.get(self.studies, study_id, "study")
        if study["status"] != "ACTIVE":
            raise ApiError(409, f"study {study_id} is {study['status']}, not ACTIVE")
        allowed = (study.get("submissions_config") or {}).get("max_submissions_per_participant", 1)
        done = sum(1 for s in self.submissions.values() if s["participant_id"] == pid and s["study_id"] == study_id)
        if allowed != -1 and done >= allowed:
            raise ApiError(409, f"participant {pid} already took part in study {study_id}")
        why = self.excluded(study, pid)
        if why:
            raise ApiError(403, f"participant {pid} is not eligible for study {study_id}: {why}")
        taken = sum(1 for s in self.submissions.values() if s["study_id"] == study_id and s["status"] not in FREE_PLACE)
        if taken >= study["total_available_places"]:
            raise ApiError(409, f"study {study_id} has no free places "
                                f"({taken} of {study['total_available_places']} taken)")
        sub = {"id": self.new_id("sub"), "study_id": study_id, "participant_id": pid, "status": "ACTIVE",
               "started_at": _now(), "completed_at": None, "study_code": None, "bonus_payments": []}
        self.submissions[sub["id"]] = sub
        url = study["external_study_url"]
        for key, value in (("PROLIFIC_PID", pid), ("STUDY_ID", study_id), ("SESSION_ID", sub["id"])):
            url = url.replace("{{%" + key + "%}}", value)
        return url, sub

    def own_submission(self, submission_id: str | None, pid: str | None) -> dict:
        """The latest submission of the participant on the completion page."""
        subs = [s for s in self.submissions.values()
                if (submission_id and s["id"] == submission_id) or (pid and s["participant_id"] == pid)]
        if not subs:
            raise ApiError(404, "no submission of yours")
        return subs[-1]

    def complete(self, code: str, submission_id: str | None, pid: str | None) -> dict:
        subs = [s for s in self.submissions.values()
                if (submission_id and s["id"] == submission_id) or (pid and s["participant_id"] == pid)]
        active = [s for s in subs if s["status"] == "ACTIVE"]
        if not active:
            raise ApiError(404, "no active submission of yours to complete")
        sub = active[-1]
        codes = [c["code"] for c in self.studies[sub["study_id"]]["completion_codes"]]
        if code not in codes:
            raise ApiError(400, f"completion code {code!r} is not this study's")
        sub.update(status="AWAITING REVIEW", completed_at=_now(), study_code=code)
        return sub

    # ------------------------------------------------------------------ API
    @staticmethod
    def get(table: dict, key: str, what: str) -> dict:
        if key not in table:
            raise ApiError(404, f"{what} {key} not found")
        return table[key]

    def handle(self, method: str, path: str, query: dict, body: dict, token: str | None):
        if token not in self.tokens:
            raise ApiError(401, "Invalid token.")
        self.show_paid_bonuses()
        parts = [p for p in path[len(API):].split("/") if p]
        route = "/".join(p if not re.match(r"^(ws|prj|stu|sub|bon|grp)\d{4}", p) else "{id}" for p in parts)
        ids = [p for p in parts if re.match(r"^(ws|prj|stu|sub|bon|grp)\d{4}", p)]
        name = re.sub(r"[^a-zA-Z]+", "_", route.replace("{id}", "X")).strip("_")
        handler = getattr(self, f"api_{method.lower()}_{name}", None)
        if handler is None:
            raise ApiError(404, f"no such endpoint: {method} {path}")
        result = handler(*ids, query=query, body=body)
        if isinstance(result, tuple) and result[0] in LISTS:
            return self.page(result[1], query, path, *LISTS[result[0]])
        return result

    def api_get_users_me(self, query, body):
        return {"id": "researcher01", "name": "Fake Researcher", "email": "researcher@example.org"}

    # a handler answering (a key of LISTS, items) is paged by ``handle``
    def api_get_workspaces(self, query, body):
        return "offset+meta", list(self.workspaces.values())

    def api_post_workspaces(self, query, body):
        return 201, self.add_workspace(body.get("title", ""))

    def api_get_workspaces_X_balance(self, ws, query, body):
        self.get(self.workspaces, ws, "workspace")
        return dict(self.balances[ws])

    def api_get_workspaces_X_projects(self, ws, query, body):
        self.get(self.workspaces, ws, "workspace")
        return "offset+meta", [p for p in self.projects.values() if p["workspace"] == ws]

    def api_post_workspaces_X_projects(self, ws, query, body):
        self.get(self.workspaces, ws, "workspace")
        pid = self.new_id("prj")
        self.projects[pid] = {"id": pid, "title": body.get("title", ""), "description": body.get("description", ""),
                              "workspace": ws}
        return 201, self.projects[pid]

    def api_post_study_cost_calculator(self, query, body):
        if not isinstance(body.get("reward"), int) or not isinstance(body.get("total_available_places"), int):
            raise ApiError(400, "reward and total_available_places must be integers (reward in minor units)")
        return {"total_cost": self.cost(body["reward"], body["total_available_places"])}

    def cost(self, reward: int, places: int) -> int:
        return reward * places + round(reward * places * self.fee_rate)

    # Money held for a study, as Prolific holds it: its places' cost is reserved when it is published (and
    # when places are added), so the workspace's available balance is "after removing funds assigned to
    # already active studies" (docs "Get the balance of a workspace"); an approved place is spent; what is
    # left is released once the stopped study has nothing left to review.
    def _wallet(self, study: dict) -> dict:
        return self.balances[self.projects[study["project"]]["workspace"]]

    def _reserve(self, study: dict, places: int) -> None:
        wallet, amount = self._wallet(study), self.cost(study["reward"], places)
        if wallet["available_balance"] < amount:
            raise ApiError(400, f"insufficient balance: {places} place(s) cost {amount}, available "
                                f"{wallet['available_balance']}")
        wallet["available_balance"] -= amount
        self.reserved[study["id"]] = self.reserved.get(study["id"], 0) + amount

    def _spend_place(self, study: dict) -> None:
        amount = min(self.cost(study["reward"], 1), self.reserved.get(study["id"], 0))
        self.reserved[study["id"]] = self.reserved.get(study["id"], 0) - amount
        self._wallet(study)["total_balance"] -= amount

    def held_in_total(self) -> None:
        """Each workspace's total balance: what is available plus what its studies hold."""
        for ws, wallet in self.balances.items():
            wallet["total_balance"] = wallet["available_balance"] + sum(
                held for sid, held in self.reserved.items()
                if sid in self.studies and self.projects[self.studies[sid]["project"]]["workspace"] == ws)

    def _release_if_done(self, study: dict) -> None:
        open_ = any(s["study_id"] == study["id"] and s["status"] in ("RESERVED", "ACTIVE", "AWAITING REVIEW")
                    for s in self.submissions.values())
        if study["id"] in self.stopped and not open_:
            self._wallet(study)["available_balance"] += self.reserved.pop(study["id"], 0)

    def api_post_studies(self, query, body):
        missing = [k for k in STUDY_REQUIRED if k not in body]
        if missing:
            raise ApiError(400, f"missing fields: {', '.join(missing)}")
        if body.get("project") not in self.projects:
            raise ApiError(400, f"unknown project {body.get('project')!r}")
        if not isinstance(body["reward"], int) or body["reward"] <= 0:
            raise ApiError(400, "reward must be a positive integer in minor units")
        hourly = body["reward"] * 60 / max(1, body["estimated_completion_time"])
        if hourly < self.min_hourly_minor:
            raise ApiError(400, f"reward is below the minimum hourly rate "
                                f"({hourly:.0f} < {self.min_hourly_minor} per hour)")
        sid = self.new_id("stu")
        study = dict(body, id=sid, status="UNPUBLISHED", filters=list(body.get("filters") or []))
        self.studies[sid] = study
        return 201, study

    def api_get_projects_X_studies(self, project, query, body):
        self.get(self.projects, project, "project")
        return "page+links", [s for s in self.studies.values() if s["project"] == project]

    def api_get_studies_X(self, sid, query, body):
        return self.get(self.studies, sid, "study")

    def api_patch_studies_X(self, sid, query, body):
        study = self.get(self.studies, sid, "study")
        if study["status"] != "UNPUBLISHED":
            allowed = set(body) <= {"internal_name", "total_available_places"}
            places = study["total_available_places"]
            fewer = body.get("total_available_places", places) < places
            if not allowed or fewer:
                raise ApiError(400, "a published study only takes a new internal_name or more places")
            self._reserve(study, body.get("total_available_places", places) - places)
        study.update(body)
        return study

    def api_delete_studies_X(self, sid, query, body):
        study = self.get(self.studies, sid, "study")
        if study["status"] != "UNPUBLISHED":
            raise ApiError(400, "only unpublished studies can be deleted")
        del self.studies[sid]
        return 204, None

    def api_post_studies_X_transition(self, sid, query, body):
        study = self.get(self.studies, sid, "study")
        action = body.get("action")
        target = STUDY_TRANSITIONS.get(study["status"], {}).get(action)
        if target is None:
            raise ApiError(400, f"cannot {body.get('action')} a study that is {study['status']}")
        if action == "PUBLISH":
            self._reserve(study, study["total_available_places"])
        study["status"] = self.publish_status if action == "PUBLISH" else target
        if action == "STOP":
            self.stopped.add(sid)
            self._release_if_done(study)
        return study

    def api_get_submissions(self, query, body):
        study = (query.get("study") or [None])[0]
        if study is not None:
            self.get(self.studies, study, "study")
        return "page+links", [_listed(s) for s in self.submissions.values() if study is None or s["study_id"] == study]

    def api_get_submissions_X(self, sub_id, query, body):
        return _single(self.get(self.submissions, sub_id, "submission"))

    def api_post_submissions_X_transition(self, sub_id, query, body):
        sub = self.get(self.submissions, sub_id, "submission")
        action = body.get("action")
        if action == "COMPLETE":  # the researcher's server completes it (Prolific's CLI: submission transition)
            if sub["status"] != "ACTIVE":
                raise ApiError(400, f"submission {sub_id} is {sub['status']}, not ACTIVE")
            # Prolific's docs ("Approve or reject a submission"): the code must be one of the study's
            # and its actor the researcher
            codes = [c["code"] for c in self.studies[sub["study_id"]]["completion_codes"]
                     if c.get("actor") == "researcher"]
            if body.get("completion_code") not in codes:
                raise ApiError(400, "completion_code: not a researcher's code of this study")
            sub.update(status="AWAITING REVIEW", completed_at=_now(), study_code=body["completion_code"])
            return _single(sub)
        done = {"APPROVE": "APPROVED", "REJECT": "REJECTED"}.get(action)
        if done is None:
            raise ApiError(400, f"unknown action {action!r}")
        if sub["status"] == done:
            return _single(sub)  # transitions are idempotent
        if sub["status"] != "AWAITING REVIEW":
            raise ApiError(400, f"submission {sub_id} is {sub['status']}, not AWAITING REVIEW")
        if action == "REJECT":
            if len(body.get("message") or "") < 100:
                raise ApiError(400, "message: a rejection needs at least 100 characters")
            if body.get("rejection_category") not in REJECTION_CATEGORIES:
                raise ApiError(400, f"rejection_category: one of {sorted(REJECTION_CATEGORIES)}")
        sub["status"] = done
        study = self.studies[sub["study_id"]]
        if done == "APPROVED":
            self._spend_place(study)
        self._release_if_done(study)
        return _single(sub)

    def api_post_submissions_bonus_payments(self, query, body):
        study = self.get(self.studies, body.get("study_id", ""), "study")
        rows = []
        for line in (body.get("csv_bonuses") or "").strip().splitlines():
            pid, _, amount = line.partition(",")
            if not any(s["participant_id"] == pid.strip() and s["study_id"] == study["id"]
                       for s in self.submissions.values()):
                raise ApiError(400, f"participant {pid.strip()} has no submission in study {study['id']}")
            rows.append((pid.strip(), round(float(amount) * 100)))
        if not rows:
            raise ApiError(400, "csv_bonuses is empty")
        amount = sum(r[1] for r in rows)
        fees = round(amount * self.fee_rate)
        bid = self.new_id("bon")
        self.bonuses[bid] = {"id": bid, "study": study["id"], "rows": rows, "amount": amount, "fees": fees,
                             "vat": 0, "total_amount": amount + fees, "pay_calls": 0}
        return 201, {k: v for k, v in self.bonuses[bid].items() if k not in ("rows", "pay_calls")}

    def api_post_bulk_bonus_payments_X_pay(self, bid, query, body):
        bonus = self.get(self.bonuses, bid, "bonus payment")
        study = self.studies[bonus["study"]]
        ws = self.balances[self.projects[study["project"]]["workspace"]]
        if ws["available_balance"] < bonus["total_amount"]:
            raise ApiError(400, "insufficient balance to pay these bonuses")
        ws["available_balance"] -= bonus["total_amount"]
        ws["total_balance"] -= bonus["total_amount"]
        bonus["pay_calls"] += 1  # paying again pays again: Prolific's pay is not idempotent
        for pid, amount in bonus["rows"]:
            self.payments.append({"participant_id": pid, "amount": amount, "bonus_id": bid, "study_id": study["id"]})
            for sub in self.submissions.values():
                if sub["participant_id"] == pid and sub["study_id"] == study["id"]:
                    self.unseen_bonuses.append((self.clock() + self.bonus_delay, sub["id"], amount))
        return 202, "The bonuses are being paid."

    def api_get_participant_groups(self, query, body):
        ws = (query.get("workspace_id") or [None])[0]
        active = (query.get("active") or [""])[0].lower() == "true"  # deleted groups are listed unless asked
        return "offset+links", [self._group(g) for g in self.groups.values()
                         if not (active and g["is_deleted"]) and (ws is None or g["workspace_id"] == ws)]

    @staticmethod
    def _group(g: dict) -> dict:
        return {k: v for k, v in g.items() if k != "participants"} | {"participant_count": len(g["participants"])}

    def api_post_participant_groups(self, query, body):
        if body.get("workspace_id") not in self.workspaces or not body.get("name"):
            raise ApiError(400, "workspace_id (a known workspace) and name are required")
        gid = self.new_id("grp")
        self.groups[gid] = {"id": gid, "name": body["name"], "workspace_id": body["workspace_id"],
                            "description": body.get("description", ""), "participants": {}, "is_deleted": False}
        return 201, self._group(self.groups[gid])

    def api_delete_participant_groups_X(self, gid, query, body):
        self.get(self.groups, gid, "participant group")["is_deleted"] = True  # deletes are soft on Prolific
        return 204, None

    def api_get_participant_groups_X_participants(self, gid, query, body):
        group = self.get(self.groups, gid, "participant group")
        return {"results": [{"participant_id": p, "datetime_created": created}
                            for p, created in sorted(group["participants"].items())]}

    def api_post_participant_groups_X_participants(self, gid, query, body):
        members = self.get(self.groups, gid, "participant group")["participants"]
        for pid in body.get("participant_ids") or []:
            members.setdefault(pid, _now())
        return self.api_get_participant_groups_X_participants(gid, query, body)

    def api_delete_participant_groups_X_participants(self, gid, query, body):
        group = self.get(self.groups, gid, "participant group")
        for pid in body.get("participant_ids") or []:
            group["participants"].pop(pid, None)
        return self.api_get_participant_groups_X_participants(gid, query, body)


def _single(sub: dict) -> dict:
    """A submission as ``GET submissions/{id}/`` (and its transition) answers it: the participant is
    ``participant``, the code ``entered_code`` (docs "Retrieve a submission"; CLI client/responses.go
    TransitionSubmissionResponse)."""
    return {"id": sub["id"], "study_id": sub["study_id"], "participant": sub["participant_id"],
            "status": sub["status"], "started_at": sub["started_at"], "completed_at": sub["completed_at"],
            "entered_code": sub["study_code"], "bonus_payments": list(sub["bonus_payments"])}


def _listed(sub: dict) -> dict:
    """A submission as an item of ``GET submissions/`` lists it: the documented list fields only, no
    ``bonus_payments`` (docs "List submissions"; Dallinger's prolific.py get_submissions example)."""
    return {"id": sub["id"], "participant_id": sub["participant_id"], "status": sub["status"],
            "started_at": sub["started_at"], "completed_at": sub["completed_at"], "study_code": sub["study_code"]}


def _now() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%S.000000Z", time.gmtime())


def _retry_after(fault: dict) -> dict:
    return {"Retry-After": fault["retry_after"]} if fault.get("retry_after") is not None else {}


class _Handler(BaseHTTPRequestHandler):
    state: FakeProlificState  # set by FakeProlific
    server_version = "FakeProlific/1"

    def log_message(self, fmt, *args):  # quiet: the call log is in the state
        return

    def _send(self, status: int, payload, headers: dict | None = None, content_type="application/json"):
        if payload is None:
            data = b""
        elif isinstance(payload, str) and content_type != "application/json":
            data = payload.encode()
        else:
            data = json.dumps(payload).encode()
        self.send_response(status)
        for key, value in (headers or {}).items():
            self.send_header(key, str(value))
        if data:
            self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _body(self) -> dict:
        length = int(self.headers.get("Content-Length") or 0)
        if not length:
            return {}
        try:
            return json.loads(self.rfile.read(length) or b"{}")
        except json.JSONDecodeError:
            return {}

    def _dispatch(self, method: str):
        url = urlparse(self.path)
        query = parse_qs(url.query)
        body = self._body()
        st = self.state
        delay = 0.0
        with st.lock:
            try:
                if not url.path.startswith(API):
                    return self._hook(method, url.path, query, body)
                status, payload, headers, delay = self._api(method, url.path, query, body)
            except ApiError as error:
                status, payload, headers = error.status, {"error": {"status": error.status, "detail": error.detail}}, \
                    error.headers
        if delay:  # outside the lock: only this answer is late
            time.sleep(delay)
        try:
            self._send(status, payload, headers)
        except (BrokenPipeError, ConnectionResetError):  # the client gave up waiting (its timeout)
            pass

    def _api(self, method, path, query, body) -> tuple[int, object, dict, float]:
        st = self.state
        auth = self.headers.get("Authorization") or ""
        token = auth[len("Token "):] if auth.startswith("Token ") else None
        fault = st.take_fault(method, path)
        call = {"method": method, "path": path, "query": {k: v[0] for k, v in query.items()}, "body": body,
                "time": time.time()}
        st.calls.append(call)
        delay = float(fault.get("delay") or 0) if fault else 0.0
        if fault and not fault.get("after"):
            call["status"] = fault["status"]
            raise ApiError(fault["status"], f"injected fault {fault['status']}", _retry_after(fault))
        try:
            result = st.handle(method, path, query, body, token)
        except ApiError as error:
            call["status"] = error.status
            raise
        status, payload = result if isinstance(result, tuple) else (200, result)
        call["answer"] = json.loads(json.dumps(payload))  # a copy: later changes to the state do not show
        if fault:  # the work is done, but the answer is lost: what makes a 5xx on a payment ambiguous
            call["status"] = fault["status"]
            detail = f"injected fault {fault['status']} (after doing the work)"
            error = {"error": {"status": fault["status"], "detail": detail}}
            return fault["status"], error, _retry_after(fault), delay
        call["status"] = status
        return status, payload, {}, delay

    def _hook(self, method, path, query, body):
        st = self.state
        start = re.fullmatch(r"/studies/([^/]+)/start/?", path)
        if method == "GET" and start:
            url, sub = st.start(start[1], (query.get("PROLIFIC_PID") or [""])[0] or st.new_id("pid"))
            cookie = SimpleCookie()
            cookie["fake_prolific_session"] = sub["id"]
            cookie["fake_prolific_session"]["path"] = "/"
            cookie["fake_prolific_session"]["max-age"] = 86400  # signed in to Prolific across browser restarts
            self._send(302, None, {"Location": url, "Set-Cookie": cookie.output(header="").strip()})
        elif method == "GET" and path.rstrip("/") == "/submissions/complete":
            cookie = SimpleCookie(self.headers.get("Cookie") or "")
            session = cookie["fake_prolific_session"].value if "fake_prolific_session" in cookie else None
            code, pid = (query.get("cc") or [""])[0], (query.get("participant") or [None])[0]
            try:
                sub = st.complete(code, session, pid) if code else st.own_submission(session, pid)
            except ApiError as error:  # a page for people: what went wrong, in words, never raw JSON
                self._send(error.status, f"<html><body><h1 id='no-submission'>Prolific</h1><p>{escape(error.detail)}"
                                         "</p></body></html>", content_type="text/html")
                return
            if sub["status"] == "ACTIVE":
                self._send(200, "<html><head><meta http-equiv='refresh' content='1'></head><body><h1 id='waiting'>"
                                "Waiting for the study to confirm your submission</h1></body></html>",
                           content_type="text/html")
                return
            self._send(200, f"<html><body><h1 id='complete'>Submission complete</h1><p>Study {sub['study_id']}: "
                            f"{sub['status'].lower()}.</p></body></html>", content_type="text/html")
        elif method == "GET" and path == "/__fake__/state":
            self._send(200, st.state())
        elif method == "POST" and path == "/__fake__/faults":
            st.faults.append({"status": int(body["status"]), "count": int(body.get("count", 1)),
                              "path": body.get("path", ""), "retry_after": body.get("retry_after"),
                              "after": bool(body.get("after")), "delay": float(body.get("delay") or 0),
                              **({"method": body["method"].upper()} if body.get("method") else {})})
            self._send(200, {"faults": st.faults})
        elif method == "POST" and path == "/__fake__/balance":
            for balance in st.balances.values():
                balance["available_balance"] = int(body["available_balance"])
            st.held_in_total()
            self._send(200, {"balances": st.balances})
        elif method == "POST" and path == "/__fake__/return":
            st.get(st.submissions, body.get("submission_id", ""), "submission")["status"] = "RETURNED"
            self._send(200, st.submissions[body["submission_id"]])
        else:
            raise ApiError(404, f"no such page: {method} {path}")

    def do_GET(self):
        self._dispatch("GET")

    def do_POST(self):
        self._dispatch("POST")

    def do_PATCH(self):
        self._dispatch("PATCH")

    def do_DELETE(self):
        self._dispatch("DELETE")


class FakeProlific:
    """``with FakeProlific() as fake:`` serves on 127.0.0.1 in a thread; ``fake.api_base_url`` etc."""

    def __init__(self, port: int = 0, **state_kwargs):
        self.state = FakeProlificState(**state_kwargs)
        handler = type("Handler", (_Handler,), {"state": self.state})
        self.httpd = ThreadingHTTPServer(("127.0.0.1", port), handler)
        self.httpd.daemon_threads = True
        self.thread: threading.Thread | None = None

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.httpd.server_address[1]}"

    @property
    def api_base_url(self) -> str:
        return self.base_url + API

    @property
    def completion_url(self) -> str:
        return self.base_url + "/submissions/complete"

    def study_url(self, study_id: str, participant_id: str) -> str:
        """The address a participant opens on Prolific to take part (``/studies/<id>/start``)."""
        return f"{self.base_url}/studies/{study_id}/start?{urlencode({'PROLIFIC_PID': participant_id})}"

    def inject(self, status: int, count: int = 1, path: str = "", method: str | None = None,
               retry_after: float | None = None, after: bool = False, delay: float = 0.0) -> None:
        """The next ``count`` API calls matching ``path`` (a regex) and ``method`` answer ``status``;
        ``after``: only once the work is done (a lost answer); ``delay``: that many seconds late."""
        with self.state.lock:
            self.state.faults.append({"status": status, "count": count, "path": path, "retry_after": retry_after,
                                      "after": after, "delay": delay, **({"method": method.upper()} if method else {})})

    def start(self) -> "FakeProlific":
        self.thread = threading.Thread(target=self.httpd.serve_forever, name="fake-prolific", daemon=True)
        self.thread.start()
        return self

    def stop(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()

    def __enter__(self) -> "FakeProlific":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description="A fake Prolific API on 127.0.0.1, to rehearse a study without money")
    parser.add_argument("--port", type=int, default=8765, help="port to listen on (default 8765)")
    parser.add_argument("--token", default="rehearsal-token", help="the API token the fake accepts")
    parser.add_argument("--balance", type=float, default=500.0, help="workspace balance in major units (default 500)")
    parser.add_argument("--currency", default="GBP", help="workspace currency (default GBP)")
    args = parser.parse_args(argv)
    fake = FakeProlific(args.port, token=args.token, balance=round(args.balance * 100), currency=args.currency)
    print(f"Fake Prolific on {fake.base_url} (token {args.token!r}, balance {args.balance:.2f} {args.currency})\n"
          f"  mephisto.provider.api_base_url={fake.api_base_url}\n"
          f"  mephisto.provider.completion_url={fake.completion_url}\n"
          f"  studies and submissions: {fake.base_url}/__fake__/state\n"
          f"  take part: {fake.base_url}/studies/<STUDY_ID>/start?PROLIFIC_PID=<any id>\n"
          "Ctrl-C stops it (its state is kept in memory only).", flush=True)
    try:
        fake.httpd.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        fake.httpd.server_close()


if __name__ == "__main__":
    main()
