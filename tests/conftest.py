"""Shared test fixtures: where the third-party data and the real chat model live, skipping cleanly without
them (failing under CI, where everything must be there)."""
from __future__ import annotations

import itertools
import os
from pathlib import Path

import pytest
from needs import needs

REPO = Path(__file__).resolve().parents[1]
SHARED_DATA = Path(os.environ.get("DIALEVAL_SHARED_DATA", REPO.parent / "shared" / "data"))


# Rough seconds per test by marker, to order files longest first (measured in CI, benchmarks/README.md "The test
# suite": browser tests 30-130 s, other slow ones 5-50 s, the rest well under a second).
EXPECTED_SECONDS = {"browser": 40.0, "slow": 10.0}


def pytest_collection_modifyitems(config, items):
    """Files expected to take longest run first, browser files and the others in turn. Under `--dist loadfile`
    an xdist worker takes a whole file, and xdist hands files out in collection order (`--no-loadscope-reorder`,
    pytest.ini): a long browser file handed out last ran alone at the end while the other workers idled
    (longest-processing-time-first scheduling). In turn, because browser files mostly wait (a person's pace: 5-15%
    of a core) and the other slow files mostly compute: all the computing at the end kept both cores busy for
    the last seven minutes and idle ones before. The sort is stable, so each file's tests stay together and in
    order."""
    expected: dict[str, float] = {}
    browser: set[str] = set()
    for item in items:
        file = item.nodeid.split("::")[0]
        marks = [name for name in EXPECTED_SECONDS if item.get_closest_marker(name)]
        expected[file] = expected.get(file, 0.0) + max((EXPECTED_SECONDS[name] for name in marks), default=0.3)
        if "browser" in marks:
            browser.add(file)
    # ties by name: every xdist worker must order the files alike (a set's order changes with the hash seed)
    waiting = sorted(browser, key=lambda file: (-expected[file], file))
    computing = sorted(set(expected) - browser, key=lambda file: (-expected[file], file))
    turns = [file for pair in itertools.zip_longest(waiting, computing) for file in pair if file is not None]
    place = {file: index for index, file in enumerate(turns)}
    items.sort(key=lambda item: place[item.nodeid.split("::")[0]])


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
