"""Every Prolific endpoint this project calls, one row each: its method and path, how its list pages, which
failures are retried, the status Prolific answers, and where we read it. The client (``api.ProlificClient``)
has one method per row, named as the row; the fake Prolific (``fake/``) answers each row by its handler of the
same name (``api_<name>``) and pages and answers as the row says. Neither side names a path anywhere else.

What the rows say is checked from outside: tests/crowdsourcing/prolific_contract.py, written apart from this
table from the same sources, holds every request our client sends and every answer the fake gives to
Prolific's documented shapes (a row paged the wrong way, a field either side invents, fail there).

Sources (read, never copied): CLI = Prolific's own client, github prolific-oss/cli @ 4596a2f,
``client/client.go`` (function named); docs = docs.prolific.com's API reference (page named); Mephisto =
facebookresearch/Mephisto v1.5.2 ``mephisto/abstractions/providers/prolific/``; Dallinger = Dallinger @ 7e9c279
``dallinger/prolific.py``.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cached_property
from urllib.parse import quote

RETRY_NONE = frozenset()
RETRY_ON_429 = frozenset({429})  # refused unprocessed: safe to send again whatever the call
RETRY_ON_429_5XX = frozenset({429, 500, 502, 503, 504})  # reads, idempotent writes, set-ups that cost nothing


@dataclass(frozen=True)
class Endpoint:
    name: str  # the client's method, the fake's handler ``api_<name>``
    method: str
    path: str  # after /api/v1/, ids as {placeholders} filled in order
    source: str
    paging: str = ""  # a list: "page" (page/page_size) or "offset" (limit/offset); "" one answer
    links: bool = True  # a paged answer carries ``_links`` besides ``meta`` (CLI client/responses.go)
    retry: frozenset = RETRY_ON_429_5XX
    status: int = 200

    @cached_property
    def pattern(self) -> re.Pattern:
        """The path with each id as a group (one path segment)."""
        return re.compile(re.sub(r"\\\{[a-z_]+\\\}", "([^/]+)", re.escape(self.path)))

    def url(self, *ids: str) -> str:
        """The path with ``ids`` filled in, each quoted whole: an id can never add a segment of its own."""
        parts = iter(quote(str(i), safe="") for i in ids)
        url = re.sub(r"\{[a-z_]+\}", lambda _: next(parts), self.path)
        if next(parts, None) is not None or "{" in url:
            raise ValueError(f"{self.name}: {self.path} takes {self.path.count('{')} id(s), got {len(ids)}")
        return url


TABLE = (
    Endpoint("me", "GET", "users/me/", "CLI GetMe; docs 'Retrieve your user'; Dallinger who_am_i"),
    Endpoint("workspaces", "GET", "workspaces/", "CLI GetWorkspaces (?limit=&offset=), ListWorkspacesResponse (meta "
             "only); Dallinger get_workspaces '?limit=1000' ('without the limit param ... limited to 20')",
             paging="offset", links=False),
    Endpoint("create_workspace", "POST", "workspaces/", "CLI CreateWorkspace", status=201),
    Endpoint("balance", "GET", "workspaces/{workspace}/balance/", "CLI GetWorkspaceBalance; docs 'Get the balance "
             "of a workspace' (minor units, after funds held by active studies)"),
    Endpoint("projects", "GET", "workspaces/{workspace}/projects/", "CLI GetProjects (?limit=&offset=), "
             "ListProjectsResponse (meta only)", paging="offset", links=False),
    Endpoint("create_project", "POST", "workspaces/{workspace}/projects/", "CLI CreateProject", status=201),
    Endpoint("project_studies", "GET", "projects/{project}/studies/", "CLI GetStudies; Dallinger _get_all_pages "
             "(page/page_size, checked against the live API)", paging="page"),
    Endpoint("cost", "POST", "study-cost-calculator/", "Mephisto api/studies.py calculate_cost (answers total_cost)"),
    # a 5xx may have created it: the caller looks for it (study.remove_orphans) rather than create it twice
    Endpoint("create_study", "POST", "studies/", "CLI CreateStudy, model/study.go CreateStudy", retry=RETRY_ON_429,
             status=201),
    Endpoint("study", "GET", "studies/{study}/", "CLI GetStudy; docs 'Retrieve a study'"),
    Endpoint("update_study", "PATCH", "studies/{study}/", "CLI UpdateStudy; Mephisto prolific_utils.py "
             "increase_total_available_places_for_study"),
    Endpoint("delete_study", "DELETE", "studies/{study}/", "docs 'Delete a study' (drafts only); Dallinger "
             "delete_study", status=204),
    Endpoint("transition_study", "POST", "studies/{study}/transition/", "CLI TransitionStudy; Mephisto "
             "api/studies.py publish/stop (no PAUSE in Mephisto's constants)"),
    Endpoint("submissions", "GET", "submissions/", "docs 'List submissions' ('Paginate by page_size and page'); "
             "Dallinger get_submissions, _get_all_pages", paging="page"),
    Endpoint("submission", "GET", "submissions/{submission}/", "docs 'Retrieve a submission' (participant, "
             "bonus_payments); Dallinger get_participant_submission"),
    # idempotent on Prolific (docs "Approve or reject a submission"): retried like a read
    Endpoint("transition_submission", "POST", "submissions/{submission}/transition/", "CLI TransitionSubmission, "
             "cmd/submission/transition.go (APPROVE, REJECT, COMPLETE with completion_code); docs 'Approve or "
             "reject a submission'"),
    Endpoint("set_up_bonuses", "POST", "submissions/bonus-payments/", "CLI CreateBonusPayments; Dallinger "
             "pay_session_bonus ('PID,0.50', major units)", status=201),
    # not idempotent (docs "Pay bonuses"): sent again only after a 429, which Prolific refused unprocessed
    Endpoint("pay_bonuses", "POST", "bulk-bonus-payments/{setup}/pay/", "CLI PayBonusPayments (202); docs 'Pay "
             "bonuses'", retry=RETRY_ON_429, status=202),
    Endpoint("groups", "GET", "participant-groups/", "CLI GetParticipantGroups (?workspace_id=&limit=&offset=); docs "
             "'Get participant groups' (active)", paging="offset"),
    Endpoint("create_group", "POST", "participant-groups/", "CLI CreateParticipantGroup (workspace_id); Mephisto "
             "api/participant_groups.py", status=201),
    Endpoint("delete_group", "DELETE", "participant-groups/{group}/", "Mephisto api/participant_groups.py remove "
             "(deletes are soft)", status=204),
    Endpoint("members", "GET", "participant-groups/{group}/participants/", "CLI GetParticipantGroup "
             "(ViewParticipantGroupResponse: results only)"),
    Endpoint("add_members", "POST", "participant-groups/{group}/participants/", "CLI AddParticipantGroupMembers"),
    Endpoint("remove_members", "DELETE", "participant-groups/{group}/participants/",
             "CLI RemoveParticipantGroupMembers"),
    # a message is not idempotent: sent again only after a 429 (review.send_message keeps the ledger)
    Endpoint("send_message", "POST", "messages/", "CLI SendMessage, SendMessagePayload (recipient_id, study_id, "
             "body); docs 'Send a message'; Mephisto api/messages.py send", retry=RETRY_ON_429),
    # the same export may be downloaded again as often as wanted (docs): retried like a read
    Endpoint("demographic_export", "POST", "studies/{study}/demographic-export/", "CLI ExportDemographics (answers "
             "the CSV); docs 'Export demographic data' (filters, the fields included)"),
    Endpoint("hook_secrets", "GET", "hooks/secrets/", "CLI GetHookSecrets (?workspace_id=), ListSecretsResponse "
             "(results only); docs 'List all secrets'"),
    # replaces the workspace's secret (docs: one active secret per workspace): asked only when none exists
    Endpoint("create_hook_secret", "POST", "hooks/secrets/", "CLI CreateHookSecret (201); docs 'Create/replace a "
             "secret'", retry=RETRY_ON_429, status=201),
    Endpoint("hook_subscriptions", "GET", "hooks/subscriptions/", "CLI GetHooks (?workspace_id=&is_enabled=&limit="
             "&offset=), ListHooksResponse (meta only)", paging="offset", links=False),
    Endpoint("create_hook_subscription", "POST", "hooks/subscriptions/", "CLI CreateHookSubscription (201, the "
             "X-Hook-Secret header); docs 'Monitoring study progress'", retry=RETRY_ON_429, status=201),
    Endpoint("confirm_hook_subscription", "POST", "hooks/subscriptions/{subscription}/", "CLI "
             "ConfirmHookSubscription ({secret}: the X-Hook-Secret); docs 'Confirm a subscription'"),
    Endpoint("delete_hook_subscription", "DELETE", "hooks/subscriptions/{subscription}/", "CLI "
             "DeleteHookSubscription (204)", status=204),
)
ENDPOINTS = {endpoint.name: endpoint for endpoint in TABLE}


def route(method: str, path: str) -> tuple[Endpoint, tuple[str, ...]] | None:
    """The endpoint a request names (``path`` after /api/v1/) and its ids; None if it names none."""
    for endpoint in TABLE:
        found = endpoint.method == method and endpoint.pattern.fullmatch(path)
        if found:
            return endpoint, found.groups()
    return None
