"""Fake Prolific: a stdlib HTTP server on 127.0.0.1 that keeps state the way Prolific's API does.

Tests point ``mephisto.provider.api_base_url`` and ``completion_url`` at it; researchers run it by hand
to rehearse a study without spending money::

    python -m parlai_dialeval.providers.prolific.fake --port 8765 --token rehearsal-token --balance 500

It answers every endpoint of ``endpoints.TABLE`` (the rows the client calls by), each by its handler of the
same name, paged and with the status its row says: workspaces (with a balance), projects, studies and their
transitions, submissions and theirs, bonus set-ups (paid by a separate, non-idempotent ``pay``), participant
groups, messages, demographic exports, webhook secrets and subscriptions (``hooks.py``: signed events POSTed to
the subscriber), and the study cost calculator. Modules: ``core`` (state, routing, paging), ``studies``,
``people`` (bonuses, groups, messages, demographics), ``hooks``, ``server`` (HTTP). Hooks for people and tests
(not part of Prolific's API):

- ``GET /studies/<id>/start?PROLIFIC_PID=<pid>``: a participant takes a place; redirected to the
  study URL with ``{{%PROLIFIC_PID%}}``, ``{{%STUDY_ID%}}``, ``{{%SESSION_ID%}}`` filled in.
- ``GET /submissions/complete?cc=<code>``: Prolific's completion page (the participant's session cookie,
  or ``&participant=<pid>``, says whose submission): the right code moves it to AWAITING REVIEW; without
  ``cc`` it shows the submission's state (completed by the researcher's server with the COMPLETE
  transition, or still waiting for it: the page reloads itself).
- ``POST /__fake__/faults`` ``{"status": 429, "count": 1, "path": "regex", "method": "POST",
  "retry_after": 1, "after": false, "delay": 0}``: the next ``count`` matching API calls answer ``status``
  (401, 404, 429, 500, 503); with ``after`` the call does its work first and only the answer is lost;
  ``delay`` holds the answer that many seconds (a client's timeout).
- ``GET /__fake__/state``, ``POST /__fake__/balance`` ``{"available_balance": pence}``,
  ``POST /__fake__/return`` ``{"submission_id": id, "status": "RETURNED"}`` (the participant returns the
  study, or ``TIMED-OUT``: subscribers are told).

Lists page as Prolific's do, each its own way (its row's ``paging``): at most 20 a page here (Prolific's
default), ``meta.count`` and, except where the row says not, ``_links`` (``next.href`` null on the last page); a
list ignores the other scheme's parameters. A submission's list item and its own record differ as on Prolific
(``studies.listed``, ``studies.single``). Bonuses paid show in the submission's ``bonus_payments`` only
``bonus_delay`` seconds later (Prolific pays "in the following minutes"). Every call is logged with its query,
body and answer (``calls``), every webhook delivery with its headers and body (``deliveries``), for the
contract tests.
"""
from parlai_dialeval.providers.prolific.fake.core import API, PAGE_SIZE, ApiError  # noqa: F401
from parlai_dialeval.providers.prolific.fake.server import FakeProlific, FakeProlificState, main  # noqa: F401
