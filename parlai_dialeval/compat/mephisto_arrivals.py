"""Mephisto 1.1.1 gives a place to whatever identity a page sends, and gives a reloading page its agent back
whatever became of the participant's session meanwhile; a crowd provider may vet both.

- ``arrivals_checked``: ``WorkerPool.register_worker`` (a new registration: creates the worker, reserves a unit,
  creates the agent) first asks the run's provider ``refuse_arrival(task_run, crowd_data)``, and
  ``WorkerPool.reconnect_agent`` (a page load naming a registration Mephisto knows) first asks
  ``refuse_reconnect(task_run, crowd_data, agent_id)`` where the provider has it (Prolific: the session is
  checked with Prolific, verify.py). A message goes to the page as Mephisto's own refusals do
  (``failure_reason``) and nothing is created or handed back; ``arrival_settled(task_run, crowd_data)`` is told
  once an admitted registration has its place or was refused one by Mephisto. A provider's refusal is marked
  ``dialeval_refused`` for the router, which refuses a source's new registrations itself after as many of them in
  a minute as the provider would check (crowdsourcing/router/dialeval_claims.js), and removes the mark. The checks run in four threads of their own,
  not Mephisto's default executor, so slow answers from the provider (or a stranger's flood of made-up
  identities) never hold up the threads every participant's unit needs. Retire when Mephisto lets providers
  vet arrivals.
- Two pages of one new participant that register at once (two tabs, a double click) both find no worker and
  both create one; Mephisto's second creation raises ``EntryAlreadyExistsException`` before anything else is made,
  and that page waited for an answer that never came. The registration is now run again, finding the worker.
"""
from __future__ import annotations

import concurrent.futures
import threading
from functools import partial

from parlai_dialeval.compat.patching import is_ours, ours, require_call, require_ours, require_version

WRITTEN_FOR = "1.1.1"
_LOCK = threading.Lock()
_ARRIVALS = None  # the executor of providers' arrival checks, made on first use
REFUSED_FIELD = "dialeval_refused"  # agent_details -> router: the provider refused this identity


def _executor() -> concurrent.futures.ThreadPoolExecutor:
    global _ARRIVALS
    with _LOCK:
        if _ARRIVALS is None:
            _ARRIVALS = concurrent.futures.ThreadPoolExecutor(4, thread_name_prefix="dialeval-arrival")
        return _ARRIVALS


async def _refused(live_run, request_id: str, check) -> bool:
    """Run ``check()`` in the arrival threads; a refusal goes to the page (True: refused)."""
    from mephisto.operations.worker_pool import AgentDetails

    reason = await live_run.loop_wrap.loop.run_in_executor(_executor(), check)
    if reason:
        details = {**AgentDetails(failure_reason=reason).to_dict(), REFUSED_FIELD: True}
        live_run.client_io.enqueue_agent_details(request_id, details)
    return bool(reason)


def arrivals_checked() -> None:
    require_version("mephisto", WRITTEN_FOR, "arrivals_checked")
    from mephisto.abstractions.database import EntryAlreadyExistsException
    from mephisto.operations.client_io_handler import ClientIOHandler
    from mephisto.operations.worker_pool import WorkerPool

    require_call(ClientIOHandler._register_agent, "worker_pool.register_worker(crowd_data, request_id)",
                 "arrivals_checked")
    # the reconnect path keeps the registration's packet, which names the participant (read below)
    require_call(ClientIOHandler._register_agent, "self.request_id_to_packet[request_id] = packet", "arrivals_checked")
    require_call(ClientIOHandler._register_agent, "worker_pool.reconnect_agent(agent_id, request_id)",
                 "arrivals_checked")
    if is_ours(WorkerPool.register_worker):
        return
    # the registration is run again only where making its worker raced: the worker is the first thing it makes
    require_call(WorkerPool.register_worker, "crowd_provider.WorkerClass.new_from_provider_data", "arrivals_checked")
    register, reconnect = WorkerPool.register_worker, WorkerPool.reconnect_agent

    @ours
    async def register_worker(self, crowd_data, request_id):
        live_run = self.get_live_run()
        refuse = getattr(live_run.provider, "refuse_arrival", None)
        if refuse is not None and await _refused(live_run, request_id, partial(refuse, live_run.task_run, crowd_data)):
            return
        try:
            try:
                await register(self, crowd_data, request_id)
            except EntryAlreadyExistsException:  # the worker was made meanwhile by this participant's other page
                await register(self, crowd_data, request_id)
        finally:  # placed or not: the provider stops counting it as on its way
            settled = getattr(live_run.provider, "arrival_settled", None)
            if refuse is not None and settled is not None:
                settled(live_run.task_run, crowd_data)

    @ours
    async def reconnect_agent(self, agent_id, request_id):
        live_run = self.get_live_run()
        refuse = getattr(live_run.provider, "refuse_reconnect", None)
        packet = live_run.client_io.request_id_to_packet.get(request_id)
        crowd_data = (packet.data or {}).get("provider_data") if packet is not None else None
        if refuse is not None and isinstance(crowd_data, dict) and await _refused(
                live_run, request_id, partial(refuse, live_run.task_run, crowd_data, agent_id)):
            return
        await reconnect(self, agent_id, request_id)

    WorkerPool.register_worker = register_worker
    WorkerPool.reconnect_agent = reconnect_agent
    require_ours(WorkerPool, "register_worker", "arrivals_checked")
    require_ours(WorkerPool, "reconnect_agent", "arrivals_checked")


def check() -> list[str]:
    arrivals_checked()
    return [f"mephisto {WRITTEN_FOR}: arrivals and reconnections vetted by the crowd provider"]
