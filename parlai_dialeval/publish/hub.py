"""``dialeval publish --push REPO``: the published folder uploaded to a Hugging Face dataset repository
with huggingface_hub (create_repo, then upload_folder as one commit). The token is huggingface_hub's own
(HF_TOKEN or `hf auth login`); the endpoint is its own too (HF_ENDPOINT), which the tests point at a
local stand-in."""
from __future__ import annotations

from pathlib import Path

from parlai_dialeval.errors import DialevalError


def push(folder: Path, repo: str, private: bool = True, endpoint: str | None = None) -> str:
    """Upload ``folder`` to the dataset repository ``repo``; returns the commit's URL."""
    from huggingface_hub import HfApi, get_token
    from huggingface_hub.errors import HfHubHTTPError

    token = get_token()
    if not token:
        raise DialevalError(f"--push {repo}: no Hugging Face token (set HF_TOKEN or run `hf auth login`); the folder "
                            f"{folder} was written and can be pushed later")
    api = HfApi(endpoint=endpoint, token=token)
    try:
        api.create_repo(repo, repo_type="dataset", private=private, exist_ok=True)
        commit = api.upload_folder(repo_id=repo, repo_type="dataset", folder_path=str(folder),
                                   commit_message="dialeval publish")
    except HfHubHTTPError as error:
        raise DialevalError(f"--push {repo}: the Hub refused ({error}); the folder {folder} is written") from None
    return commit.commit_url
