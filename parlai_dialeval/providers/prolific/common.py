"""What the provider's classes share: its type name, where its state lives, and API clients."""
from __future__ import annotations

from pathlib import Path

from parlai_dialeval.providers.prolific.api import ProlificClient
from parlai_dialeval.providers.prolific.datastore import ProlificDatastore, load_credentials

PROVIDER_TYPE = "prolific"


def provider_root() -> Path:
    """``<Mephisto data dir>/prolific``: Mephisto's own folder for this provider (credentials, prolific.db)."""
    from mephisto.utils.dirs import get_data_dir

    return Path(get_data_dir()) / PROVIDER_TYPE


def datastore(db) -> ProlificDatastore:
    return db.get_datastore_for_provider(PROVIDER_TYPE)


def client_for(requester_name: str, api_base_url: str | None = None, max_retries: int = 5) -> ProlificClient:
    """A client with the requester's registered token, for ``api_base_url`` (default: the registered one)."""
    creds = load_credentials(provider_root(), requester_name)
    return ProlificClient(api_base_url or creds["api_base_url"], creds["token"], max_retries=max_retries)


def client_for_run(db, task_run_id: str) -> tuple[ProlificClient, dict]:
    """(client, studies row) for a task run launched on Prolific."""
    from parlai_dialeval.errors import DialevalError

    study = datastore(db).study_of_run(task_run_id)
    if study is None or not study.get("study_id"):
        raise DialevalError(f"task run {task_run_id} has no Prolific study (was it launched with "
                            "mephisto/provider=prolific?)")
    return client_for(study["requester_name"], study["api_base_url"]), study
