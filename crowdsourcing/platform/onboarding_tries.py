"""A static task's onboarding with more than one try (``dialeval_static``; PW-Turn's chat world counts its
own tries in the world).

Prolific's attention and comprehension check policy (researcher-help.prolific.com/en/article/fb63bb;
docs/crowdsourcing.md, "Checks and Prolific's policy"): a comprehension check at the start gives at least
two chances, and those who fail it are asked to return the study, never rejected.

Mephisto 1.1.1 disqualifies a worker at the first failed onboarding
(``worker_pool.register_agent_from_onboarding`` grants the onboarding qualification 0). Here a worker who
has failed fewer than ``onboarding_tries`` times has that qualification cleared (as Mephisto's
``OnboardingRequired.clear_onboarding`` does) in ``filter_units_for_worker``, which Mephisto calls right
after grading an onboarding and, for a registering worker, before it checks the qualification
(worker_pool.py 343-352 and 486-497), and the failed onboarding's registration is forgotten: the next
registration starts a new onboarding. The tries are the worker's rejected onboarding agents of the task,
Mephisto's own records, so no page can reset them; the page learns which try it shows from the
onboarding data (``try``, ``max_tries``).
"""
from __future__ import annotations

from mephisto.abstractions._subcomponents.agent_state import AgentState
from mephisto.abstractions.blueprints.abstract.static_task.static_task_runner import StaticTaskRunner
from mephisto.abstractions.blueprints.mixins.onboarding_required import OnboardingRequired

from parlai_dialeval.compat.mephisto import forget_registration, require_onboarding_order

ONBOARDING_TRIES = "onboarding_tries"  # shared-state attribute: the tries a static task's onboarding gives
TRIES_HELP = ("tries at the onboarding before a worker is screened out (Prolific's comprehension-check policy "
              "asks for two: docs/crowdsourcing.md, 'Checks and Prolific's policy')")


def tries_allowed(shared_state) -> int:
    return max(1, int(getattr(shared_state, ONBOARDING_TRIES, 1) or 1))


def failed_tries(task_run, worker_id: str) -> int:
    """The worker's failed onboardings of this task, in any of its runs."""
    return len(task_run.db.find_onboarding_agents(status=AgentState.STATUS_REJECTED, worker_id=worker_id,
                                                  task_id=task_run.task_id))


def allow_another_try(task_run, args, shared_state, worker) -> bool:
    """Clear the failed onboarding of a worker with tries left; True when cleared."""
    qualification = args.blueprint.get("onboarding_qualification")
    if qualification is None or not worker.is_disqualified(qualification):
        return False
    if failed_tries(task_run, worker.db_id) >= tries_allowed(shared_state):
        return False
    worker.revoke_qualification(qualification)
    worker.revoke_qualification(OnboardingRequired.get_failed_qual(qualification))
    return True


class TriesTaskRunner(StaticTaskRunner):
    def filter_units_for_worker(self, units, worker):
        allow_another_try(self.task_run, self.args, self.shared_state, worker)
        return super().filter_units_for_worker(units, worker)


class OnboardingTries:
    """Blueprint mixin (before the static blueprint in the bases): the runner above, the try number in
    the onboarding data, and no pass for a try beyond those allowed (two pages opened at once)."""
    TaskRunnerClass = TriesTaskRunner

    def __init__(self, task_run, args, shared_state):
        super().__init__(task_run, args, shared_state)
        self._tries_task_run = task_run
        if tries_allowed(shared_state) > 1:
            require_onboarding_order()

    def get_onboarding_data(self, worker_id: str) -> dict:
        data = super().get_onboarding_data(worker_id)
        return {**data, "try": failed_tries(self._tries_task_run, worker_id) + 1,
                "max_tries": tries_allowed(self.shared_state)}

    def validate_onboarding(self, worker, onboarding_agent) -> bool:
        failed = failed_tries(self._tries_task_run, worker.db_id)
        if failed >= tries_allowed(self.shared_state):
            return False
        passed = super().validate_onboarding(worker, onboarding_agent)
        if not passed and failed + 1 < tries_allowed(self.shared_state):
            forget_registration(onboarding_agent)
        return passed
