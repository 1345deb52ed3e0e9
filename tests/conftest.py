"""Shared test fixtures: where the third-party data and the real chat model live, skipping cleanly without
them (failing under CI, where everything must be there)."""
from __future__ import annotations

import os
from pathlib import Path

import pytest
from needs import needs

REPO = Path(__file__).resolve().parents[1]
SHARED_DATA = Path(os.environ.get("DIALEVAL_SHARED_DATA", REPO.parent / "shared" / "data"))


@pytest.fixture(scope="session")
def shared_data() -> Path:
    """../shared/data (third-party evaluation data); tests using it skip with a reason when absent (and
    fail under CI)."""
    needs(None if SHARED_DATA.is_dir() else f"third-party data not found at {SHARED_DATA} (see README.md, "
                                             "'System packages'); set DIALEVAL_SHARED_DATA to its location")
    return SHARED_DATA


@pytest.fixture(autouse=True, scope="session")
def private_data_and_cache_folders(tmp_path_factory):
    """Every test session (each xdist worker has its own) writes its Mephisto data, offline bots and
    caches under a folder of its own, never into the user's ~/.local/share or ~/.cache, so parallel
    workers and a developer's real studies never meet."""
    saved = {name: os.environ.get(name) for name in ("DIALEVAL_HOME", "XDG_CACHE_HOME")}
    root = tmp_path_factory.mktemp("dialeval")
    os.environ["DIALEVAL_HOME"] = str(root / "home")
    os.environ["XDG_CACHE_HOME"] = str(root / "cache")
    yield
    for name, value in saved.items():
        if value is None:
            os.environ.pop(name, None)
        else:
            os.environ[name] = value


@pytest.fixture(scope="session")
def real_model() -> Path:
    """The cached real chat model (SmolLM2-135M-Instruct as a Hugging Face folder; install.sh builds it,
    see parlai_dialeval.testing.real_model)."""
    from parlai_dialeval.testing import real_model as fixture

    needs(fixture.missing())
    return fixture.model_dir()


@pytest.fixture(scope="session")
def real_server(real_model, tmp_path_factory):
    """A real ``transformers serve`` process on the real model, on a free port of this test session's
    loopback; ``.base_url`` and ``.model`` (the folder path, the name the server knows it by)."""
    from parlai_dialeval.testing.real_model import RealServer

    server = RealServer(log=tmp_path_factory.mktemp("serve") / "serve.log").start()
    yield server
    server.stop()
