"""The life of a run's Prolific study: created and published (or, when ``dialeval launch`` resumes an
interrupted run, the interrupted run's study taken over), one place added per launched unit, stopped once
no unit of the run can still be worked on. A half-created study is deleted again (no orphan on Prolific).
"""
from __future__ import annotations

import threading

from mephisto.data_model.constants.assignment_state import AssignmentState
from mephisto.utils.logger_core import get_logger
from omegaconf import OmegaConf

from parlai_dialeval.errors import DialevalError
from parlai_dialeval.providers.prolific import common, panels, webhooks
from parlai_dialeval.providers.prolific.api import ProlificClient, ProlificError, ProlificNotFound, ProlificServerError
from parlai_dialeval.providers.prolific.endpoints import RETRY_NONE, RETRY_ON_429
from parlai_dialeval.providers.prolific.page import external_study_url, study_address

logger = get_logger(name=__name__)
_PLACES = threading.Lock()  # Mephisto's launcher and its status polls may both sync at once: one PATCH
# Study statuses (Prolific's study object: PUBLISHING in its docs, SCHEDULED in its docs and CLI
# model/study.go, PROCESSING in Mephisto's docs/.../prolific_api_oddities.md): after a failed PUBLISH these
# mean it went out.
PUBLISHED = frozenset({"ACTIVE", "PUBLISHING", "SCHEDULED", "PROCESSING"})
# A resumed run takes over a study in these (a PAUSED one is started again; AWAITING REVIEW: all places taken).
REUSABLE = PUBLISHED | {"PAUSED", "AWAITING REVIEW"}
# Submissions whose participant finished on Prolific (they keep their place).
FINISHED_ON_PROLIFIC = frozenset({"AWAITING REVIEW", "APPROVED", "REJECTED", "PARTIALLY APPROVED", "PROCESSING"})


def find_or_create_project(client, workspace_id: str, title: str) -> str:
    for project in client.projects(workspace_id):
        if project.get("title") == title:
            return project["id"]
    return client.create_project(workspace_id, title)["id"]


def set_up(store, task_run, plan: dict, args, server_url: str) -> str:
    """The run's study, published; returns the line to print."""
    client = ProlificClient(plan["api_base_url"], plan["token"], max_retries=plan["max_retries"])
    try:
        url = study_address(args.provider.get("public_url") or server_url, plan["api_base_url"])
        earlier = args.provider.get("resume_from_run")
        study_id = take_over(client, store, str(earlier), task_run, url) if earlier else None
        if study_id:
            return (f"Prolific study {study_id} of the interrupted run {earlier} goes on (same places, same "
                    f"address {url}/); participants mid-task continue from Prolific")
        study_id = create(client, store, task_run, plan, args, url)
        # participants come from Prolific's study page, which adds their PROLIFIC_PID, STUDY_ID and SESSION_ID
        return (f"Prolific study {study_id} published; participants take part from Prolific, which sends them "
                f"to {url}/ with their Prolific ids")
    finally:
        client.close()


def takeable(client, store, earlier_run: str, warn: bool = True) -> tuple[dict, dict] | None:
    """(our row, Prolific's study) of the interrupted run's study if Prolific still runs it as we left it
    (same internal name); None when a new one is to be created."""
    old = store.study_of_run(earlier_run)
    if not old or not old.get("study_id") or old["status"] != "published":
        return None
    try:
        remote = client.study(old["study_id"])
    except ProlificNotFound:
        return None
    if remote.get("internal_name") != old["internal_name"] or remote.get("status") not in REUSABLE:
        if warn:
            logger.warning(f"Prolific study {old['study_id']} of run {earlier_run} is {remote.get('status')} as "
                           f"{remote.get('internal_name')!r}: a new study is created")
        return None
    return old, remote


def finished_places(client, study_id: str) -> int:
    return sum(1 for s in client.submissions(study_id) if s.get("status") in FINISHED_ON_PROLIFIC)


def places_held(client, store, earlier_run: str) -> tuple[str, int] | None:
    """(study id, its places not yet finished) of the interrupted run's study, if the resumed run takes it
    over: Prolific reserved their cost when they were published, so a resumed run pays only for more."""
    found = takeable(client, store, earlier_run, warn=False)
    if found is None:
        return None
    old, remote = found
    return old["study_id"], max(0, int(remote["total_available_places"]) - finished_places(client, old["study_id"]))


def take_over(client, store, earlier_run: str, task_run, url: str) -> str | None:
    """Move the interrupted run's study to ``task_run`` if Prolific still runs it as we left it (same
    internal name); None to create a new one. Places stay as they are: finished submissions keep theirs,
    and participants mid-task keep theirs to finish in the new run. Refused when this launch serves at
    another address than the study sends participants to (Prolific allows no change once published)."""
    found = takeable(client, store, earlier_run)
    if found is None:
        return None
    old, remote = found
    published = remote.get("external_study_url")
    if published and published != external_study_url(url):
        raise DialevalError(
            f"Prolific study {old['study_id']} of the interrupted run {earlier_run} sends participants to "
            f"{published.split('?')[0]}, and Prolific allows no change to that once a study is published, but "
            f"this launch would serve at {url}/, where no participant would arrive and those mid-task would "
            "be stranded: relaunch at the study's address (the interrupted launch's mephisto.architect.port "
            "and mephisto.provider.public_url), or under another mephisto.task.task_name for a new study")
    if remote["status"] == "PAUSED":
        client.transition_study(old["study_id"], "START")
    finished = finished_places(client, old["study_id"])
    fields = {k: v for k, v in old.items() if k not in ("task_run_id", "launched", "places", "status")}
    store.run(f"INSERT OR REPLACE INTO studies (task_run_id, launched, places, status, {', '.join(fields)}) VALUES "
              f"(?, ?, ?, ?{', ?' * len(fields)})", str(task_run.db_id), finished,
              int(remote["total_available_places"]), "published", *fields.values())
    store.update("studies", "task_run_id", earlier_run, status="moved")  # its expiring units leave the study alone
    return old["study_id"]


def create(client, store, task_run, plan: dict, args, url: str) -> str:
    internal = f"dialeval:{task_run.get_task().task_name}:run{task_run.db_id}:{plan['code']}"
    store.run("INSERT OR REPLACE INTO studies (task_run_id, task_name, requester_name, api_base_url, "
              "internal_name, completion_code, currency, reward_minor, status) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
              str(task_run.db_id), task_run.get_task().task_name, plan["requester_name"], plan["api_base_url"],
              internal, plan["code"], plan["currency"], plan["reward_minor"], "creating")
    project_id = None
    try:
        ws = plan["workspace_id"]
        project_id = find_or_create_project(client, ws, args.provider.project)
        group_id = panels.group_id(client, ws, args.provider.block_group, create=True)
        study = client.create_study(study_body(plan, args, url, internal, project_id, group_id,
                                               panels.study_filters(client, ws, args.provider),
                                               panels.completion_actions(client, ws, args.provider)))
        store.update("studies", "task_run_id", str(task_run.db_id), study_id=study["id"], workspace_id=ws,
                     project_id=project_id, block_group_id=group_id, places=1)
        publish(client, study["id"])
        store.update("studies", "task_run_id", str(task_run.db_id), status="published")
    except Exception as error:  # whatever failed, the half-created study goes
        removed = remove_orphans(client, project_id, internal)
        store.update("studies", "task_run_id", str(task_run.db_id), status="failed")
        if not isinstance(error, (ProlificError, DialevalError)):
            raise
        left = ("; check the project on app.prolific.com for a study named " + internal if removed is None
                else (f"; deleted the unpublished study {', '.join(removed)}" if removed else "")
                + "; nothing is left on Prolific")
        raise DialevalError(f"could not set up the Prolific study: {error}{left}") from None
    return study["id"]


def study_body(plan: dict, args, url: str, internal: str, project_id: str, group_id: str,
               panel_filters: list[dict] | None = None, actions: list[dict] | None = None) -> dict:
    """POST studies/ (fields as in Prolific's CLI model/study.go CreateStudy; money in minor units);
    ``panel_filters`` and the completion code's ``actions``: panels.py."""
    p = args.provider
    filters = OmegaConf.to_container(p.eligibility_filters, resolve=True) if p.get("eligibility_filters") else []
    filters += panel_filters or []
    filters.append({"filter_id": "participant_group_blocklist", "selected_values": [group_id]})
    if p.get("block_list"):
        filters.append({"filter_id": "custom_blocklist", "selected_values": list(p.block_list)})
    if p.get("allow_list"):
        filters.append({"filter_id": "custom_allowlist", "selected_values": list(p.allow_list)})
    return {
        "project": project_id, "name": args.task.task_title, "internal_name": internal,
        "description": args.task.get("task_description") or args.task.task_title,
        "external_study_url": external_study_url(url),
        "prolific_id_option": "url_parameters", "completion_option": "code",
        # actor researcher: our server sends the code (a COMPLETE transition, completion.py), which
        # Prolific's documentation allows only for such a code
        "completion_codes": [{"code": plan["code"], "code_type": "COMPLETED", "actor": "researcher",
                              "actions": actions or [{"action": "MANUALLY_REVIEW"}]}],
        "total_available_places": 1, "estimated_completion_time": plan["minutes"],
        "reward": plan["reward_minor"], "filters": filters,
        "submissions_config": {"max_submissions_per_participant": plan["max_submissions_per_participant"]},
    }


def publish(client, study_id: str) -> None:
    try:
        client.transition_study(study_id, "PUBLISH", retry=RETRY_ON_429)
    except ProlificServerError:
        if client.study(study_id).get("status") not in PUBLISHED:  # a 5xx may still have published it
            raise


def remove_orphans(client, project_id: str | None, internal_name: str) -> list[str] | None:
    """Delete the studies this setup created (found by their unique internal name), if any; None when
    Prolific could not be asked."""
    if project_id is None:
        return []
    removed = []
    try:
        for study in client.project_studies(project_id):
            if study.get("internal_name") == internal_name and study.get("status") == "UNPUBLISHED":
                client.delete_study(study["id"])
                removed.append(study["id"])
    except ProlificError as error:
        logger.error(f"could not look for the half-created study {internal_name}: {error}")
        return None
    return removed


def sync_places(db, task_run_id: str) -> None:
    """Give the study as many places as the run has launched units. A refusal is logged, never raised:
    this runs in Mephisto's unit-launch thread, which a raise would end (no further unit would launch);
    the next launch or status poll tries again."""
    with _PLACES:
        _sync_places(db, task_run_id)


def _sync_places(db, task_run_id: str) -> None:
    store = common.datastore(db)
    row = store.study_of_run(task_run_id)
    if not row or not row.get("study_id") or row["launched"] <= row["places"]:
        return
    try:
        client, study = common.client_for_run(db, task_run_id)
        try:
            # no retries here: this thread launches the other units; the next launch or poll asks again
            client.update_study(study["study_id"], {"total_available_places": row["launched"]}, retry=RETRY_NONE)
        finally:
            client.close()
    except (ProlificError, DialevalError) as error:
        logger.error(f"could not give Prolific study {row['study_id']} {row['launched']} places (has "
                     f"{row['places']}): {error}; trying again at the next unit")
        return
    store.update("studies", "task_run_id", str(task_run_id), places=row["launched"])


def stop_if_done(db, task_run_id: str) -> None:
    """STOP the run's study once none of its units can still be worked on (Prolific then keeps the
    submissions for review)."""
    store = common.datastore(db)
    study = store.study_of_run(task_run_id)
    if not study or study["status"] != "published":
        return
    open_units = [u for u in db.find_units(task_run_id=task_run_id)
                  if u.db_status not in (AssignmentState.EXPIRED, *AssignmentState.completed())]
    if open_units:
        return
    client, _ = common.client_for_run(db, task_run_id)
    try:
        client.transition_study(study["study_id"], "STOP")
        store.update("studies", "task_run_id", str(task_run_id), status="stopped")
    except ProlificError as error:
        logger.warning(f"could not stop Prolific study {study['study_id']}: {error}")
    finally:
        client.close()
    webhooks.stop(db, task_run_id)  # nothing left to free
