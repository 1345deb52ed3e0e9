"""The rule of a static task's onboarding tries (platform/onboarding_tries.py) on stand-in objects: a
failed onboarding is cleared while tries remain, never after; the try number the page is sent; a try
beyond those allowed never passes; a failed try's registration is forgotten only while tries remain.
The whole flow through Mephisto is test_acute_mock.py and test_acute_onboarding_tries_browser.py."""
from __future__ import annotations

from types import SimpleNamespace

import pytest

from parlai_dialeval.crowdsourcing.platform import onboarding_tries as tries

QUAL = "dialeval_acute_onboarded"


class Worker:
    def __init__(self, quals: dict):
        self.db_id, self.quals = "7", dict(quals)

    def is_disqualified(self, name):
        return name in self.quals and not self.quals[name]

    def revoke_qualification(self, name):
        self.quals.pop(name, None)


def task_run(rejected: int):
    """A task run whose database holds ``rejected`` failed onboardings of worker 7."""
    def find_onboarding_agents(status=None, worker_id=None, task_id=None):
        assert (status, worker_id, task_id) == ("rejected", "7", "task1")
        return [object()] * rejected
    return SimpleNamespace(task_id="task1", db=SimpleNamespace(find_onboarding_agents=find_onboarding_agents))


ARGS = SimpleNamespace(blueprint={"onboarding_qualification": QUAL})


@pytest.mark.parametrize("allowed, rejected, cleared", [(2, 1, True), (2, 2, False), (3, 2, True), (1, 1, False)])
def test_a_failed_onboarding_is_cleared_only_while_tries_remain(allowed, rejected, cleared):
    worker = Worker({QUAL: 0, f"{QUAL}-failed": 0})  # what Mephisto grants at a failed onboarding
    state = SimpleNamespace(onboarding_tries=allowed)
    assert tries.allow_another_try(task_run(rejected), ARGS, state, worker) is cleared
    assert worker.quals == ({} if cleared else {QUAL: 0, f"{QUAL}-failed": 0})


def test_a_passed_or_new_worker_is_left_alone_and_one_try_by_default():
    for quals in ({QUAL: 1}, {}):
        worker = Worker(quals)
        assert not tries.allow_another_try(task_run(1), ARGS, SimpleNamespace(onboarding_tries=2), worker)
        assert worker.quals == quals
    assert tries.tries_allowed(SimpleNamespace()) == 1  # a task that sets nothing: Mephisto's one try


class Base:
    def __init__(self, task_run, args, shared_state):
        self.shared_state = shared_state

    def get_onboarding_data(self, worker_id):
        return {"onboarding": True}

    def validate_onboarding(self, worker, onboarding_agent):
        return onboarding_agent.right


class Blueprint(tries.OnboardingTries, Base):
    pass


def onboarding_agent(right: bool, registrations: dict):
    client_io = SimpleNamespace(agents_by_registration_id=registrations)
    return SimpleNamespace(right=right, get_agent_id=lambda: "onboarding_3",
                           get_live_run=lambda: SimpleNamespace(client_io=client_io))


def test_try_number_sent_and_no_pass_beyond_the_tries():
    blueprint = Blueprint(task_run(1), ARGS, SimpleNamespace(onboarding_tries=2))
    assert blueprint.get_onboarding_data("7") == {"onboarding": True, "try": 2, "max_tries": 2}
    assert blueprint.validate_onboarding(Worker({}), onboarding_agent(True, {}))
    late = Blueprint(task_run(2), ARGS, SimpleNamespace(onboarding_tries=2))  # a third page, opened early
    assert not late.validate_onboarding(Worker({}), onboarding_agent(True, {}))


def test_a_failed_try_forgets_its_registration_only_while_tries_remain():
    first = {"SESSION-PID": "onboarding_3", "OTHER": "onboarding_4"}
    Blueprint(task_run(0), ARGS, SimpleNamespace(onboarding_tries=2)).validate_onboarding(
        Worker({}), onboarding_agent(False, first))
    assert first == {"OTHER": "onboarding_4"}  # a reload of that page registers afresh: the next try
    last = {"SESSION-PID": "onboarding_3"}
    Blueprint(task_run(1), ARGS, SimpleNamespace(onboarding_tries=2)).validate_onboarding(
        Worker({}), onboarding_agent(False, last))
    assert last == {"SESSION-PID": "onboarding_3"}  # no try left: Mephisto answers the reload "not qualified"


def test_the_mephisto_internals_relied_on_are_checked(monkeypatch):
    from mephisto.operations import worker_pool

    from parlai_dialeval.compat.mephisto import require_onboarding_order
    from parlai_dialeval.compat.patching import CompatError

    require_onboarding_order()  # the installed Mephisto 1.1.1

    class MovedOn:  # a worker pool that no longer filters units where this module needs it
        async def register_agent(self, crowd_data, worker, request_id):
            return None

        async def register_agent_from_onboarding(self, onboarding_agent):
            return None

    monkeypatch.setattr(worker_pool, "WorkerPool", MovedOn)
    with pytest.raises(CompatError, match="filter_units_for_worker"):
        require_onboarding_order()
