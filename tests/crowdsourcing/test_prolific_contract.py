"""The contract (prolific_contract.py: Prolific's docs, its CLI's types, Mephisto's and Dallinger's clients)
against our client AND our fake: every endpoint we use is driven through ``ProlificClient`` against the fake,
and every request and answer must fit the contract, so a field either side invents fails. Every other
Prolific test checks its own traffic the same way (the ``fake`` fixture of prolific_harness.py).

Pagination: the fake pages at 20 like Prolific, each list its own way (``page``/``page_size`` or
``limit``/``offset``, ignoring the other); every list read must follow the pages until ``_links.next`` is
null or ``meta.count`` items are read; a client reading only the first page, or any one list the wrong way,
fails ``check_pagination`` and the contract."""
from __future__ import annotations

import dataclasses
import time

import pytest

from parlai_dialeval.providers.prolific import endpoints
from parlai_dialeval.providers.prolific.api import ProlificClient
from parlai_dialeval.providers.prolific.fake import API, PAGE_SIZE, ApiError
from parlai_dialeval.providers.prolific.study import find_or_create_project
from parlai_dialeval.testing.ports import free_port

from .prolific_contract import ENDPOINTS, endpoint, problems, violations
from .prolific_harness import TOKEN, ProlificMockRun, fake_prolific, register, scale_items, scale_overrides
from .prolific_harness import fake  # noqa: F401,F811  (the fixture)

CODE = "DECONTRACT1"


def _client(fake, cls=ProlificClient):  # noqa: F811
    return cls(fake.api_base_url, TOKEN, max_retries=0)


def _study(fake, places: int = 50) -> dict:  # noqa: F811
    """A published study on the fake, made through the client."""
    client = _client(fake)
    ws = client.workspaces()[0]["id"]
    project = client.create_project(ws, "contract")["id"]
    study = client.create_study({
        "project": project, "name": "Rate replies", "internal_name": "contract", "description": "Rate replies",
        "external_study_url": "https://task.example/?PROLIFIC_PID={{%PROLIFIC_PID%}}",
        "prolific_id_option": "url_parameters", "completion_option": "code",
        "completion_codes": [{"code": CODE, "code_type": "COMPLETED", "actor": "researcher",
                              "actions": [{"action": "MANUALLY_REVIEW"}]}],
        "total_available_places": places, "estimated_completion_time": 10, "reward": 250,
        "submissions_config": {"max_submissions_per_participant": 1}})
    client.transition_study(study["id"], "PUBLISH")
    return dict(study, workspace=ws)


def _submit(fake, study_id: str, pid: str) -> str:  # noqa: F811
    with fake.state.lock:
        _, sub = fake.state.start(study_id, pid)
    _client(fake).transition_submission(sub["id"], "COMPLETE", completion_code=CODE)  # our server completes it
    return sub["id"]


def drive_hooks(client, ws: str) -> None:
    """Every webhook endpoint once: a secret, a subscription created, confirmed with its X-Hook-Secret, listed
    and deleted (nothing listens at its address: no event is sent between)."""
    assert client.hook_secrets(ws) == []
    secret = client.create_hook_secret(ws)
    assert client.hook_secrets(ws) == [secret]
    hook, hook_secret = client.create_hook_subscription(ws, "submission.status.change", "https://lab.example/hooks")
    assert hook_secret and hook["is_enabled"] is False
    assert client.confirm_hook_subscription(hook["id"], hook_secret)["is_enabled"] is True
    assert [h["id"] for h in client.hook_subscriptions(ws)] == [hook["id"]]
    client.delete_hook_subscription(hook["id"])


def test_the_client_has_one_method_per_endpoint():
    """Every row of the endpoint table is a method of the client of the same name and a handler of the fake;
    the client has no other public method that calls Prolific, and no path is written outside the table."""
    import inspect
    import pathlib
    import re as regex

    from parlai_dialeval.providers.prolific.fake import FakeProlificState

    public = {n for n, _ in inspect.getmembers(ProlificClient, inspect.isfunction) if not n.startswith("_")}
    assert public - {"send", "call", "results", "close"} == set(endpoints.ENDPOINTS)
    assert all(callable(getattr(FakeProlificState, f"api_{name}", None)) for name in endpoints.ENDPOINTS)
    package = pathlib.Path(endpoints.__file__).parent
    paths = regex.compile(r"[\"'](?:studies|submissions|participant-groups|workspaces|projects|hooks|messages|"
                          r"bulk-bonus-payments|users|study-cost-calculator)/")
    written = [f"{f.relative_to(package)}: {line.strip()}" for f in package.rglob("*.py") if f.name != "endpoints.py"
               for line in f.read_text().splitlines() if paths.search(line) and not line.lstrip().startswith("#")]
    assert written == []


def test_every_endpoint_we_use_fits_the_contract_on_both_sides(fake):  # noqa: F811
    client = _client(fake)
    client.me()
    study = _study(fake)
    ws = study["workspace"]
    client.balance(ws)
    assert [p["title"] for p in client.projects(ws)] == ["contract"]
    assert isinstance(client.cost(250, 3), int)
    client.update_study(study["id"], {"total_available_places": 60})
    client.project_studies(study["project"])
    first, second = _submit(fake, study["id"], "PID_1"), _submit(fake, study["id"], "PID_2")
    assert {s["id"] for s in client.submissions(study["id"])} == {first, second}
    client.transition_submission(first, "APPROVE")
    client.transition_submission(second, "REJECT", "x" * 120, "LOW_EFFORT")
    setup = client.set_up_bonuses(study["id"], "PID_1,0.50\n")
    client.pay_bonuses(setup["id"])
    assert client.submission(first)["bonus_payments"]
    group = client.create_group(ws, "blocked")
    client.add_members(group["id"], ["PID_2"])
    client.members(group["id"])
    client.remove_members(group["id"], ["PID_2"])
    assert client.study(study["id"])["total_available_places"] == 60
    client.groups(ws)
    client.send_message("PID_1", study["id"], "Thank you for rating so carefully.")
    assert client.demographic_export(study["id"]).startswith("Submission id,Participant id,")
    drive_hooks(client, ws)
    client.delete_group(group["id"])
    client.transition_study(study["id"], "STOP")
    draft = client.create_study({k: v for k, v in fake.state.studies[study["id"]].items() if k not in ("id", "status")})
    client.delete_study(draft["id"])
    client.create_workspace("second")
    assert violations(fake.state.calls) == []
    used = {(e.method, e.path) for e in (endpoint(c["method"], c["path"]) for c in fake.state.calls)}
    # the whole contract was driven
    assert [f"{e.method} {e.path}" for e in ENDPOINTS if (e.method, e.path) not in used] == []


def test_a_submission_and_a_list_item_are_told_apart(fake):  # noqa: F811
    """``GET submissions/{id}/`` names the participant ``participant`` and carries ``bonus_payments``; an item of
    ``GET submissions/`` names it ``participant_id`` and carries no bonus payments (docs "Retrieve a submission"
    and "List submissions"; Dallinger reads ``participant`` from the one and ``participant_id`` from the other).
    Code reading the wrong field fails here (KeyError), and a fake answering the wrong shape fails the
    contract."""
    client = _client(fake)
    study = _study(fake)
    _submit(fake, study["id"], "PID_1")
    (item,) = client.submissions(study["id"])
    single = client.submission(item["id"])
    assert item["participant_id"] == single["participant"] == "PID_1"
    assert "participant_id" not in single and "bonus_payments" not in item and single["bonus_payments"] == []
    call = next(c for c in fake.state.calls if c["path"].endswith(f"submissions/{item['id']}/"))
    assert problems(dict(call, answer=dict(single, participant_id="PID_1"))) == [
        f"GET {call['path']}: answer: field 'participant_id' is not in the contract"]
    listed = next(c for c in fake.state.calls if c["path"].endswith("/submissions/"))
    wrong = dict(listed["answer"], results=[dict(item, bonus_payments=[])])
    assert problems(dict(listed, answer=wrong)) == [
        f"GET {listed['path']}: item: field 'bonus_payments' is not in the contract"]


def test_complete_needs_a_researcher_code_of_the_study(fake):  # noqa: F811
    """Prolific's docs, "Approve or reject a submission" (docs.prolific.com/api-reference/submissions/
    transition-submission): COMPLETE's code "must match a value provided when creating the study, and the
    actor must have been set to researcher". Our study's code has that actor; another code, or the same
    code made for participants, is refused by the fake as by Prolific (our launches' studies complete in
    test_prolific_launch and the browser tests only because study.py marks its code so)."""
    from parlai_dialeval.providers.prolific.api import ProlificError

    client = _client(fake)
    study = _study(fake)
    with fake.state.lock:
        _, sub = fake.state.start(study["id"], "PID_R")
        participant_code = {"code": "BYHAND", "code_type": "COMPLETED", "actor": "participant", "actions": []}
        fake.state.studies[study["id"]]["completion_codes"].append(participant_code)
    for code in ("NOTOURS", "BYHAND"):
        with pytest.raises(ProlificError):
            client.transition_submission(sub["id"], "COMPLETE", completion_code=code)
    assert fake.state.submissions[sub["id"]]["status"] == "ACTIVE"
    _submit(fake, study["id"], "PID_S")  # the study's own (researcher) code completes


def test_the_contract_catches_what_either_side_invents(monkeypatch):
    with fake_prolific() as server:  # its own fake: the fixture's would fail on the violations made here
        found = _invented(server, monkeypatch)
    for field in ("'rewards'", "'fees'", "'vat'"):
        assert f"answer: field {field} is not in the contract" in found
    assert "request: field 'reward' should be int, got float" in found
    assert "query 'verbose' not taken" in found


def _invented(fake, monkeypatch) -> str:  # noqa: F811
    client = _client(fake)
    state = type(fake.state)
    answer = state.api_cost
    monkeypatch.setattr(state, "api_cost",
                        lambda self, query, body: dict(answer(self, query, body), rewards=1, fees=1, vat=0))
    client.cost(250, 3)  # the fields our old preflight read, which Prolific does not send
    with pytest.raises(Exception):
        client.call("cost", json={"reward": 2.5, "total_available_places": 3})
    client.call("me", params={"verbose": 1})
    return "\n".join(violations(fake.state.calls))


def check_pagination(client, fake) -> None:  # noqa: F811
    """Lists longer than a page, read whole: submissions, workspaces, projects, participant groups, a
    project's studies; the find-or-create reads find what is on the second page."""
    study = _study(fake)
    ws, project = study["workspace"], study["project"]
    subs = {_submit(fake, study["id"], f"PID_{k:02d}") for k in range(45)}
    with fake.state.lock:
        for k in range(22):
            fake.state.add_workspace(f"lab {k}")
        for k in range(23):
            fake.state.api_create_project(ws, {}, {"title": f"project {k}"})
        fake.state.api_create_project(ws, {}, {"title": "dialeval"})  # on the second page
        dead = fake.state.api_create_group({}, {"workspace_id": ws, "name": "dialeval_blocked"})
        fake.state.api_delete_group(dead["id"], {}, {})  # soft-deleted: still listed without `active`
        for k in range(24):
            fake.state.api_create_group({}, {"workspace_id": ws, "name": f"group {k}"})
        live = fake.state.api_create_group({}, {"workspace_id": ws, "name": "dialeval_blocked"})
        fake.state.api_create_study({}, dict(fake.state.studies[study["id"]], internal_name="second"))
        for k in range(21):
            fake.state.api_create_study({}, dict(fake.state.studies[study["id"]], internal_name=f"other {k}"))
    assert {s["id"] for s in client.submissions(study["id"])} == subs
    assert len(client.workspaces()) == 23
    assert len(client.projects(ws)) == 25
    assert len(client.project_studies(project)) == 23
    groups = client.groups(ws)
    assert len(groups) == 25 and [g["id"] for g in groups if g["name"] == "dialeval_blocked"] == [live["id"]]
    posts = len([c for c in fake.state.calls if c["method"] == "POST"])
    assert find_or_create_project(client, ws, "dialeval") == [
        p["id"] for p in fake.state.projects.values() if p["title"] == "dialeval"][0]
    assert len([c for c in fake.state.calls if c["method"] == "POST"]) == posts  # found, not created again


def test_every_list_read_follows_the_pages(fake):  # noqa: F811
    check_pagination(_client(fake), fake)
    assert violations(fake.state.calls) == []


def _list(fake, path: str, **query) -> dict:  # noqa: F811
    """A list's answer straight from the fake's state (not logged: a wrong query would fail the fixture)."""
    return fake.state.handle("GET", API + path, {k: [str(v)] for k, v in query.items()}, {}, TOKEN)[1]


def test_each_list_pages_its_own_way_and_ignores_the_other_way(fake):  # noqa: F811
    """Submissions and a project's studies page by number (docs "List submissions"; Dallinger); workspaces,
    projects and participant groups by limit/offset (Prolific's CLI; Dallinger's "?limit=1000"). The fake
    gives at most 20 a page, whatever is asked, and ignores the other scheme's parameters as Prolific does."""
    study = _study(fake)
    for k in range(25):
        _submit(fake, study["id"], f"PID_{k:02d}")
        fake.state.add_workspace(f"lab {k}")
    first = _list(fake, "submissions/", study=study["id"], page_size=100)
    assert len(first["results"]) == PAGE_SIZE == 20 and first["_links"]["next"]["href"]
    assert _list(fake, "submissions/", study=study["id"], limit=20, offset=20)["results"] == first["results"]
    assert len(_list(fake, "submissions/", study=study["id"], page=2)["results"]) == 5
    with pytest.raises(ApiError) as past:
        _list(fake, "submissions/", study=study["id"], page=9)
    assert past.value.status == 404
    workspaces = _list(fake, "workspaces/")
    assert len(workspaces["results"]) == 20 and workspaces["meta"] == {"count": 26} and "_links" not in workspaces
    assert _list(fake, "workspaces/", page=2, page_size=10) == workspaces
    assert [w["title"] for w in _list(fake, "workspaces/", limit=5, offset=21)["results"]] == [
        f"lab {k}" for k in range(20, 25)]
    assert _list(fake, "workspaces/", offset=99)["results"] == []  # past the end: empty, not a 404


LISTS = ["workspaces", "projects", "groups", "submissions", "project_studies"]


@pytest.mark.parametrize("wrong", LISTS)
def test_a_list_read_with_the_wrong_scheme_fails_the_contract(wrong, monkeypatch):
    """One list paged the other way by our client (page/page_size where Prolific takes limit/offset, or the
    reverse; the fake pages as the table says): items past the first page are lost (the same page comes back)
    and the request breaks the contract, which the table's own rows are held to."""
    row = endpoints.ENDPOINTS[wrong]
    flipped = dataclasses.replace(row, paging="page" if row.paging == "offset" else "offset")
    monkeypatch.setattr(ProlificClient, "endpoints", {**endpoints.ENDPOINTS, wrong: flipped})
    with fake_prolific() as server:  # its own fake: the fixture's would fail on the violations made here
        with pytest.raises(AssertionError):
            check_pagination(_client(server), server)
        found = violations(server.state.calls)
    assert any(f"query '{flipped.paging}' not taken" in line for line in found), found


@pytest.mark.slow
def test_launch_finds_workspace_project_and_block_group_on_later_pages(tmp_path, fake, monkeypatch):  # noqa: F811
    data = tmp_path / "mephisto"
    register(data, fake, monkeypatch)
    with fake.state.lock:
        for k in range(21):
            fake.state.add_workspace(f"lab {k}")
        ws = fake.state.add_workspace("Our lab", balance=100_000)["id"]
        for k in range(21):
            fake.state.api_create_project(ws, {}, {"title": f"project {k}"})
        project = fake.state.api_create_project(ws, {}, {"title": "dialeval"})["id"]
        dead = fake.state.api_create_group({}, {"workspace_id": ws, "name": "dialeval_blocked"})
        fake.state.api_delete_group(dead["id"], {}, {})
        for k in range(21):
            fake.state.api_create_group({}, {"workspace_id": ws, "name": f"group {k}"})
        group = fake.state.api_create_group({}, {"workspace_id": ws, "name": "dialeval_blocked"})["id"]
    items = scale_items(tmp_path / "items.jsonl", 2)
    run = ProlificMockRun("scale_designs", data, free_port(), fake, [*scale_overrides(items, "sd_pages"),
                                                              "mephisto.provider.workspace=Our lab",
                                                              "mephisto.provider.max_submissions_per_participant=-1"])
    try:
        study = fake.state.studies[run.study["study_id"]]
        assert study["project"] == project and run.study["block_group_id"] == group
        assert {"filter_id": "participant_group_blocklist", "selected_values": [group]} in study["filters"]
        assert study["submissions_config"] == {"max_submissions_per_participant": -1}
        assert [p["title"] for p in fake.state.projects.values()].count("dialeval") == 1
        assert [g["name"] for g in fake.state.groups.values()].count("dialeval_blocked") == 2  # none created
    finally:
        run.shutdown()


def test_every_event_the_fake_sends_fits_the_contract_and_the_contract_catches_a_wrong_one():
    """Webhook events (docs "Receiving", "Verifying", "Idempotency and the X-Event-ID header", "Handling event
    order with X-Timestamp"): what the fake sends to a subscriber is held to the contract like every answer, and
    an event with a header missing, a status Prolific never gives or a field it never sends is caught."""
    import json
    import threading
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    from .prolific_contract import event_problems

    class Listener(BaseHTTPRequestHandler):
        def do_POST(self):
            self.rfile.read(int(self.headers["Content-Length"]))
            self.send_response(200)
            self.end_headers()

        def log_message(self, *args):
            return

    listener = ThreadingHTTPServer(("127.0.0.1", 0), Listener)
    threading.Thread(target=listener.serve_forever, daemon=True).start()
    try:
        with fake_prolific() as server:
            client = _client(server)
            study = _study(server)
            client.create_hook_secret(study["workspace"])
            hook, hook_secret = client.create_hook_subscription(
                study["workspace"], "submission.status.change", f"http://127.0.0.1:{listener.server_port}/")
            client.confirm_hook_subscription(hook["id"], hook_secret)
            sub = _submit(server, study["id"], "PID_1")  # started, then completed: two events
            with server.state.lock:
                server.state.set_status(server.state.submissions[sub], "RETURNED")
            deadline = time.monotonic() + 10
            while len([d for d in server.state.deliveries if d["status"] == 200]) < 3 and time.monotonic() < deadline:
                time.sleep(0.05)
            delivered = list(server.state.deliveries)
            assert violations(server.state.calls, delivered) == []
    finally:
        listener.shutdown()
    statuses = [json.loads(d["body"])["status"] for d in delivered if d["status"] == 200]
    assert statuses == ["ACTIVE", "AWAITING REVIEW", "RETURNED"]
    good = delivered[-1]
    no_id = dict(good, headers={k: v for k, v in good["headers"].items() if k != "X-Event-ID"})
    assert event_problems(no_id) == ["event: header X-Event-ID is missing"]
    wrong = dict(good, body=json.dumps(dict(json.loads(good["body"]), status="GONE", study_id="x")))
    assert event_problems(wrong) == ["event: field 'study_id' is not in the contract",
                                     "event: status 'GONE' is not a submission status"]
