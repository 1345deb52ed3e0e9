"""The dashboard without a browser: its figures from hand-made records (expected values worked out by hand
in each test), and its pages through Flask's test client over a stand-in source: nothing but the login form
without the token, participants' text escaped, forms refused without the session's form token, an action
carried out only after its confirmation and only once."""
from __future__ import annotations

import re

import pandas as pd
import pytest

from parlai_dialeval.crowdsourcing.platform import progress as unit_progress
from parlai_dialeval.crowdsourcing.platform.progress import UnitRow
from parlai_dialeval.dashboard import charts, summary
from parlai_dialeval.dashboard.source import standings
from parlai_dialeval.testing.ports import free_port

from .zygote import dialeval_run

HOSTILE = '<img src=x onerror=alert(1)>'
SECRET = "s3cret-token-for-tests"


def conversation(cid, worker, model, status="complete", unit="1", turns=(), **extra):
    return {"type": "conversation", "id": cid, "worker_id": worker, "models": [model], "status": status,
            "assignment_id": unit, "turns": list(turns), **extra}


def test_progress_counts_units_and_estimates_time_left():
    units = [UnitRow("1", "completed", "w1"), UnitRow("2", "accepted", "w2"), UnitRow("3", "assigned", "w3"),
             UnitRow("4", "launched"), UnitRow("5", "created"), UnitRow("6", "expired")]
    records = [conversation("a", "w1", "m", unit="1", assignment_duration=100.0),
               conversation("b", "w1", "n", unit="1", assignment_duration=100.0),
               conversation("c", "w2", "m", unit="2", assignment_duration=300.0),
               conversation("d", "w3", "m", status="incomplete", unit="3", assignment_duration=9.0)]
    got = summary.progress(records, units, started=1000.0, now=1400.0)
    assert (got["done"], got["in_flight"], got["left"], got["withdrawn"], got["total"]) == (2, 1, 2, 1, 6)
    assert got["active"] == ["w3"]
    assert got["median_unit_seconds"] == 200.0  # units 1 and 2: 100 s and 300 s (unit 3 is not done)
    # 2 units in 400 s: 3 more (1 in flight, 2 left) take 600 s at that pace
    assert got["eta_seconds"] == pytest.approx(600.0)
    assert summary.progress(records, units[:2], 1000.0, 1400.0)["eta_seconds"] == 0.0
    assert summary.progress([], [UnitRow("1", "launched")], 1000.0, 1400.0)["eta_seconds"] is None


def test_unit_seconds_sums_durations_where_no_assignment_duration():
    records = [{"type": "comparison", "assignment_id": "7", "duration": 4.0, "model_a": "a", "model_b": "b"},
               {"type": "comparison", "assignment_id": "7", "duration": 6.5, "model_a": "a", "model_b": "b"},
               {"type": "comparison", "assignment_id": "7", "duration": 99.0, "onboarding": True,
                "model_a": "a", "model_b": "b"}]
    assert summary.unit_seconds(records, {"7"}) == [10.5]


def test_per_group_by_model_and_pair():
    units = [UnitRow("1", "completed"), UnitRow("2", "assigned"), UnitRow("3", "launched")]
    records = [conversation("a", "w1", "m", unit="1"), conversation("b", "w1", "n", status="failed", unit="1"),
               conversation("c", "w2", "m", status="incomplete", unit="2"),
               conversation("d", "w4", "m", status="returned", unit="3"),
               conversation("e", "w5", "m", status="onboarding", unit="3"),
               {"type": "comparison", "worker_id": "w1", "model_a": "y", "model_b": "x", "choice": "a"},
               {"type": "comparison", "worker_id": "w1", "model_a": "x", "model_b": "y", "choice": "b"}]
    assert summary.per_group(records, units) == [
        {"group": "m", "done": 1, "in_flight": 1, "to_come": 0, "failed": 0, "dropped": 1},
        {"group": "n", "done": 0, "in_flight": 0, "to_come": 0, "failed": 1, "dropped": 0},
        {"group": "x vs y", "done": 2, "in_flight": 0, "to_come": 0, "failed": 0, "dropped": 0}]


def test_in_flight_counts_only_the_bot_a_participant_is_with():
    """Issue 50, item 8: every bot showed "in flight 1" while the participant was still with the first. A live-chat
    unit plans its slots ahead: slot 0 rated, slot 1 being chatted in, slots 2 and 3 not reached; a half chat of slot
    1 that a relaunch restarted (the same slot, later in the export) is not where the participant is."""
    units = [UnitRow("1", "assigned", "w1")]
    reached, ahead = {"reached": True}, {"reached": False}
    records = [conversation("s0", "w1", "a", slot=0, meta=reached),
               conversation("s1", "w1", "b", status="incomplete", slot=1, meta=reached),
               conversation("s2", "w1", "c", status="incomplete", slot=2, meta=ahead),
               conversation("s3", "w1", "d", status="incomplete", slot=3, meta=ahead),
               conversation("s1_restarted0", "w1", "b", status="incomplete", slot=1, meta=reached)]
    rows = {row["group"]: row for row in summary.per_group(records, units)}
    assert [(g, rows[g]["done"], rows[g]["in_flight"], rows[g]["to_come"], rows[g]["dropped"]) for g in "abcd"] == [
        ("a", 1, 0, 0, 0), ("b", 0, 1, 0, 1), ("c", 0, 0, 1, 0), ("d", 0, 0, 1, 0)]
    # PW-Turn and SM-Eval: one conversation a unit, in flight while its unit is
    assert summary.per_group([conversation("p", "w1", "x vs y", status="incomplete")], units)[0]["in_flight"] == 1


def test_quality_puts_failing_participants_first():
    records = [conversation("a", "zed", "m"), conversation("b", "amy", "m"), conversation("c", "bob", "m"),
               conversation("d", "new", "m", status="incomplete")]
    checks = pd.DataFrame({"worker_id": ["amy", "bob", "zed"], "p_value": [0.01, float("nan"), 0.9],
                           "passed": [True, False, False], "note": ["", "all ratings equal", ""]})
    rows = summary.quality(checks, records)
    assert [(r["worker"], r["check"]) for r in rows] == [("bob", "fail"), ("zed", "fail"), ("new", "-"),
                                                         ("amy", "pass")]
    assert rows[0]["p_value"] is None and rows[0]["note"] == "all ratings equal"
    assert rows[2]["work"] == {"incomplete": 1}
    assert {r["check"] for r in summary.quality(None, records)} == {"n/a"}


def test_a_participant_who_disconnected_did_not_submit_rather_than_failed():
    """Issue 40 item 1: worker_2 rated one chat of six and disconnected; the live-chat check (run on submitted
    HITs only) has no row for them. Before: check '-', work '1 complete, 5 incomplete', no state."""
    reached = {"reached": True}
    records = [conversation("a", "w1", "m", submission="submitted", meta=reached),
               conversation("b", "w2", "m", submission="disconnected", unit="2", meta=reached),
               conversation("c", "w2", "n", status="incomplete", submission="disconnected", unit="2", meta=reached),
               *(conversation(f"d{k}", "w2", "n", status="incomplete", submission="disconnected", unit="2",
                              meta={"reached": False}) for k in range(4)),
               conversation("e", "w3", "m", submission="working", unit="3", meta=reached),
               conversation("f", "w3", "n", status="incomplete", submission="working", unit="3",
                            meta={"reached": False})]
    checks = pd.DataFrame({"worker_id": ["w1"], "p_value": [0.01], "passed": [True], "note": [""]})
    rows = {r["worker"]: r for r in summary.quality(checks, records)}
    assert (rows["w2"]["state"], rows["w2"]["check"]) == ("did not finish: disconnected", "did not submit")
    assert rows["w2"]["work"] == {"complete": 1, "incomplete": 1, "not started": 4}
    assert (rows["w3"]["state"], rows["w3"]["check"], rows["w3"]["note"]) == ("in progress", "-",
                                                                             "checked once they submit")
    assert rows["w3"]["work"] == {"complete": 1, "not started": 1}
    assert (rows["w1"]["state"], rows["w1"]["check"]) == ("done", "pass")


def test_onboarding_results_and_their_place_in_the_quality_table():
    assert summary.onboarding_result(["rejected", "approved"]) == "passed"
    assert summary.onboarding_result(["approved", "rejected"]) == "passed"  # passed once is enough for Mephisto
    assert summary.onboarding_result(["disconnect", "rejected"]) == "failed"
    assert summary.onboarding_result(["onboarding"]) == "in progress"
    assert summary.onboarding_result(["disconnect"]) == "left"
    records = [{"type": "comparison", "worker_id": "ann", "model_a": "x", "model_b": "y", "choice": "a"},
               {"type": "comparison", "worker_id": "cat", "model_a": "x", "model_b": "y", "choice": "a",
                "onboarding": True}]
    rows = summary.quality(None, records, {"ann": ["rejected", "approved"], "cat": ["rejected", "rejected"],
                                           "dan": ["onboarding"]})
    assert [(r["worker"], r["onboarding"], r["onboarding_tries"]) for r in rows] == [
        ("cat", "failed", 2), ("ann", "passed", 2), ("dan", "in progress", 0)]  # tries: graded attempts
    # PW-Turn: two tries inside one Mephisto attempt, told by the onboarding records' meta.try
    pw_turn = [{"type": "comparison", "worker_id": "eve", "model_a": "x", "model_b": "y", "choice": "a",
                "onboarding": True, "meta": {"try": number}} for number in (1, 2)]
    assert rows[0]["work"] == {"onboarding": 1} and rows[2]["work"] == {}
    rows = summary.quality(None, pw_turn, {"eve": ["approved"]})
    assert [(r["onboarding"], r["onboarding_tries"]) for r in rows] == [("passed", 2)]


def test_endpoints_latency_percentiles_tokens_and_failures():
    turns = [{"speaker": "human", "text": "hi"}] + [
        {"speaker": "bot1", "text": "x", "meta": {"latency": float(k), "prompt_tokens": 10, "completion_tokens": 2}}
        for k in range(1, 11)]
    records = [conversation("a", "w", "bot1", turns=turns),
               conversation("b", "w", "bot2", status="failed", turns=[{"speaker": "bot2", "text": "y"}])]
    bot1, bot2 = summary.endpoints(records)
    # latencies 1..10 s: median 5.5; numpy's linear 95th percentile = 1 + 0.95 * 9 = 9.55
    assert (bot1["replies"], bot1["latency_p50"], bot1["latency_p95"]) == (10, 5.5, pytest.approx(9.55))
    assert (bot1["prompt_tokens"], bot1["completion_tokens"], bot1["failed"]) == (100, 20, 0)
    assert (bot2["replies"], bot2["latency_p50"], bot2["failed"]) == (1, None, 1)


def test_money_spent_and_committed():
    studies = [{"study_id": "s1", "reward_minor": 300, "currency": "GBP"}]
    rows = [{"study": "s1", "prolific_status": "APPROVED", "bonus_paid": "0.75"},
            {"study": "s1", "prolific_status": "REJECTED", "bonus_paid": "0.00"},
            {"study": "s1", "prolific_status": "AWAITING REVIEW", "bonus_paid": "0.50"},
            {"study": "s1", "prolific_status": "ACTIVE", "bonus_paid": "0.00"},
            {"study": "s1", "prolific_status": "RETURNED", "bonus_paid": "0.00"}]
    got = summary.money(rows, studies)
    assert (got["spent_minor"], got["bonuses_paid_minor"], got["committed_minor"]) == (300 + 125, 125, 600)
    assert got["currency"] == "GBP"


def test_bot_means_turn_reversed_statements_round_with_a_t_interval():
    """Issue 40: nobody could see who is ahead. 'robotic' (positive: false, 0-100) 10, 30, 20 for bot a are
    90, 70, 80 not robotic: mean 80, sd 10, t(0.975, 2) = 4.3027 (tables), 80 +- 4.3027 * 10 / sqrt(3)."""
    study = {"type": "study", "criteria": [{"name": "robotic", "positive": False, "min": 0, "max": 100},
                                           {"name": "fun", "positive": True, "min": 0, "max": 100}]}
    ratings = [{"type": "rating", "model": m, "criterion": c, "value": v, "scale_min": 0, "scale_max": 100}
               for m, c, v in [("a", "robotic", 10), ("a", "robotic", 30), ("a", "robotic", 20), ("b", "fun", 64)]]
    onboarding = {"type": "rating", "model": "a", "criterion": "robotic", "value": 100, "onboarding": True}
    fun_b, robotic_a = summary.bot_means([study, *ratings, onboarding])
    assert (robotic_a["label"], robotic_a["n"], robotic_a["mean"]) == ("not robotic", 3, 80.0)
    half = 4.302653 * 10 / 3 ** 0.5
    assert (robotic_a["ci_low"], robotic_a["ci_high"]) == (pytest.approx(80 - half), pytest.approx(80 + half))
    assert (fun_b["label"], fun_b["mean"], fun_b["ci_low"], fun_b["scale"]) == ("fun", 64.0, None, (0, 100))


def test_win_rates_with_a_wilson_interval_name_the_bot_ahead_only_when_clear():
    def compare(a, b, choices):
        return [{"type": "comparison", "model_a": a, "model_b": b, "choice": c} for c in choices]

    records = compare("y", "x", "bbbbbbbaat") + compare("p", "q", "a" * 19 + "b") + [
        {"type": "comparison", "model_a": "x", "model_b": "y", "choice": "tie", "automatic": True}]
    pq, xy = summary.win_rates(records)  # pairs in name order

    def wilson(k, n, z=1.959964):  # Wilson (1927), written out independently of statsmodels
        p = k / n
        centre, half = (p + z * z / (2 * n)) / (1 + z * z / n), z / (1 + z * z / n) * (p * (1 - p) / n + z * z / (4 * n * n)) ** 0.5
        return centre - half, centre + half

    assert (xy["a"], xy["wins_a"], xy["wins_b"], xy["ties"]) == ("x", 7, 2, 1)  # x was model b of "y vs x"
    assert (xy["ci_low"], xy["ci_high"]) == pytest.approx(wilson(7, 9)) and xy["ahead"] == ""  # 0.45 < 0.5
    assert (pq["win_rate_a"], pq["ci_low"], pq["ahead"]) == (0.95, pytest.approx(wilson(19, 20)[0]), "p")


def test_a_bot_too_slow_for_people_is_warned_of():
    """Issue 40: the real model showed 'latency p50 72.49 s, p95 98.09 s' without a warning."""
    slow = [{"speaker": "human", "text": "hi"}] + [
        {"speaker": "big", "text": "x", "meta": {"latency": 60.0 + k, "first_token_latency": 0.5}} for k in range(20)]
    quick = [{"speaker": "small", "text": "x", "meta": {"latency": 2.0, "first_token_latency": 11.0 if k == 19 else 0.2}}
             for k in range(20)]
    bots = summary.endpoints([conversation("a", "w", "big", turns=slow), conversation("b", "w", "small", turns=quick)])
    warned = summary.too_slow(bots, 10.0)
    # big: whole replies 60..79 s (p95 = 60 + 0.95 * 19 = 78.05 s); small: one first token in twenty at 11 s,
    # numpy's p95 = 0.2 + 0.05 * 10.8 = 0.74 s, under the threshold. In plain words (issue 50, item 8: "one reply in
    # twenty waits longer than a whole reply 49.2 s")
    assert warned == ["big keeps people waiting too long: one reply in twenty took more than 78.0 s to arrive in "
                      "full, and people stop waiting after about 10 s"]
    assert summary.too_slow(bots, 100.0) == []
    first = summary.endpoints([conversation("c", "w", "s", turns=[
        {"speaker": "s", "text": "x", "meta": {"latency": 30.0, "first_token_latency": 12.0}}])])
    assert summary.too_slow(first, 10.0) == [
        "s keeps people waiting too long: one reply in twenty took more than 12.0 s before its first word showed and "
        "more than 30.0 s to arrive in full, and people stop waiting after about 10 s"]


def sample(at: float, done: int, in_flight: int, left: int = 0) -> dict:
    return {"at": at, "done": done, "in_flight": in_flight, "left": left}


def test_the_progress_chart_draws_the_launchs_record_and_never_a_flat_line():
    """Issue 50, item 8: two page loads drew one flat line. The history is the launch's (platform/progress.py):
    nothing changed since it began, no chart; a change, a chart over the minutes since the launch began."""
    assert charts.progress_chart([sample(0.0, 0, 1, 3), sample(4.0, 0, 1, 3)]) is None
    assert charts.progress_chart([sample(0.0, 0, 1, 3)]) is None
    drawn = charts.progress_chart([sample(0.0, 0, 0, 4), sample(600.0, 0, 1, 3), sample(1500.0, 1, 0, 3)])
    assert drawn.startswith("<svg") and "minutes since the launch began" in drawn
    assert "hours since" in charts.progress_chart([sample(0.0, 0, 1), sample(5 * 3600.0, 1, 0)])


def test_the_launchs_progress_log_is_read_back_without_a_half_written_line(tmp_path):
    path = unit_progress.log_path(tmp_path, "study")
    path.parent.mkdir()
    path.write_text('{"at": 1.0, "done": 0, "in_flight": 1, "left": 3}\n{"at": 2.0, "done": 1, "in_f')
    assert unit_progress.read_log(path) == [sample(1.0, 0, 1, 3)]
    assert unit_progress.read_log(tmp_path / "nothing.jsonl") == []


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
