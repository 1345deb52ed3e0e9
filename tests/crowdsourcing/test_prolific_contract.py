"""The contract (prolific_contract.py: Prolific's docs, its CLI's types, Mephisto's and Dallinger's clients)
against our client AND our fake: every endpoint we use is driven through ``ProlificClient`` against the fake,
and every request and answer must fit the contract, so a field either side invents fails. Every other
Prolific test checks its own traffic the same way (the ``fake`` fixture of prolific_harness.py).

Pagination: the fake pages at 20 like Prolific, each list its own way (``page``/``page_size`` or
``limit``/``offset``, ignoring the other); every list read must follow the pages until ``_links.next`` is
null or ``meta.count`` items are read; a client reading only the first page, or any one list the wrong way,
fails ``check_pagination`` and the contract."""
from __future__ import annotations

import re

import pytest

from parlai_dialeval.providers.prolific import api
from parlai_dialeval.providers.prolific.api import ProlificClient
from parlai_dialeval.providers.prolific.fake import API, PAGE_SIZE, ApiError
from parlai_dialeval.providers.prolific.study import find_or_create
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
    ws = client.results("workspaces/")[0]["id"]
    project = client.call("POST", f"workspaces/{ws}/projects/", json={"title": "contract"})["id"]
    study = client.call("POST", "studies/", json={
        "project": project, "name": "Rate replies", "internal_name": "contract", "description": "Rate replies",
        "external_study_url": "https://task.example/?PROLIFIC_PID={{%PROLIFIC_PID%}}",
        "prolific_id_option": "url_parameters", "completion_option": "code",
        "completion_codes": [{"code": CODE, "code_type": "COMPLETED", "actor": "researcher",
                              "actions": [{"action": "MANUALLY_REVIEW"}]}],
        "total_available_places": places, "estimated_completion_time": 10, "reward": 250,
        "submissions_config": {"max_submissions_per_participant": 1}})
    client.call("POST", f"studies/{study['id']}/transition/", json={"action": "PUBLISH"})
    return dict(study, workspace=ws)


def _submit(fake, study_id: str, pid: str) -> str:  # noqa: F811
    with fake.state.lock:
        _, sub = fake.state.start(study_id, pid)
    _client(fake).call("POST", f"submissions/{sub['id']}/transition/",  # our server completes it
                       json={"action": "COMPLETE", "completion_code": CODE})
    return sub["id"]


def test_every_endpoint_we_use_fits_the_contract_on_both_sides(fake):  # noqa: F811
    client = _client(fake)
    client.me()
    study = _study(fake)
    ws = study["workspace"]
    client.balance(ws)
    assert [p["title"] for p in client.results(f"workspaces/{ws}/projects/")] == ["contract"]
    assert isinstance(client.cost(250, 3), int)
    client.call("PATCH", f"studies/{study['id']}/", json={"total_available_places": 60})
    client.results(f"projects/{study['project']}/studies/")
    first, second = _submit(fake, study["id"], "PID_1"), _submit(fake, study["id"], "PID_2")
    assert {s["id"] for s in client.submissions(study["id"])} == {first, second}
    client.transition_submission(first, "APPROVE")
    client.transition_submission(second, "REJECT", "x" * 120, "LOW_EFFORT")
    setup = client.call("POST", "submissions/bonus-payments/",
                        json={"study_id": study["id"], "csv_bonuses": "PID_1,0.50\n"})
    client.call("POST", f"bulk-bonus-payments/{setup['id']}/pay/")
    assert client.submission(first)["bonus_payments"]
    group = client.call("POST", "participant-groups/", json={"workspace_id": ws, "name": "blocked"})
    client.call("POST", f"participant-groups/{group['id']}/participants/", json={"participant_ids": ["PID_2"]})
    client.call("GET", f"participant-groups/{group['id']}/participants/")
    client.call("DELETE", f"participant-groups/{group['id']}/participants/", json={"participant_ids": ["PID_2"]})
    assert client.study(study["id"])["total_available_places"] == 60
    client.groups(ws)
    client.call("DELETE", f"participant-groups/{group['id']}/")
    client.call("POST", f"studies/{study['id']}/transition/", json={"action": "STOP"})
    draft = client.call("POST", "studies/", json={k: v for k, v in fake.state.studies[study["id"]].items()
                                                  if k not in ("id", "status")})
    client.call("DELETE", f"studies/{draft['id']}/")
    client.call("POST", "workspaces/", json={"title": "second"})
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
            client.call("POST", f"submissions/{sub['id']}/transition/",
                        json={"action": "COMPLETE", "completion_code": code}, retry=frozenset())
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
    answer = state.api_post_study_cost_calculator
    monkeypatch.setattr(state, "api_post_study_cost_calculator",
                        lambda self, query, body: dict(answer(self, query, body), rewards=1, fees=1, vat=0))
    client.cost(250, 3)  # the fields our old preflight read, which Prolific does not send
    with pytest.raises(Exception):
        client.call("POST", "study-cost-calculator/", json={"reward": 2.5, "total_available_places": 3})
    client.call("GET", "users/me/", params={"verbose": 1})
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
            fake.state.api_post_workspaces_X_projects(ws, {}, {"title": f"project {k}"})
        fake.state.api_post_workspaces_X_projects(ws, {}, {"title": "dialeval"})  # on the second page
        dead = fake.state.api_post_participant_groups({}, {"workspace_id": ws, "name": "dialeval_blocked"})[1]
        fake.state.api_delete_participant_groups_X(dead["id"], {}, {})  # soft-deleted: still listed without `active`
        for k in range(24):
            fake.state.api_post_participant_groups({}, {"workspace_id": ws, "name": f"group {k}"})
        live = fake.state.api_post_participant_groups({}, {"workspace_id": ws, "name": "dialeval_blocked"})[1]
        fake.state.api_post_studies({}, dict(fake.state.studies[study["id"]], internal_name="second"))
        for k in range(21):
            fake.state.api_post_studies({}, dict(fake.state.studies[study["id"]], internal_name=f"other {k}"))
    assert {s["id"] for s in client.submissions(study["id"])} == subs
    assert len(client.results("workspaces/")) == 23
    assert len(client.results(f"workspaces/{ws}/projects/")) == 25
    assert len(client.results(f"projects/{project}/studies/")) == 23
    groups = client.groups(ws)
    assert len(groups) == 25 and [g["id"] for g in groups if g["name"] == "dialeval_blocked"] == [live["id"]]
    posts = len([c for c in fake.state.calls if c["method"] == "POST"])
    assert find_or_create(client, f"workspaces/{ws}/projects/", {"title": "dialeval"}, "title", "dialeval") == [
        p["id"] for p in fake.state.projects.values() if p["title"] == "dialeval"][0]
    assert len([c for c in fake.state.calls if c["method"] == "POST"]) == posts  # found, not created again


def test_every_list_read_follows_the_pages(fake):  # noqa: F811
    check_pagination(_client(fake), fake)
    assert violations(fake.state.calls) == []


def _list(fake, path: str, **query) -> dict:  # noqa: F811
    """A list's answer straight from the fake's state (not logged: a wrong query would fail the fixture)."""
    return fake.state.handle("GET", API + path, {k: [str(v)] for k, v in query.items()}, {}, TOKEN)


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


LISTS = ["workspaces/", "workspaces/{ws}/projects/", "participant-groups/", "submissions/",
         "projects/{project}/studies/"]


@pytest.mark.parametrize("wrong", LISTS)
def test_a_list_read_with_the_wrong_scheme_fails_the_contract(wrong, monkeypatch):
    """One list paged the other way (page/page_size where Prolific takes limit/offset, or the reverse):
    items past the first page are lost (the same page comes back) and the request breaks the contract."""
    offset_paged = {"workspaces/", "workspaces/{ws}/projects/", "participant-groups/"}
    flipped = offset_paged ^ {wrong}
    pattern = "|".join(p.replace("{ws}", "[^/]+").replace("{project}", "[^/]+") for p in flipped)
    monkeypatch.setattr(api, "OFFSET_PAGED", re.compile(pattern))
    with fake_prolific() as server:  # its own fake: the fixture's would fail on the violations made here
        with pytest.raises(AssertionError):
            check_pagination(_client(server), server)
        found = violations(server.state.calls)
    scheme = "page" if wrong in offset_paged else "offset"  # what the wrong client sends
    assert any(f"query '{scheme}' not taken" in line for line in found), found


@pytest.mark.slow
def test_launch_finds_workspace_project_and_block_group_on_later_pages(tmp_path, fake, monkeypatch):  # noqa: F811
    data = tmp_path / "mephisto"
    register(data, fake, monkeypatch)
    with fake.state.lock:
        for k in range(21):
            fake.state.add_workspace(f"lab {k}")
        ws = fake.state.add_workspace("Our lab", balance=100_000)["id"]
        for k in range(21):
            fake.state.api_post_workspaces_X_projects(ws, {}, {"title": f"project {k}"})
        project = fake.state.api_post_workspaces_X_projects(ws, {}, {"title": "dialeval"})[1]["id"]
        dead = fake.state.api_post_participant_groups({}, {"workspace_id": ws, "name": "dialeval_blocked"})[1]
        fake.state.api_delete_participant_groups_X(dead["id"], {}, {})
        for k in range(21):
            fake.state.api_post_participant_groups({}, {"workspace_id": ws, "name": f"group {k}"})
        group = fake.state.api_post_participant_groups({}, {"workspace_id": ws, "name": "dialeval_blocked"})[1]["id"]
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
