"""Prolific's API as its documentation and three clients that run against the real API describe it: the
request bodies we may send and the answers we may get, endpoint by endpoint. Our own fixtures, written from
reading (never copying):

- CLI: github prolific-oss/cli @ 4596a2fba604faa1b570d318095fca3f34d5a8f2 (Prolific's own client):
  client/responses.go (list envelope ``results`` + ``_links`` {self,next,previous,last}{href,title} + ``meta``
  {count}; MeResponse; WorkspaceBalanceResponse; CreateBonusPaymentsResponse; ListWorkspacesResponse and
  ListProjectsResponse with ``meta`` only), client/payloads.go (CreateBonusPaymentsPayload,
  TransitionSubmissionPayload), cmd/submission/transition.go (actions APPROVE, COMPLETE with
  ``completion_code``, REJECT), client/client.go:1328-1358 (bonus set-up answers 201, pay answers 202),
  model/study.go (Study, CreateStudy, SubmissionsConfig, CompletionCode, statuses), model/submission.go,
  model/participant_group.go, model/model.go (Workspace, Project), model/filter.go; client/client.go GetWorkspaces,
  GetProjects, GetParticipantGroups (``limit``/``offset``: how these three lists page).
- Mephisto: github facebookresearch/Mephisto tag v1.5.2 (672a8f2c02cb88b6e1883d3f27db24d6db935682),
  mephisto/abstractions/providers/prolific/: api/studies.py:117-133 (the cost calculator takes ``reward`` and
  ``total_available_places`` and answers ``total_cost``), api/constants.py (study and submission statuses,
  PROCESSING), prolific_utils.py:377-441 (study body, ``submissions_config``).
- Dallinger: github Dallinger/Dallinger @ 7e9c27924b34f392748cfd8ad8081fa76d9195ab, dallinger/prolific.py:
  192-222 and 627-642 (``page``/``page_size`` on submissions/ and studies/, stop when ``_links.next.href`` is
  null, a page past the end is a 404; verified there against the live API), 249-252 (``workspaces/?limit=1000``:
  "without the limit param ... limited to 20"), 156-182 and 615-656 (a list item names the participant
  ``participant_id``, ``GET submissions/{id}/`` names it ``participant``), 528-556 (bonus CSV "PID,0.50" in
  major units).
- Docs: docs.prolific.com api-reference: "Pay bonuses" (not idempotent, 202, paid in the following
  minutes), "Get participant groups" (``active`` query: not deleted), "Approve or reject a submission"
  (submissions/transition-submission: ``action`` COMPLETE with ``completion_code``, "required if the action
  is 'COMPLETE'. The completion code must match a value provided when creating the study, and the actor
  must have been set to researcher"; the transition is idempotent). The CLI's CompletionCode
  (model/study.go) has no ``actor``: the docs say more, and we follow them (``actor: researcher`` on the
  study's code, checked below).

Added for issue 53 (messages, panels, demographics, webhooks):
- CLI client/client.go SendMessage + client/payloads.go SendMessagePayload (``recipient_id``, ``study_id``,
  ``body``); docs "Send a message" (all three required; "The message has been sent", no body read).
- CLI docs/examples/study-with-participant-group-allow-list.json (a ``participant_group_allowlist`` filter;
  completion code actions ``AUTOMATICALLY_APPROVE`` and ``ADD_TO_PARTICIPANT_GROUP`` with ``participant_group``);
  Dallinger prolific.py:745-764 (the same actions in its dev service's study).
- CLI ExportDemographics (POST, answers the CSV as is); docs "Export demographic data" (body ``filters``; the
  base fields; the example answer begins ``Submission id,Participant id,Status,Started at,Completed at``).
- CLI GetHookSecrets, CreateHookSecret (201), GetHooks (``workspace_id``, ``is_enabled``, ``limit``/``offset``;
  ListHooksResponse: ``results`` + ``meta``), CreateHookSubscription (201, the ``X-Hook-Secret`` header),
  ConfirmHookSubscription (``{secret}``), DeleteHookSubscription (204); model/hook.go (Hook: ``id``,
  ``event_type``, ``target_url``, ``is_enabled``, ``workspace_id``), model/model.go (Secret: ``id``, ``value``,
  ``workspace_id``). docs "Create a subscription" (``event_type``, ``target_url``, ``workspace_id`` required,
  ``is_enabled`` optional; its example answer lists ``results``, the CLI decodes one Hook: we follow the CLI,
  which runs against the API, and accept either), "Monitoring study progress" (target_url https and public;
  confirm with the X-Hook-Secret).
- Events (``EVENTS``, ``event_problems``): docs "Receiving" (``submission.status.change``: ``resource_id``,
  ``event_type``, ``participant_id``, ``status``), "Verifying" (``X-Prolific-Request-Signature``: base64 of an
  HMAC-SHA256 over ``X-Prolific-Request-Timestamp`` + body with the workspace's secret; the timestamp a UNIX
  time), "Idempotency and the X-Event-ID header" (the same id on a redelivery), "Handling event order with
  X-Timestamp" (a UNIX time; order not guaranteed).

``problems(call)`` checks one call of the fake's log (method, path, query, body, status, answer): an
unknown endpoint, a field we send that Prolific does not take, a field missing or of the wrong type, and an
answer field Prolific does not send (so the fake cannot invent one) all come back as lines.
"""
from __future__ import annotations

import base64
import csv
import io
import json
import re
from dataclasses import dataclass, field

API = "/api/v1/"
ID = r"[A-Za-z0-9]+"
INT = (int,)
STR = (str,)
LIST = (list,)
DICT = (dict,)
NUMBER = (int, float)
NULLABLE_STR = (str, type(None))


@dataclass(frozen=True)
class Shape:
    """A JSON object: fields it must have and may have, with their types."""

    required: dict = field(default_factory=dict)
    optional: dict = field(default_factory=dict)

    def problems(self, obj, what: str) -> list[str]:
        if not isinstance(obj, dict):
            return [f"{what}: expected an object, got {type(obj).__name__}"]
        known = {**self.optional, **self.required}
        out = [f"{what}: field {k!r} is not in the contract" for k in obj if k not in known]
        out += [f"{what}: field {k!r} is missing" for k in self.required if k not in obj]
        out += [f"{what}: field {k!r} should be {'/'.join(t.__name__ for t in known[k])}, got {type(v).__name__}"
                for k, v in obj.items() if k in known and known[k] and
                (not isinstance(v, known[k]) or (isinstance(v, bool) and bool not in known[k]))]
        return out


@dataclass(frozen=True)
class Endpoint:
    method: str
    path: str  # regex after /api/v1/
    body: Shape | None = None  # None: no body is sent
    query: frozenset = frozenset()
    answer: Shape | None = None  # the object answered (of each item, for lists)
    paged: str = ""  # "links": results + _links + meta; "meta": results + meta; "plain": results only
    statuses: frozenset = frozenset({200})
    check: object = None  # extra check of the body: body -> list of problems
    text: bool = False  # answers CSV text, not JSON


ME = Shape({"id": STR}, {"email": STR, "first_name": STR, "last_name": STR, "name": STR, "username": STR,
                         "user_type": STR, "currency_code": STR, "balance": INT, "available_balance": INT})
WORKSPACE = Shape({"id": STR, "title": STR}, {"description": STR, "users": LIST})
PROJECT = Shape({"id": STR, "title": STR}, {"description": STR, "workspace": STR, "owner": STR, "users": LIST})
BALANCE = Shape({"currency_code": STR, "available_balance": INT},
                {"total_balance": INT, "balance_breakdown": DICT, "available_balance_breakdown": DICT})
COMPLETION_CODE = Shape({"code": STR, "code_type": STR, "actions": LIST}, {"actor": STR})
SUBMISSIONS_CONFIG = Shape({}, {"max_submissions_per_participant": INT, "max_concurrent_submissions": INT,
                                "auto_rejection_categories": LIST})
FILTER = Shape({"filter_id": STR}, {"selected_values": LIST, "selected_range": DICT, "weightings": DICT, "id": STR,
                                    "title": STR, "description": STR, "question": STR, "type": STR, "data_type": STR})
CREATE_STUDY = {  # CLI model/study.go CreateStudy (reward and minutes as integers: minor units, minutes)
    "name": STR, "internal_name": STR, "description": STR, "external_study_url": STR, "prolific_id_option": STR,
    "completion_code": STR, "completion_option": STR, "completion_codes": LIST, "total_available_places": INT,
    "estimated_completion_time": INT, "maximum_allowed_time": INT, "reward": INT, "device_compatibility": LIST,
    "study_type": STR, "peripheral_requirements": LIST, "study_labels": LIST, "submissions_config": DICT,
    "eligibility_requirements": LIST, "filters": LIST, "filter_set_id": STR, "project": STR,
    "credential_pool_id": STR}
STUDY = Shape({"id": STR, "status": STR}, {  # CLI model/study.go Study, plus what a created study echoes back
    **CREATE_STUDY, "date_created": STR, "can_auto_review": (bool,), "completion_url": STR, "published_at": None,
    "started_publishing_at": None, "award_points": INT, "presentment_currency_code": STR, "currency_code": STR,
    "researcher": DICT, "average_reward_per_hour": NUMBER, "places_taken": INT, "estimated_reward_per_hour": NUMBER,
    "_ref": None, "total_cost": NUMBER, "publish_at": None, "is_pilot": (bool,), "is_underpaying": None,
    "reward": NUMBER})
# One submission, GET submissions/{id}/ and its transition (docs "Retrieve a submission"; CLI
# TransitionSubmissionResponse): the participant is ``participant``, and only here are ``bonus_payments``.
SUBMISSION = Shape({"id": STR, "status": STR, "participant": STR}, {
    "study_id": STR, "started_at": STR, "completed_at": NULLABLE_STR, "entered_code": NULLABLE_STR,
    "parent_study_id": NULLABLE_STR, "bonus_payments": LIST, "return_requested": NULLABLE_STR})
# An item of GET submissions/ (docs "List submissions", "basic information ... study id, participant id, status
# and start timestamp"; Dallinger get_submissions' example; the docs' SubmissionShort of a study's list):
# the participant is ``participant_id``; no bonus_payments.
SUBMISSION_ITEM = Shape({"id": STR, "status": STR, "participant_id": STR}, {
    "study_id": STR, "started_at": STR, "completed_at": NULLABLE_STR, "study_code": NULLABLE_STR,
    "has_siblings": (bool,), "return_requested": NULLABLE_STR})
GROUP = Shape({"id": STR, "name": STR}, {"project_id": NULLABLE_STR, "workspace_id": STR, "description": STR,
                                         "participant_count": INT, "is_deleted": (bool,)})
MEMBER = Shape({"participant_id": STR}, {"datetime_created": STR})
BONUS_SETUP = Shape({"id": STR}, {"study": STR, "amount": NUMBER, "fees": NUMBER, "vat": NUMBER,
                                  "total_amount": NUMBER})
MEMBERS_BODY = Shape({"participant_ids": LIST})
SECRET = Shape({"id": STR, "value": STR, "workspace_id": STR})
HOOK = Shape({"id": STR, "event_type": STR, "target_url": STR}, {"is_enabled": (bool,), "workspace_id": STR})
HOOK_EVENT_TYPES = {"study.status.change", "submission.status.change", "study.progress.change",
                    "study.has_high_return_rate", "participant.submission.created"}
# docs "The submission object" and "Submission statuses explained", Mephisto api/constants.py
SUBMISSION_STATUSES = {"RESERVED", "ACTIVE", "TIMED-OUT", "AWAITING REVIEW", "APPROVED", "RETURNED", "REJECTED",
                       "SCREENED OUT", "PARTIALLY APPROVED", "PROCESSING"}
CODE_ACTIONS = {"MANUALLY_REVIEW", "AUTOMATICALLY_APPROVE", "ADD_TO_PARTICIPANT_GROUP",
                "REMOVE_FROM_PARTICIPANT_GROUP", "REQUEST_RETURN", "DYNAMIC_PAYMENT"}
# Each list takes one paging scheme (api.py OFFSET_PAGED, with its sources): the other's parameters are ignored
# by Prolific, so sending them is a contract violation (it would read the first page again and again).
PAGE_QUERY = frozenset({"page", "page_size", "ordering"})
OFFSET_QUERY = frozenset({"limit", "offset"})


def _study_body(body) -> list[str]:
    out = [p for c in body.get("completion_codes") or [] for p in COMPLETION_CODE.problems(c, "completion code")]
    out += [f"completion code actor: {c['actor']!r} is not participant or researcher"
            for c in body.get("completion_codes") or [] if c.get("actor", "participant") not in ("participant",
                                                                                                 "researcher")]
    for code in body.get("completion_codes") or []:
        for action in code.get("actions") or [] if isinstance(code, dict) else []:
            if action.get("action") not in CODE_ACTIONS:
                out.append(f"completion code action {action.get('action')!r} is not Prolific's")
            if action.get("action") == "ADD_TO_PARTICIPANT_GROUP" and not isinstance(action.get("participant_group"),
                                                                                      str):
                out.append("ADD_TO_PARTICIPANT_GROUP: no participant_group (a group id)")
            out += [f"completion code action: field {k!r} is not in the contract" for k in action
                    if k not in ("action", "participant_group")]
    out += [p for f in body.get("filters") or [] for p in FILTER.problems(f, "filter")]
    out += SUBMISSIONS_CONFIG.problems(body.get("submissions_config", {}), "submissions_config")
    if "{{%PROLIFIC_PID%}}" not in body.get("external_study_url", "{{%PROLIFIC_PID%}}"):
        out.append("external_study_url: no {{%PROLIFIC_PID%}} placeholder")
    return out


def _bonus_csv(body) -> list[str]:
    lines = (body.get("csv_bonuses") or "").strip().splitlines()
    return [f"csv_bonuses: {line!r} is not 'PARTICIPANT_ID,AMOUNT' in major units with 2 decimals"
            for line in lines if not re.fullmatch(r"[^,\s]+,\d+\.\d\d", line.strip())] or \
        ([] if lines else ["csv_bonuses: empty"])


def _one_of(key, values):
    def check(body):
        return [] if body.get(key) in values else [f"{key}: {body.get(key)!r} is not one of {sorted(values)}"]
    return check


ENDPOINTS = [
    Endpoint("GET", r"users/me/", answer=ME),
    Endpoint("GET", r"workspaces/", query=OFFSET_QUERY, answer=WORKSPACE, paged="meta"),
    Endpoint("POST", r"workspaces/", body=Shape({"title": STR}, {"description": STR}), answer=WORKSPACE,
             statuses=frozenset({201})),
    Endpoint("GET", rf"workspaces/{ID}/balance/", answer=BALANCE),
    Endpoint("GET", rf"workspaces/{ID}/projects/", query=OFFSET_QUERY, answer=PROJECT, paged="meta"),
    Endpoint("POST", rf"workspaces/{ID}/projects/", body=Shape({"title": STR}, {"description": STR}), answer=PROJECT,
             statuses=frozenset({201})),
    Endpoint("GET", rf"projects/{ID}/studies/", query=PAGE_QUERY, answer=STUDY, paged="links"),
    Endpoint("POST", r"study-cost-calculator/", body=Shape({"reward": INT, "total_available_places": INT}),
             answer=Shape({"total_cost": NUMBER})),
    Endpoint("POST", r"studies/", body=Shape({k: CREATE_STUDY[k] for k in (
        "name", "description", "external_study_url", "prolific_id_option", "completion_codes",
        "total_available_places", "estimated_completion_time", "reward")}, CREATE_STUDY), answer=STUDY,
        statuses=frozenset({201}), check=_study_body),
    Endpoint("GET", rf"studies/{ID}/", answer=STUDY),
    Endpoint("PATCH", rf"studies/{ID}/", body=Shape({}, {"total_available_places": INT, "internal_name": STR,
                                                        "credential_pool_id": STR}), answer=STUDY),
    Endpoint("DELETE", rf"studies/{ID}/", statuses=frozenset({204})),
    Endpoint("POST", rf"studies/{ID}/transition/", body=Shape({"action": STR}), answer=STUDY,
             check=_one_of("action", {"PUBLISH", "START", "PAUSE", "STOP"})),
    Endpoint("GET", r"submissions/", query=PAGE_QUERY | {"study"}, answer=SUBMISSION_ITEM, paged="links"),
    Endpoint("GET", rf"submissions/{ID}/", answer=SUBMISSION),
    Endpoint("POST", rf"submissions/{ID}/transition/", body=Shape({"action": STR}, {
        "message": STR, "rejection_category": STR, "completion_code": STR, "completion_code_data": DICT}),
        answer=SUBMISSION, check=_one_of("action", {"APPROVE", "REJECT", "COMPLETE"})),
    Endpoint("POST", r"submissions/bonus-payments/", body=Shape({"study_id": STR, "csv_bonuses": STR}),
             answer=BONUS_SETUP, statuses=frozenset({201}), check=_bonus_csv),
    Endpoint("POST", rf"bulk-bonus-payments/{ID}/pay/", statuses=frozenset({202})),
    Endpoint("GET", r"participant-groups/", query=OFFSET_QUERY | {"workspace_id", "project_id", "active"},
             answer=GROUP, paged="links"),
    Endpoint("POST", r"participant-groups/", body=Shape({"name": STR}, {
        "workspace_id": STR, "description": STR, "participant_ids": LIST}), answer=GROUP, statuses=frozenset({201})),
    Endpoint("DELETE", rf"participant-groups/{ID}/", statuses=frozenset({204})),
    Endpoint("GET", rf"participant-groups/{ID}/participants/", answer=MEMBER, paged="plain"),
    Endpoint("POST", rf"participant-groups/{ID}/participants/", body=MEMBERS_BODY, answer=MEMBER, paged="plain"),
    Endpoint("DELETE", rf"participant-groups/{ID}/participants/", body=MEMBERS_BODY, answer=MEMBER, paged="plain"),
    Endpoint("POST", r"messages/", body=Shape({"recipient_id": STR, "study_id": STR, "body": STR}),
             statuses=frozenset({200, 201, 204})),
    Endpoint("POST", rf"studies/{ID}/demographic-export/", body=Shape({}, {"filters": LIST}), text=True),
    Endpoint("GET", r"hooks/secrets/", query=frozenset({"workspace_id"}), answer=SECRET, paged="plain"),
    Endpoint("POST", r"hooks/secrets/", body=Shape({"workspace_id": STR}), answer=SECRET, statuses=frozenset({201})),
    Endpoint("GET", r"hooks/subscriptions/", query=OFFSET_QUERY | {"workspace_id", "is_enabled"}, answer=HOOK,
             paged="meta"),
    Endpoint("POST", r"hooks/subscriptions/", body=Shape({"event_type": STR, "target_url": STR, "workspace_id": STR},
                                                        {"is_enabled": (bool,)}),
             answer=HOOK, statuses=frozenset({201}), check=_one_of("event_type", HOOK_EVENT_TYPES)),
    Endpoint("POST", rf"hooks/subscriptions/{ID}/", body=Shape({"secret": STR}), answer=HOOK),
    Endpoint("DELETE", rf"hooks/subscriptions/{ID}/", statuses=frozenset({204})),
]
# the demographic export's first columns (docs "Export demographic data", its example answer)
DEMOGRAPHIC_HEADER = ("Submission id", "Participant id", "Status", "Started at", "Completed at")
LINK = Shape({"href": NULLABLE_STR}, {"title": STR})
ERROR = Shape({"status": INT}, {"title": STR, "error_code": INT, "detail": None, "additional_information": STR})


def endpoint(method: str, path: str) -> Endpoint | None:
    rest = path[len(API):] if path.startswith(API) else path
    for ep in ENDPOINTS:
        if ep.method == method and re.fullmatch(ep.path, rest):
            return ep
    return None


def problems(call: dict) -> list[str]:
    """What in one logged call (the fake's ``calls``) breaks the contract."""
    what = f"{call['method']} {call['path']}"
    ep = endpoint(call["method"], call["path"])
    if ep is None:
        return [f"{what}: not an endpoint of the contract"]
    out = [f"{what}: query {k!r} not taken" for k in call.get("query", {}) if k not in ep.query]
    body = call.get("body") or {}
    if ep.body is None:
        out += [f"{what}: sends a body, the endpoint takes none"] if body else []
    else:
        out += [f"{what}: {p}" for p in ep.body.problems(body, "request") + (ep.check(body) if ep.check else [])]
    status = call.get("status")
    if status is None or status >= 400 or "answer" not in call:
        return out  # a refused call: its error body was checked by the client's parser only
    if status not in ep.statuses:
        out.append(f"{what}: answered {status}, Prolific answers {sorted(ep.statuses)}")
    answer = call["answer"]
    if ep.text:
        header = tuple(next(csv.reader(io.StringIO(answer))) if isinstance(answer, str) and answer else ())
        return out + ([] if header[:len(DEMOGRAPHIC_HEADER)] == DEMOGRAPHIC_HEADER else
                      [f"{what}: answer: CSV header {header[:5]} is not Prolific's export's"])
    if ep.answer is None:
        return out
    if not ep.paged:
        return out + [f"{what}: {p}" for p in ep.answer.problems(answer, "answer")]
    envelope = {"plain": Shape({"results": LIST}), "meta": Shape({"results": LIST, "meta": DICT}),
                "links": Shape({"results": LIST, "meta": DICT, "_links": DICT})}[ep.paged]
    out += [f"{what}: {p}" for p in envelope.problems(answer, "list")]
    for key, link in (answer.get("_links") or {}).items() if isinstance(answer, dict) else ():
        out += [f"{what}: {p}" for p in LINK.problems(link, f"_links.{key}")] if key in (
            "self", "next", "previous", "last") else [f"{what}: _links.{key} is not in the contract"]
    for item in answer.get("results") or [] if isinstance(answer, dict) else ():
        out += [f"{what}: {p}" for p in ep.answer.problems(item, "item")]
    return out


def violations(calls: list[dict], deliveries: list[dict] = ()) -> list[str]:
    return sorted({p for call in calls for p in problems(call)} | {p for d in deliveries for p in event_problems(d)})


# ------------------------------------------------------------------ webhook events (what Prolific sends us)
EVENTS = {"submission.status.change": Shape({"resource_id": STR, "event_type": STR, "participant_id": STR,
                                             "status": STR}),
          "study.status.change": Shape({"resource_id": STR, "event_type": STR, "status": STR}, {"metadata": DICT})}
EVENT_HEADERS = ("X-Prolific-Request-Signature", "X-Prolific-Request-Timestamp", "X-Event-ID", "X-Timestamp")


def event_problems(delivery: dict) -> list[str]:
    """What in one webhook delivery (the fake's ``deliveries``: headers and body) Prolific would not send."""
    headers = {k.lower(): v for k, v in delivery["headers"].items()}
    out = [f"event: header {h} is missing" for h in EVENT_HEADERS if h.lower() not in headers]
    for h in ("X-Prolific-Request-Timestamp", "X-Timestamp"):
        if not str(headers.get(h.lower(), "0")).isdigit():
            out.append(f"event: {h} is not a UNIX time")
    try:
        if len(base64.b64decode(headers.get("x-prolific-request-signature", ""), validate=True)) != 32:
            out.append("event: the signature is not a base64 HMAC-SHA256")
    except ValueError:
        out.append("event: the signature is not base64")
    try:
        body = json.loads(delivery["body"])
    except ValueError:
        return out + ["event: the body is not JSON"]
    shape = EVENTS.get(body.get("event_type") if isinstance(body, dict) else None)
    if shape is None:
        return out + [f"event: event_type {body.get('event_type') if isinstance(body, dict) else body!r} unknown"]
    out += shape.problems(body, "event")
    if body["event_type"] == "submission.status.change" and body.get("status") not in SUBMISSION_STATUSES:
        out.append(f"event: status {body.get('status')!r} is not a submission status")
    return out
