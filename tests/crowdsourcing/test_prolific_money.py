"""A bonus is paid exactly once whatever fails and when (issue 27): Prolific's ``pay`` is not idempotent and
pays "in the following minutes" (docs.prolific.com, "Pay bonuses"), so after an ambiguous failure the
ledger says "pending: check on Prolific", nothing pays again by itself, and a later review settles it from
Prolific's records. Faults are injected into the fake before, during and after ``pay``; the fake's
``payments`` is the money that really moved."""
from __future__ import annotations

from types import SimpleNamespace

import pytest

from parlai_dialeval.errors import DialevalError
from parlai_dialeval.providers.prolific import api, bonus, common
from parlai_dialeval.providers.prolific.datastore import ProlificDatastore, save_token
from parlai_dialeval.providers.prolific.fake import FakeProlific

from .prolific_harness import TOKEN

CODE = "DEMONEY01"


class Ledger:
    """A finished submission of PID_A on the fake, and the provider's ledger for it (no Mephisto run: the
    bonus code needs only the agent's submission, worker name and status)."""

    def __init__(self, fake, root):
        self.fake = fake
        st = fake.state
        with st.lock:
            ws = next(iter(st.workspaces))
            project = st.api_create_project(ws, {}, {"title": "money"})["id"]
            study = st.api_create_study({}, {
                "project": project, "name": "t", "description": "t",
                "external_study_url": "https://x/?p={{%PROLIFIC_PID%}}",
                "prolific_id_option": "url_parameters", "completion_option": "code",
                "completion_codes": [{"code": CODE, "code_type": "COMPLETED",
                                      "actions": [{"action": "MANUALLY_REVIEW"}]}],
                "total_available_places": 1, "estimated_completion_time": 10, "reward": 200})
            st.api_transition_study(study["id"], {}, {"action": "PUBLISH"})
            _, sub = st.start(study["id"], "PID_A")
            st.complete(CODE, sub["id"], None)
        self.store = ProlificDatastore(root)
        self.store.run("INSERT INTO studies (task_run_id, task_name, requester_name, api_base_url, study_id, "
                       "currency, status) VALUES ('1', 'money', 'lab', ?, ?, 'GBP', 'published')",
                       fake.api_base_url, study["id"])
        self.db = SimpleNamespace(get_datastore_for_provider=lambda kind: self.store)
        self.agent = SimpleNamespace(task_run_id="1", submission_id=lambda: sub["id"], get_status=lambda: "completed",
                                     get_worker=lambda: SimpleNamespace(worker_name="PID_A"))
        self.submission, self.study = sub["id"], study["id"]

    def pay(self, amount="0.50", reason="careful work"):
        return bonus.pay(self.db, self.agent, amount, reason)

    def paid(self) -> list[int]:
        return [p["amount"] for p in self.fake.state.payments]

    def pay_calls(self) -> list[int]:
        return [c["status"] for c in self.fake.state.calls if c["path"].endswith("/pay/")]

    def state(self, reason="careful work") -> str:
        return self.store.decisions(kind="bonus", reason=reason)[0]["state"]

    def review(self) -> dict:
        """What `dialeval review` does first: read the study's submissions (a list, whose items carry no
        ``bonus_payments``) and settle the ambiguous bonuses from Prolific's records."""
        client = api.ProlificClient(self.fake.api_base_url, TOKEN, max_retries=0)
        try:
            return bonus.settle_all(self.store, client, client.submissions(self.study))
        finally:
            client.close()


@pytest.fixture
def ledger_for(tmp_path, monkeypatch):
    servers = []

    def make(**fake_kwargs) -> Ledger:
        fake = FakeProlific(token=TOKEN, **fake_kwargs).start()
        servers.append(fake)
        root = tmp_path / "prolific"
        monkeypatch.setattr(common, "provider_root", lambda: root)
        save_token(root, "lab", TOKEN, fake.api_base_url)
        return Ledger(fake, root)

    yield make
    for fake in servers:
        fake.stop()


def test_plain_pay_once_and_refuse_the_same_again(ledger_for):
    ledger = ledger_for()
    ledger.fake.inject(429, 1, path=r"submissions/bonus-payments/$", retry_after=0.1)  # a set-up pays nothing: retried
    assert ledger.pay() == "paid 0.50 GBP to PID_A (careful work)"
    with pytest.raises(DialevalError, match="already paid"):
        ledger.pay()
    assert ledger.paid() == [50] and ledger.pay_calls() == [202]


def test_500_after_pay_was_accepted(ledger_for):
    ledger = ledger_for()
    ledger.fake.inject(500, 1, path=r"/pay/$", after=True)
    with pytest.raises(DialevalError, match="pending: check on Prolific"):
        ledger.pay()
    assert ledger.state() == "unsure" and ledger.paid() == [50]
    with pytest.raises(DialevalError, match="already paid"):  # asked again: Prolific's records settle it
        ledger.pay()
    assert ledger.state() == "paid" and ledger.paid() == [50] and ledger.pay_calls() == [500]


def test_timeout_while_paying(ledger_for, monkeypatch):
    ledger = ledger_for()
    monkeypatch.setattr(api, "DEFAULT_TIMEOUT", 0.5)
    ledger.fake.inject(202, 1, path=r"/pay/$", after=True, delay=2.0)  # paid, but the answer comes too late
    with pytest.raises(DialevalError, match="pending: check on Prolific"):
        ledger.pay()
    assert ledger.state() == "unsure"
    assert ledger.review() == {} and ledger.state() == "paid"
    assert ledger.paid() == [50] and len(ledger.pay_calls()) == 1


def test_429_then_500_before_paying(ledger_for, monkeypatch):
    """Prolific refused both times: nothing moved. Still nothing pays again by itself; the researcher,
    having checked, sends it once more, and that pays it once."""
    ledger = ledger_for()
    ledger.fake.inject(429, 1, path=r"/pay/$", retry_after=0.1)  # refused unprocessed: retried
    ledger.fake.inject(500, 1, path=r"/pay/$")
    with pytest.raises(DialevalError, match="pending: check on Prolific"):
        ledger.pay()
    with pytest.raises(DialevalError, match="pending: check on Prolific"):
        ledger.pay()
    assert ledger.review() == {ledger.submission: 1} and ledger.paid() == []
    assert ledger.pay_calls() == [429, 500]
    decision = ledger.store.decisions(kind="bonus")[0]["id"]
    with pytest.raises(DialevalError, match="wait until"):  # too soon: Prolific may still be paying it
        bonus.repay(ledger.db, decision)
    monkeypatch.setattr(bonus, "REPAY_AFTER", 0)
    assert bonus.repay(ledger.db, decision) == "paid 0.50 GBP to PID_A (careful work)"
    assert ledger.paid() == [50] and ledger.state() == "paid"
    with pytest.raises(DialevalError, match="is paid, not pending"):
        bonus.repay(ledger.db, decision)


def test_asynchronous_payment_is_settled_later_never_paid_again(ledger_for, monkeypatch):
    now = [0.0]  # the fake's clock: the bonus shows on the submission 1.5 s after it was paid
    ledger = ledger_for(bonus_delay=1.5, clock=lambda: now[0])
    ledger.fake.inject(500, 1, path=r"/pay/$", after=True)
    with pytest.raises(DialevalError, match="pending: check on Prolific"):
        ledger.pay()
    # right after: the submission shows no bonus yet; asked again, it still does not pay
    with pytest.raises(DialevalError, match="pending: check on Prolific"):
        ledger.pay()
    assert ledger.review() == {ledger.submission: 1} and ledger.state() == "unsure"
    monkeypatch.setattr(bonus, "REPAY_AFTER", 0)  # even a researcher too quick to resend is stopped once it shows
    now[0] += 1.6
    with pytest.raises(DialevalError, match="paid after all"):
        bonus.repay(ledger.db, ledger.store.decisions(kind="bonus")[0]["id"])
    assert ledger.state() == "paid" and ledger.paid() == [50] and len(ledger.pay_calls()) == 1


def test_crash_between_pay_and_ledger(ledger_for, monkeypatch):
    ledger = ledger_for()
    set_decision = ProlificDatastore.set_decision

    def crash_when_paid(self, decision_id, **fields):
        if fields.get("state") == "paid":
            raise KeyboardInterrupt("crash")
        set_decision(self, decision_id, **fields)

    monkeypatch.setattr(ProlificDatastore, "set_decision", crash_when_paid)
    with pytest.raises(KeyboardInterrupt):
        ledger.pay()
    monkeypatch.setattr(ProlificDatastore, "set_decision", set_decision)
    assert ledger.state() == "paying"
    with pytest.raises(DialevalError, match="already paid"):
        ledger.pay()
    assert ledger.paid() == [50] and ledger.state() == "paid"


def test_refused_pay_is_not_paid_and_may_be_sent_again(ledger_for):
    # the study's place holds 2.67 GBP (2.00 + fees) once published: 0.10 GBP is left, the bonus and its fees
    # do not fit
    ledger = ledger_for(balance=277)
    with pytest.raises(api.ProlificRequestError, match="insufficient balance"):
        ledger.pay()
    assert ledger.state() == "failed" and ledger.paid() == []
    with ledger.fake.state.lock:
        for balance in ledger.fake.state.balances.values():
            balance["available_balance"] = 10_000
    assert "paid 0.50 GBP" in ledger.pay()
    assert ledger.paid() == [50] and ledger.pay_calls() == [400, 202]
