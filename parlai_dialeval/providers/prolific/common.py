"""What the provider's classes share: its type name, where its state lives, and API clients."""
from __future__ import annotations

from pathlib import Path
from urllib.parse import urlparse

from parlai_dialeval.errors import DialevalError
from parlai_dialeval.providers.prolific.api import ProlificClient
from parlai_dialeval.providers.prolific.datastore import ProlificDatastore, load_credentials

PROVIDER_TYPE = "prolific"
# Prolific submission statuses that end a participant's work without a submission to review (Prolific's
# "Submission statuses explained"; SCREENED OUT: the study screened the participant out): the place goes back
GONE = frozenset({"RETURNED", "TIMED-OUT", "SCREENED OUT"})


def provider_root() -> Path:
    """``<Mephisto data dir>/prolific``: Mephisto's own folder for this provider (credentials, prolific.db)."""
    from mephisto.utils.dirs import get_data_dir

    return Path(get_data_dir()) / PROVIDER_TYPE


def datastore(db) -> ProlificDatastore:
    return db.get_datastore_for_provider(PROVIDER_TYPE)


def registered_url(name: str, asked: str | None) -> tuple[str, str]:
    """(token, API address) of requester ``name``: the token goes only to the https address it was
    registered with (or a loopback one: the fake Prolific), never to another the launch names."""
    creds = load_credentials(provider_root(), name)
    registered = creds["api_base_url"].rstrip("/") + "/"
    if asked and asked.rstrip("/") + "/" != registered:
        raise DialevalError(f"mephisto.provider.api_base_url: requester {name!r} was registered for {registered}; "
                            f"its token is sent nowhere else. To use {asked}, run `dialeval prolific register {name} "
                            f"--api-base-url {asked}`")
    check_api_url(registered)
    return creds["token"], registered


def check_api_url(url: str) -> None:
    """https, or http on this machine's loopback (a fake Prolific): never a token in clear over a network."""
    parsed = urlparse(url)
    local = parsed.hostname in ("127.0.0.1", "localhost", "::1")
    if parsed.scheme != "https" and not (parsed.scheme == "http" and local):
        raise DialevalError(f"{url}: the Prolific API address must be https:// (http only on 127.0.0.1, for a "
                            "fake Prolific); the token would travel in clear")


def check_public_url(url: str, option: str) -> None:
    """An address Prolific is to call: https (Prolific's docs: "target_url must use https:// and be publicly
    accessible"), or http on loopback for a fake Prolific's rehearsal."""
    parsed = urlparse(url)
    local = parsed.hostname in ("127.0.0.1", "localhost", "::1")
    if not parsed.hostname or (parsed.scheme != "https" and not (parsed.scheme == "http" and local)):
        raise DialevalError(f"{option}: {url!r} must be an https:// address Prolific can reach (http only on "
                            "127.0.0.1, for a fake Prolific)")


def client_for(requester_name: str, api_base_url: str | None = None, max_retries: int = 5) -> ProlificClient:
    """A client with the requester's registered token, for the address it was registered with."""
    token, url = registered_url(requester_name, api_base_url)
    return ProlificClient(url, token, max_retries=max_retries)


def client_for_run(db, task_run_id: str) -> tuple[ProlificClient, dict]:
    """(client, studies row) for a task run launched on Prolific."""
    study = datastore(db).study_of_run(task_run_id)
    if study is None or not study.get("study_id"):
        raise DialevalError(f"task run {task_run_id} has no Prolific study (was it launched with "
                            "mephisto/provider=prolific?)")
    return client_for(study["requester_name"], study["api_base_url"]), study
