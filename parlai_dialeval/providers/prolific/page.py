"""What the participant's page gets from the provider: the task's address for Prolific's study URL, and
the wrapper script (``wrap_crowd_source.js``) Mephisto's router serves, rendered for one launch."""
from __future__ import annotations

import atexit
import json
import shutil
import tempfile
from pathlib import Path

from parlai_dialeval.errors import DialevalError
from parlai_dialeval.providers.prolific.api import DEFAULT_API_BASE_URL

WRAPPER_TEMPLATE = Path(__file__).with_name("wrap_crowd_source.js")


def study_address(url: str, api_base_url: str) -> str:
    """The task's address for Prolific: with a scheme (LocalArchitect reports ``localhost:PORT``), and
    https when real participants are to reach it."""
    url = url.rstrip("/")
    if "://" not in url:
        url = "http://" + url
    if api_base_url.rstrip("/") == DEFAULT_API_BASE_URL.rstrip("/") and not url.startswith("https://"):
        raise DialevalError(f"Prolific participants cannot reach {url}: set mephisto.provider.public_url to the "
                            "https address of your reverse proxy in front of the task, or use a public architect "
                            "(docs/crowdsourcing.md, 'Run your study on Prolific')")
    return url


def external_study_url(url: str) -> str:
    """Prolific fills in the ``{{%...%}}`` placeholders for each participant (Prolific's study docs)."""
    return (f"{url}/?PROLIFIC_PID={{{{%PROLIFIC_PID%}}}}&STUDY_ID={{{{%STUDY_ID%}}}}"
            f"&SESSION_ID={{{{%SESSION_ID%}}}}")


def render_wrapper(completion_url: str) -> Path:
    """The wrapper with the address participants go back to (the completion code stays on the server)."""
    text = WRAPPER_TEMPLATE.read_text().replace('"__COMPLETION_URL__"', json.dumps(completion_url))
    folder = Path(tempfile.mkdtemp(prefix="dialeval_prolific_js_"))
    atexit.register(shutil.rmtree, folder, ignore_errors=True)  # Mephisto copies it into each build
    path = folder / "wrap_crowd_source.js"
    path.write_text(text)
    return path
