"""The dashboard's pages through Flask's test client over a stand-in source: nothing but the login form without the
token, participants' text escaped, forms refused without the session's form token, an action carried out only after
its confirmation and only once; the server, the adaptive view and the source reading a running live-chat task (its
figures: test_dashboard_figures.py)."""
from __future__ import annotations

import re

import pandas as pd
import pytest

from parlai_dialeval.crowdsourcing.platform import progress as unit_progress
from parlai_dialeval.crowdsourcing.platform.progress import UnitRow
from parlai_dialeval.dashboard import summary
from parlai_dialeval.dashboard.source import standings
from parlai_dialeval.testing.ports import free_port

from .test_dashboard_figures import conversation, sample
from .zygote import dialeval_run

HOSTILE = '<img src=x onerror=alert(1)>'
SECRET = "s3cret-token-for-tests"


# ---------------------------------------------------------------- the pages
class StandIn:
    """What the app asks of a TaskSource, with a hostile participant."""

    task_name = "study_1"
    on_prolific = True

    def __init__(self):
        self.done: list[tuple] = []
        self._records = [conversation("c1", HOSTILE, "m", turns=[{"speaker": "human", "text": HOSTILE + " hello"},
                                                                {"speaker": "m", "text": "hi"}])]

    def snapshot(self):
        return {"task_name": self.task_name, "task_type": "live_chat_da", "read_at": 0.0,
                "progress": summary.progress(self._records, [UnitRow("1", "completed", HOSTILE)], 0.0, 10.0),
                "groups": summary.per_group(self._records, []), "check_note": "",
                "quality": summary.quality(pd.DataFrame({"worker_id": [HOSTILE], "passed": [False],
                                                         "p_value": [0.5], "note": [""]}), self._records),
                "endpoints": summary.endpoints(self._records), "notes": [], "on_prolific": self.on_prolific,
                "adaptive": None, "too_slow": [], "patience": 10.0,
                **standings(self._records, [sample(0.0, 0, 1), sample(60.0, 1, 0)], {})}

    def money(self, fresh=False):
        return None

    def records(self):
        return self._records

    def work(self, worker):
        return [r for r in self._records if r["worker_id"] == worker], {"c1": [
            {"criterion": "fun", "value": 70.0, "worker_id": worker, "turn_index": None}]}

    def check_action(self, kind, participant, fields):
        if kind == "reject" and len(fields.get("message") or "") < 100:
            from parlai_dialeval.errors import DialevalError

            raise DialevalError("--message: Prolific needs at least 100 characters to reject")
        return {k: v for k, v in fields.items() if v}

    def act(self, kind, participant, fields):
        self.done.append((kind, participant, fields))
        return f"{kind} {participant}"


@pytest.fixture
def client():
    from parlai_dialeval.dashboard.app import create_app

    source = StandIn()
    app = create_app(source, SECRET)
    app.testing = True
    with app.test_client() as test_client:
        test_client.source = source
        yield test_client


def worker_path(action: str = "") -> str:
    from urllib.parse import quote

    return "/participant/" + quote(HOSTILE, safe="") + (f"/{action}" if action else "")


def test_without_the_token_every_address_answers_the_login_form_only(client):
    for method, path in [("GET", "/"), ("GET", worker_path()), ("POST", worker_path("reject")),
                         ("POST", "/confirm/anything"), ("GET", "/plot/certify.png"), ("GET", "/nothing/here"),
                         ("GET", "/?token=wrong")]:
        answer = client.open(path, method=method, data={"csrf": "x", "message": "m" * 120})
        text = answer.get_data(as_text=True)
        assert answer.status_code == 401, (method, path)
        assert 'name="token"' in text and "Sign in" in text
        for secret_thing in ("onerror", "img src", "hello", "participant", "study_1", SECRET):
            assert secret_thing not in text, (method, path, secret_thing)
    assert client.source.done == []
    answer = client.post("/login", data={"token": "wrong"})
    assert answer.status_code == 401 and "That is not the dashboard" in answer.get_data(as_text=True)


def test_the_token_opens_a_session_and_participant_text_is_escaped(client):
    answer = client.get(f"/?token={SECRET}")
    assert answer.status_code == 302 and "token" not in answer.headers["Location"]
    for path in ("/", worker_path()):
        answer = client.get(path)
        text = answer.get_data(as_text=True)
        assert answer.status_code == 200
        assert HOSTILE not in text and "&lt;img src=x onerror=alert(1)&gt;" in text
        assert "script-src" not in answer.headers["Content-Security-Policy"]  # default-src 'none': no scripts
        assert answer.headers["X-Frame-Options"] == "DENY"
    assert "FLAGGED" in client.get("/").get_data(as_text=True)
    assert "ratings: fun 70" in client.get(worker_path()).get_data(as_text=True)


def test_a_bots_markdown_is_shown_safely_and_a_participants_text_as_typed(client):
    """Issue 50, item 14: bot replies showed raw markdown (`**Preheat the oven**`). Bold, lists and code are
    rendered; HTML stays text, a link is no link; what the participant typed is shown as typed."""
    reply = ("**Preheat the oven** to *200 C*:\n\n- flour\n- `salt`\n\n" + HOSTILE +
             " [click](javascript:alert(1)) ![x](http://example.invalid/x.png)")
    client.source._records[0]["turns"] = [{"speaker": "human", "text": "**my own stars**"}, {"speaker": "m", "text": reply}]
    client.get(f"/?token={SECRET}")
    page = client.get(worker_path()).get_data(as_text=True)
    assert "<strong>Preheat the oven</strong>" in page and "<em>200 C</em>" in page
    assert "<li>flour</li>" in page and "<code>salt</code>" in page
    assert HOSTILE not in page and "&lt;img src=x onerror=alert(1)&gt;" in page
    assert "<a " not in page.split('data-testid="work"')[1] and "<img" not in page
    assert "[click](javascript:alert(1))" in page
    assert "<bdi>**my own stars**</bdi>" in page


def test_the_quality_table_says_where_each_participant_stands_and_what_the_p_value_means(client):
    """Issue 40: 'pass, p-value 0.000309' was unexplained and a participant's state unknown."""
    client.get(f"/?token={SECRET}")
    page = client.get("/").get_data(as_text=True)
    assert "<th>state</th>" in page and "The p-value is the chance that ratings would favour the real bots" in page


def test_the_overview_charts_who_is_ahead_and_says_why_there_is_no_money_panel(client):
    """Issue 40: 'only tables: no chart anywhere', no per-bot ratings, no money panel on the mock provider and
    nothing saying why. Charts are inline SVG (the page allows no scripts and loads no other file)."""
    client.source.on_prolific = False
    client.source._records += [
        {"type": "study", "criteria": [{"name": "robotic", "positive": False, "min": 0, "max": 100}]},
        *[{"type": "rating", "model": "m", "criterion": "robotic", "value": v} for v in (10, 30)],
        *[{"type": "comparison", "model_a": "m", "model_b": "n", "choice": c} for c in "aab"]]
    client.get(f"/?token={SECRET}")
    page = client.get("/").get_data(as_text=True)
    assert page.count("<svg") == 3  # progress, not robotic, m vs n
    assert 'data-criterion="not robotic"' in page and "<bdi>m</bdi> 80.0 [" in page
    assert "No money panel: this task\nruns on the mock provider" in page
    assert "<script" not in page and "<img" not in page


def test_the_overview_reloads_by_an_http_header_the_researcher_switches_off(client):
    """Issue 50, item 8: the page's <meta http-equiv="refresh"> is an axe-core critical violation (and a reader cannot
    stop it). An HTTP Refresh header instead, with a link that stops it (and one that starts it again)."""
    client.get(f"/?token={SECRET}")
    page = client.get("/")
    assert page.headers["Refresh"] == "5" and "http-equiv" not in page.get_data(as_text=True)
    assert "stop reloading" in page.get_data(as_text=True)
    assert client.get("/?refresh=off").status_code == 302
    quiet = client.get("/")
    assert "Refresh" not in quiet.headers and "reload every 5 s" in quiet.get_data(as_text=True)
    client.get("/?refresh=on")
    assert client.get("/").headers["Refresh"] == "5"


def test_actions_need_the_form_token_and_a_confirmation_used_once(client):
    client.post("/login", data={"token": SECRET})
    page = client.get(worker_path()).get_data(as_text=True)
    csrf = re.search(r'name="csrf" value="([^"]+)"', page)[1]
    assert client.post(worker_path("bonus"), data={"amount": "0.50", "reason": "r"}).status_code == 403
    assert client.post(worker_path("bonus"), data={"csrf": "é", "amount": "0.50", "reason": "r"}).status_code == 403
    short = client.post(worker_path("reject"), data={"csrf": csrf, "message": "too short", "category": "OTHER"})
    assert short.status_code == 302 and "100 characters" in client.get(worker_path()).get_data(as_text=True)
    asked = client.post(worker_path("bonus"), data={"csrf": csrf, "amount": "0.50", "reason": "kind words"})
    assert asked.status_code == 200 and client.source.done == []  # asked to confirm, nothing done yet
    confirm = re.search(r'action="(/confirm/[^"]+)"', asked.get_data(as_text=True))[1]
    assert client.post(confirm, data={}).status_code == 403
    assert client.post(confirm, data={"csrf": csrf}).status_code == 302
    assert client.source.done == [("bonus", HOSTILE, {"amount": "0.50", "reason": "kind words"})]
    again = client.post(confirm, data={"csrf": csrf}, follow_redirects=True)
    assert "used already" in again.get_data(as_text=True) and len(client.source.done) == 1
    client.post("/logout", data={"csrf": csrf})
    assert client.get("/").status_code == 401


# ---------------------------------------------------------------- the server and the adaptive view
def test_server_binds_loopback_refuses_a_taken_port_and_takes_a_password(monkeypatch):
    import httpx

    from parlai_dialeval.crowdsourcing.platform.ports import port_is_free
    from parlai_dialeval.dashboard.server import PASSWORD_ENV, start
    from parlai_dialeval.errors import DialevalError

    port = free_port()
    monkeypatch.setenv(PASSWORD_ENV, "short")
    with pytest.raises(DialevalError, match="at least 12"):
        start(StandIn(), port=port)
    monkeypatch.setenv(PASSWORD_ENV, "correct horse battery")
    dashboard = start(StandIn(), port=port)
    try:
        assert dashboard.token is None and PASSWORD_ENV in dashboard.announce()
        assert dashboard.server.socket.getsockname()[0] == "127.0.0.1"
        with pytest.raises(DialevalError, match=f"dashboard port {port} is in use"):
            start(StandIn(), port=port)
        with httpx.Client(base_url=dashboard.url) as web:
            assert web.get("/").status_code == 401
            assert web.post("/login", data={"token": "correct horse battery"}).status_code == 302
            assert "Progress" in web.get("/").text
    finally:
        dashboard.stop()
    assert port_is_free(port)  # closed once stopped


def test_adaptive_view_reads_the_state_file(tmp_path):
    import json

    from parlai_dialeval.adaptive.ledger import Ledger
    from parlai_dialeval.dashboard.adaptive_view import read_state

    assert read_state(tmp_path, "study") is None
    ledger = Ledger(["a", "b", "c"], 0.05)
    for _ in range(60):  # a wins every time against b: far past K(K-1)/alpha = 120 (2^60 with a full bet)
        ledger.add("a", "b", 1.0)
    ledger.add("b", "c", 0.5)
    state = {"status": "collecting", "alpha": 0.05, "hits_emitted": 8, "judgments": 61, "ranking": ["a", "b", "c"],
             "ledger": ledger.to_json(), "batches": [{"batch": 1, "hits": 4, "read": True,
                                                      "pairs": [["a", "b"], ["b", "a"], ["b", "c"]]},
                                                     {"batch": 2, "hits": 4, "read": False, "pairs": [["c", "b"]]}]}
    (tmp_path / "adaptive").mkdir()
    (tmp_path / "adaptive" / "study.json").write_text(json.dumps(state))
    view = read_state(tmp_path, "study")
    assert view["threshold"] == pytest.approx(3 * 2 / 0.05)
    ab, bc = view["pairs"]
    assert (ab["a"], ab["b"], ab["outcomes"], ab["win_rate_a"], ab["certified"]) == ("a", "b", 60, 1.0, "a")
    assert (bc["outcomes"], bc["win_rate_a"], bc["certified"]) == (1, 0.5, "")
    assert [b["pairs"] for b in view["batches"]] == ["b vs c x1", "a vs b x2, b vs c x1"]  # newest first


def test_overview_of_an_adaptive_run_shows_ranking_evidence_and_the_certify_plot(tmp_path):
    from parlai_dialeval.adaptive.ledger import Ledger
    from parlai_dialeval.dashboard.app import create_app

    source = StandIn()
    source._records = [{"type": "study", "name": "study_1"}] + [
        {"type": "comparison", "item_id": f"i{k}", "worker_id": f"w{k}", "model_a": "good", "model_b": "bad",
         "choice": "a"} for k in range(30)]
    ledger = Ledger(["bad", "good"], 0.05)
    plain = source.snapshot
    source.snapshot = lambda: {**plain(), "adaptive": {
        "status": "certified", "alpha": 0.05, "threshold": ledger.threshold, "ranking": ["good", "bad"],
        "hits_emitted": 30, "judgments": 30, "batches": [],
        "pairs": [{"a": "good", "b": "bad", "outcomes": 30, "win_rate_a": 1.0, "e_a_beats_b": 5e6,
                   "e_b_beats_a": 1.0, "certified": "good"}]}}
    app = create_app(source, SECRET)
    with app.test_client() as web:
        web.post("/login", data={"token": SECRET})
        page = web.get("/").get_data(as_text=True)
        assert "Adaptive collection: certified" in page and "<bdi>good</bdi> &gt; <bdi>bad</bdi>" in page and "5e+06" in page
        png = web.get("/plot/certify.png")
        assert png.status_code == 200 and png.data.startswith(b"\x89PNG")


# ---------------------------------------------------------------- over a real run (mock provider)
@pytest.mark.timeout(240)
def test_source_reads_a_running_live_chat_task_as_the_export_does(tmp_path):
    """Two HITs done (one worker rating the QC bot highest), a third worker mid-chat: the figures agree with
    Mephisto's units and with `dialeval export`'s records; a study not on Prolific has no money and gets no
    Prolific files."""
    from parlai_dialeval.dashboard.source import TaskSource

    from .test_live_chat_da_world import ECHO, MockWorker, export_records, launch

    run = launch(tmp_path, free_port(), {"qc": ECHO, "a": ECHO, "b": ECHO}, num_slots=3, min_inputs=1, seed=3)
    try:
        for name, good in (("GOOD", True), ("BAD", False)):
            worker = MockWorker(run, name)
            for slot, conv in enumerate(worker.record()["conversations"]):
                worker.chat(slot, 1)
                low, high = [5 + k for k in range(7)], [70 + 3 * k + slot for k in range(7)]
                worker.rate(slot, (low if conv["model"] == "qc" else high) if good else
                            (high if conv["model"] == "qc" else low))
            worker.wait_phase("feedback")
            worker.send({"action": "feedback", "feedback": ""})
            worker._wait(lambda: worker.record()["finished"])
            worker.server.submit_mock_unit(worker.agent_id, {"final_data": {}})
            worker._wait(lambda: worker.agent.get_status() == "completed")
        third = MockWorker(run, "THIRD")
        third.chat(0, 1)
        # what the launch records every 10 s (runner.LaunchedTask.serve): a line when the counts changed
        log = run.progress
        assert log.path == unit_progress.log_path(run.data_dir, "lcda_test")
        assert log.sample(1000.0) and not log.sample(1010.0)
        source = TaskSource("lcda_test", run.data_dir)
        data = source.snapshot()
        _, _, records = export_records(run, tmp_path)
    finally:
        run.shutdown()
    progress = data["progress"]
    # (Mephisto's unit rows still say "assigned" for the two done: only the launcher's 10 s poll updates them)
    assert (progress["done"], progress["in_flight"], progress["left"]) == (2, 1, 3)
    assert progress["active"] == ["THIRD_sandbox"]
    # and once more as the launch stops: the third worker's unit is no longer in flight
    first, last = unit_progress.read_log(log.path)
    assert first == sample(1000.0, 2, 1, 3) and (last["done"], last["in_flight"]) == (2, 0)
    # the launch's reading and this one agree: nothing to draw (the page's own loads never make a chart)
    assert data["history_samples"] == 2 and data["progress_chart"] is None
    complete = {}
    for r in records:
        if r["type"] == "conversation" and r["status"] == "complete":
            complete[r["models"][0]] = complete.get(r["models"][0], 0) + 1
    assert {g["group"]: g["done"] for g in data["groups"]} == complete == {"qc": 2, "a": 2, "b": 2}
    # the third worker is with the first of their three planned slots (issue 50: all three counted)
    assert sum(g["in_flight"] for g in data["groups"]) == 1 and sum(g["to_come"] for g in data["groups"]) == 2
    assert [(q["worker"], q["check"]) for q in data["quality"]] == [
        ("BAD_sandbox", "fail"), ("THIRD_sandbox", "-"), ("GOOD_sandbox", "pass")]
    assert data["on_prolific"] is False and source.money() is None
    assert not (run.data_dir / "prolific").exists()
    work, ratings = source.work("GOOD_sandbox")
    assert len(work) == 3 and sum(len(v) for v in ratings.values()) == 3 * 7


def test_unit_status_follows_the_agent_as_mephisto_computes_it():
    assert unit_progress.unit_status("assigned", "completed") == "completed"
    assert unit_progress.unit_status("assigned", "in task") == "assigned"
    assert unit_progress.unit_status("assigned", "disconnect") == "launched"  # free for another worker
    assert unit_progress.unit_status("launched", None) == "launched"
    assert unit_progress.unit_status("expired", "in task") == "expired"


def test_dashboard_command_refuses_a_task_never_launched(tmp_path):
    port = free_port()
    done = dialeval_run(["dashboard", "nothing_here", "--mephisto-data", str(tmp_path / "empty"), "--port",
                         str(port)], timeout=120)
    assert done.returncode == 2 and "no task named 'nothing_here'" in done.stderr, done.stderr[-2000:]
    assert "Dashboard:" not in done.stdout
