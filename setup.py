"""parlai_dialeval: a ParlAI plugin for reliable human and automatic evaluation of chatbots.

install_requires names what the package imports, torch, Mephisto and Hydra included, but install torch
first, as install.sh does (README.md "Install"): a resolver asked for torch picks a CUDA build (gigabytes)
unless the CPU wheel is already there. ParlAI 1.7.2 is the one import left out: named here, pip resolves its
own pins (docformatter ...), which cannot be met on Python 3.11 (ResolutionImpossible), so install.sh
installs it with --no-deps and requirements/parlai-runtime.txt lists what it really needs. `datasets`
(dialeval publish) is left out the same way: requirements/datasets-runtime.txt, installed by install.sh.
"""
import re
from pathlib import Path

from setuptools import find_packages, setup

# the version is written once, as the package's __version__ (read as text: importing the package needs Mephisto)
VERSION = re.search(r'^__version__ = "([^"]+)"$', Path("parlai_dialeval/__init__.py").read_text(encoding="utf-8"),
                    re.M).group(1)

ROOTS = {"parlai_dialeval": "parlai_dialeval", "parlai_dialeval.tasks": "tasks",
         "parlai_dialeval.crowdsourcing": "crowdsourcing"}
PACKAGES = [name for prefix, folder in ROOTS.items()
            for name in [prefix] + [f"{prefix}.{sub}" for sub in find_packages(folder)]]

setup(
    name="parlai_dialeval",
    version=VERSION,
    description="Reliable human evaluation of open-domain chatbots on ParlAI and Mephisto",
    long_description=open("README.md", encoding="utf-8").read(),
    long_description_content_type="text/markdown",
    python_requires=">=3.11",
    # tasks/ and crowdsourcing/ live at the top of the repository (the design card's layout) but are
    # installed as subpackages, never as top-level packages named `tasks` or `crowdsourcing`.
    package_dir=ROOTS,
    packages=PACKAGES,
    include_package_data=True,
    # A wheel must run outside the checkout: each task's Hydra confs, the worker pages (webpack
    # bundles, built by install.sh before a wheel is made, and the static page around them) and the node
    # router's guard and dependencies (installed by install.sh before a wheel is made).
    package_data={"": ["*.json", "*.yaml", "*.txt", "*.html", "*.css", "*.js", "conf/*.yaml", "templates/*.md"],
                  "parlai_dialeval.crowdsourcing": ["frontend/build/*/*", "frontend/src/static/*", "router/*.js",
                                                    "router/*.json", "router/node_modules/**/*"]},
    install_requires=[
        "torch",  # install first (the CPU wheel): see the top of this file
        "mephisto",  # 1.1.1
        "hydra-core",  # the tasks' configs (Mephisto brings it)
        "numpy",
        "orjson",
        "pandas",
        "pyarrow",  # the columnar load of canonical JSON Lines (parlai_dialeval/data/columnar.py)
        "scipy",
        "statsmodels",
        "choix",
        "trueskill",
        "krippendorff",
        "matplotlib",
        "tqdm",
        "transformers",
        "tokenizers",
        "sacrebleu",
        "rouge-score",
        "nltk",
        "textstat",
        "pyphen",
        "chatterbot-corpus",
        "scikit-learn",
        "threadpoolctl",  # one BLAS thread for small dense solves (analysis/style_control.py); scikit-learn brings it
        "pyyaml",
        "Jinja2",
        "markdown-it-py",  # chatbots' markdown on the dashboard, HTML off (parlai_dialeval/dashboard/markdown.py)
        "psutil",
        "httpx",  # the Prolific provider's API client
        "Flask",  # the dashboard (pinned with Mephisto, which brings it)
        "waitress",  # serves the dashboard: many connections, timeouts, body limits (Werkzeug 1.0.1's server has none)
        "phonenumbers",  # dialeval publish: phone numbers in text, libphonenumber's metadata (publish/detectors.py)
        "huggingface_hub",  # dialeval publish --push (transformers brings it)
    ],
    extras_require={"test": ["pytest", "pytest-timeout", "pytest-xdist", "hypothesis", "playwright",
                             "ppi-python", "import-linter", "pingouin"]},
    # import-linter: the layers (tests/test_layers.py); pingouin: an outside oracle for the ICCs
    entry_points={"console_scripts": ["dialeval = parlai_dialeval.cli:main"]},
)
