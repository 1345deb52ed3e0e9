"""Shared test fixtures: where the third-party data and the real chat model live, skipping cleanly without
them (failing under CI, where everything must be there)."""
from __future__ import annotations

import os
from pathlib import Path

import pytest
from file_scheduling import CpuAwareFileScheduling, FileTimingRecorder, merge_recorded
from needs import needs

RECORDER = pytest.StashKey()
# Numeric libraries on one thread in every worker and the servers it starts: the workers share two cores, and
# OpenMP's and OpenBLAS's waiting threads spin (test_real_model beside two busy cores: 78 CPU-s with torch's
# two threads, 45 with one, and 16 s sooner). Set before any test module imports numpy or torch.
os.environ.setdefault("OMP_NUM_THREADS", "1")

REPO = Path(__file__).resolve().parents[1]
SHARED_DATA = Path(os.environ.get("DIALEVAL_SHARED_DATA", REPO.parent / "shared" / "data"))


def pytest_addoption(parser):
    parser.addoption("--record-file-timings", metavar="PATH", default=None,
                     help="write each test file's wall and process-tree CPU seconds to PATH (JSON), as "
                          "tests/file_timings.json holds them for handing files to xdist workers")


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config, log):
    """Under ``--dist loadfile`` files go to workers by the CPU they take (tests/file_scheduling.py)."""
    if config.getvalue("dist") == "loadfile":
        return CpuAwareFileScheduling(config, log)
    return None


def pytest_configure(config):
    path = config.getoption("record_file_timings")
    if path:
        worker = getattr(config, "workerinput", {}).get("workerid", "main")
        config.stash[RECORDER] = FileTimingRecorder(Path(path).resolve(), worker)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item, nextitem):
    recorder = item.config.stash.get(RECORDER, None)
    if recorder is None:
        yield
    else:
        yield from recorder.measure(item.nodeid)


def pytest_sessionfinish(session):
    recorder = session.config.stash.get(RECORDER, None)
    if recorder is None:
        return
    recorder.write()
    if not hasattr(session.config, "workerinput"):  # xdist's controller, or a run without workers
        merge_recorded(recorder.path)


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
