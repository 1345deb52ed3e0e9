"""The completion code reaches Prolific from our server, never from the page (issue 26, item 5).

Prolific completes a submission when the participant's browser brings the study's completion code to
``app.prolific.com/submissions/complete?cc=CODE``, or when the researcher's server sends
``POST submissions/{id}/transition/ {"action": "COMPLETE", "completion_code": CODE}`` (Prolific's CLI,
cmd/submission/transition.go). A code in the page's JavaScript would let anyone complete without doing
the work, so the code stays on the server: once Mephisto has accepted a unit (``ProlificAgent.mark_done``)
the submission is completed here, and the page only sends the participant back to Prolific (no ``cc``).
A completion that fails is logged; ``dialeval review`` completes it before approving.
"""
from __future__ import annotations

from mephisto.utils.logger_core import get_logger

from parlai_dialeval.errors import DialevalError
from parlai_dialeval.providers.prolific import common
from parlai_dialeval.providers.prolific.api import ProlificError

logger = get_logger(name=__name__)
DONE = frozenset({"AWAITING REVIEW", "APPROVED", "REJECTED", "PARTIALLY APPROVED", "PROCESSING"})


def complete(client, submission_id: str, code: str) -> None:
    """COMPLETE the submission with the study's code; one already completed counts as done."""
    try:
        client.call("POST", f"submissions/{submission_id}/transition/",
                    json={"action": "COMPLETE", "completion_code": code})
    except ProlificError:
        if client.submission(submission_id).get("status") not in DONE:
            raise


def complete_submission(db, agent) -> bool:
    """Complete the agent's Prolific submission; False (logged) when Prolific could not be told."""
    try:
        client, study = common.client_for_run(db, agent.task_run_id)
        try:
            complete(client, agent.submission_id(), study["completion_code"])
        finally:
            client.close()
    except (ProlificError, DialevalError) as error:
        logger.error(f"could not complete the Prolific submission of agent {agent.db_id}: {error}; "
                     "`dialeval review` completes it before approving")
        return False
    return True
