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
from parlai_dialeval.providers.prolific import common, verify
from parlai_dialeval.providers.prolific.api import ProlificError

logger = get_logger(name=__name__)
DONE = frozenset({"AWAITING REVIEW", "APPROVED", "REJECTED", "PARTIALLY APPROVED", "PROCESSING"})


def complete(client, submission_id: str, code: str, db=None) -> None:
    """COMPLETE the submission with the study's code; one already completed counts as done. One Prolific says
    is no longer under way is noted (``db``) and raises."""
    try:
        client.transition_submission(submission_id, "COMPLETE", completion_code=code)
    except ProlificError:
        status = client.submission(submission_id).get("status")
        if status not in DONE:
            if db is not None:  # e.g. returned meanwhile: its work is kept apart (verify.ended)
                verify.note_status(db, submission_id, status)
            raise


def complete_submission(db, agent) -> bool:
    """Complete the agent's Prolific submission; False (logged) when Prolific could not be told."""
    try:
        client, study = common.client_for_run(db, agent.task_run_id)
        try:
            complete(client, agent.submission_id(), study["completion_code"], db)
        finally:
            client.close()
    except (ProlificError, DialevalError) as error:
        logger.error(f"could not complete the Prolific submission of agent {agent.db_id}: {error}; "
                     "`dialeval review` completes it before approving")
        return False
    return True
