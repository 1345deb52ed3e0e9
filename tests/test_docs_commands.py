"""The command lines of README.md, CONTRIBUTING.md and docs/*.md stay in step with the code (issue 40):
every line of their fenced shell blocks is either run here, in a temporary folder on the tests' data, or
listed below with the reason it is not (a launch that waits for people, credentials, GPUs, minutes of
training); a documented line nobody classified, or a rule that matches no line any more, fails. Every
``--option`` a documented ``dialeval`` command names (synopses included) must be one the command takes."""
from __future__ import annotations

import re
import shlex
from dataclasses import dataclass
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
DOCS = [REPO / "README.md", REPO / "CONTRIBUTING.md", *sorted((REPO / "docs").glob("*.md"))]
FENCE = re.compile(r"^```(\w*)\n(.*?)^```", re.S | re.M)
SHELL = {"bash", "sh", "shell", "console"}
# in a block without a language, only lines starting with one of these are commands (the rest: diagrams,
# a command's printed output)
PROGRAMS = {"dialeval", ".venv/bin/dialeval", ".venv/bin/python", "bash", "torchrun"}

LAUNCH = ("a launch serves until Ctrl-C and waits for people; the browser tests launch each task and take part "
          "in Chromium (tests/crowdsourcing/test_*_browser.py)")
SYNOPSIS = "a synopsis (placeholders, [optional] parts): its options are checked against the command's"
AFTER_LAUNCH = ("reads a launch's Mephisto data: test_live_chat_da_browser.py exports its launch and runs "
                "analyze_live_chat on it")


@dataclass(frozen=True)
class Command:
    doc: str  # path from the repository's root
    line: int
    text: str  # continuation lines joined

    def __str__(self):
        return f"{self.doc}:{self.line}: {self.text}"


@dataclass(frozen=True)
class Rule:
    doc: str
    pattern: str  # a regular expression searched in the command's text
    run: str = ""  # the group of runs below that runs it
    skip: str = ""  # or why it is not run here
    replace: tuple[tuple[str, str], ...] = ()  # small inputs for the run: (documented text, text run)


RULES = [
    Rule("README.md", r"^bash install\.sh", skip="installs everything (about 7 minutes); CI runs it first"),
    Rule("README.md", r"-m pytest tests", skip="the test suite itself"),
    Rule("README.md", r"dialeval launch live_chat_da$", skip=LAUNCH),
    Rule("README.md", r"dialeval export live_chat_da", skip=AFTER_LAUNCH),
    Rule("docs/adaptive_evaluation.md", r"dialeval launch acute", skip=LAUNCH),
    Rule("docs/bots_and_teachers.md", r"build_offline_bots \[", skip=SYNOPSIS),
    Rule("docs/bots_and_teachers.md", r"^dialeval build_offline_bots$",
         skip="trains the offline bots (minutes on a CPU); tests/test_offline_bots.py builds them"),
    Rule("docs/bots_and_teachers.md", r"^dialeval (self_chat -m dialeval:qc_bot|convert|validate) ",
         skip="the self-chat needs the offline bots built above (minutes), convert and validate its output"),
    Rule("docs/bots_and_teachers.md", r"^dialeval display_data", run="teachers"),
    Rule("docs/bring_your_model.md", r"testing\.fake_openai .*&$",
         skip="serves the fake endpoint for the launch below (test_endpoint_bots_mock.py launches against it)"),
    Rule("docs/bring_your_model.md", r"dialeval launch (live_chat_da|pw_turn)", skip=LAUNCH),
    Rule("docs/bring_your_model.md", r"testing\.real_model build",
         skip="install.sh builds the real model; the real_server fixture uses what it built"),
    Rule("docs/bring_your_model.md", r"transformers serve",
         skip="the real_server fixture starts this server on a free port; the self-chat below runs against it"),
    Rule("docs/bring_your_model.md", r"dialeval self_chat -m dialeval:openai_chat",
         skip="tests/test_real_model.py::test_self_chat_through_openai_chat_on_the_real_server runs it against the "
              "real_server fixture with --max-tokens 6 (40 tokens a turn take minutes on CI's CPU); the test below "
              "checks that it asks for the model by the name the server is started with"),
    Rule("docs/crowdsourcing.md", r"dialeval launch live_chat_da( |$)(?!.*provider=)", skip=LAUNCH),
    Rule("docs/crowdsourcing.md", r"dialeval launch acute", skip=LAUNCH),
    Rule("docs/crowdsourcing.md", r"dialeval launch arena .*questionnaire", skip=LAUNCH),
    Rule("docs/crowdsourcing.md", r"provider=mturk", skip="needs MTurk credentials and Heroku"),
    Rule("docs/crowdsourcing.md", r"provider=prolific", skip="needs Prolific credentials"),
    Rule("docs/security.md", r"provider=prolific .*router_trusted_proxies", skip="needs Prolific credentials; "
         "test_router_sources.py and test_hostile_doors.py launch with router_trusted_proxies"),
    Rule("docs/security.md", r"^cloudflared tunnel", skip="a tunnel to the internet; the router's reading of the "
         "header such a tunnel appends is tested in test_router_sources.py"),
    Rule("docs/crowdsourcing.md", r"dialeval export live_chat_da", skip=AFTER_LAUNCH),
    Rule("docs/crowdsourcing.md", r"^dialeval dashboard ",
         skip="serves until Ctrl-C over a launched task (test_dashboard_browser.py watches one)"),
    Rule("docs/crowdsourcing_protocols.md", r"dialeval launch acute", skip=LAUNCH),
    Rule("docs/judge.md", r"^dialeval judge", skip=SYNOPSIS),
    Rule("docs/live_chat_analysis.md", r"dialeval (analyze_live_chat|replicate)", run="live chat"),
    Rule("docs/metrics.md", r"^dialeval fed --data fed_data\.json", skip=SYNOPSIS),
    Rule("docs/metrics.md", r"^dialeval fed --data convs\.txt",
         skip="scores with DialoGPT-large, which would download (tests/test_fed.py scores with a tiny model)"),
    Rule("docs/metrics.md", r"^torchrun", skip="8 GPUs, or two nodes of them"),
    Rule("docs/metrics.md", r"^dialeval meta_eval --data fed_data\.json", run="fed",
         replace=(("[--bootstrap 1000]", "--bootstrap 50"),)),
    Rule("docs/metrics.md", r"^dialeval meta_eval --human system_scores\.csv",
         skip="an example over the reader's own CSVs (tests/test_meta_eval.py reads such tables)"),
    Rule("docs/publishing.md", r"^dialeval publish --data study\.jsonl .*--names names\.txt",
         skip="an example over the reader's study; tests/test_publish.py publishes ChatEval's data and a seeded study "
              "with these options"),
    Rule("docs/publishing.md", r"--push my-lab/my-study",
         skip="uploads to the Hugging Face Hub; tests/test_publish.py pushes to a local stand-in of its endpoints"),
    Rule("docs/pairwise_analysis.md", r"^dialeval analyze_(pairwise|annotations)", skip=SYNOPSIS),
    Rule("docs/pairwise_analysis.md", r"^dialeval convert --data /path/to/amt_ab_2018", run="chateval",
         replace=(("/path/to/amt_ab_2018", "{shared}/chateval/amt_ab_2018"),)),
    Rule("docs/participant_pages.md", r"DIALEVAL_GALLERY=", skip="runs the browser tests themselves (CI runs them)"),
    Rule("docs/ppi.md", r"^dialeval ", skip=SYNOPSIS),
    Rule("docs/report_gallery.md", r"DIALEVAL_GALLERY=", skip="runs the browser test itself (CI runs it)"),
    Rule("docs/reports.md", r"^cp -r results/pairwise",
         skip="copies a report to a place the reader shares; tests/test_owner_only_outputs.py checks the owner-only "
              "modes a copy starts from"),
    Rule("docs/scaling.md", r"benchmarks/bench_load\.py", skip="a load benchmark (minutes to 35 minutes)"),
    Rule("docs/single_model_analysis.md", r"^dialeval (analyze_single_model|significance_time|analyze_scales)",
         skip=SYNOPSIS),
]


def documented_commands() -> list[Command]:
    """Every command line of the docs' shell blocks (and of blocks without a language: the lines that
    start with a known program), continuation lines joined, comments left out."""
    found = []
    for doc in DOCS:
        text = doc.read_text(encoding="utf-8")
        for fence in FENCE.finditer(text):
            language, body = fence.groups()
            if language and language not in SHELL:
                continue
            first = text.count("\n", 0, fence.start()) + 2
            lines = body.split("\n")
            k = 0
            while k < len(lines):
                start, line = k, lines[k].strip()
                while line.endswith("\\") and k + 1 < len(lines):
                    k += 1
                    line = line[:-1].rstrip() + " " + lines[k].strip()
                k += 1
                line = re.sub(r"\s+#(?![^'\"]*['\"]).*$", "", line).strip()  # a trailing comment
                if not line or line.startswith("#"):
                    continue
                if not language and program(line) not in PROGRAMS:
                    continue
                found.append(Command(str(doc.relative_to(REPO)), first + start, line))
    return found


def program(line: str) -> str:
    words = [w for w in line.split() if not re.fullmatch(r"[A-Z_]+=\S*", w)]  # VAR=value prefixes
    return words[0] if words else ""


def rule_of(command: Command) -> list[Rule]:
    return [r for r in RULES if r.doc == command.doc and re.search(r.pattern, command.text)]


def test_every_documented_command_is_run_or_skipped_with_a_reason():
    commands = documented_commands()
    assert len(commands) > 40  # README, docs/crowdsourcing.md, docs/ppi.md ... were all read
    unclassified = [str(c) for c in commands if len(rule_of(c)) != 1]
    assert not unclassified, "each documented command needs exactly one rule in RULES:\n" + "\n".join(unclassified)
    stale = [r for r in RULES if not any(r in rule_of(c) for c in commands)]
    assert not stale, f"rules that match no documented command any more: {stale}"
    assert all(bool(r.run) != bool(r.skip) for r in RULES)


def plugin_options(command: str) -> set[str] | None:
    """The option strings of a ``dialeval`` plugin command (None for ParlAI's own commands)."""
    import importlib

    from parlai.core.loader import SCRIPT_REGISTRY

    from parlai_dialeval.cli import plugin_script_modules

    module = plugin_script_modules().get(command)
    if module is None:
        return None
    importlib.import_module(module)
    return set(SCRIPT_REGISTRY[command].klass.setup_args()._option_string_actions)


@pytest.mark.slow  # about 10 s: importing `launch`'s parser loads Mephisto
def test_every_documented_option_is_one_the_command_takes():
    """Before: nothing checked a documented option against the code."""
    wrong, cache = [], {}
    for command in documented_commands():
        for part in re.split(r"\s(?:&&|\|\||;|\||&)(?:\s|$)", command.text):  # each command of a && chain
            words = part.split()
            names = [k for k, w in enumerate(words) if w.rsplit("/", 1)[-1] == "dialeval"]
            if not names or names[0] + 1 >= len(words):
                continue
            name = words[names[0] + 1]
            if name not in cache:
                cache[name] = plugin_options(name)
            for option in re.findall(r"(?<![\w'\"=-])(--[a-z][\w-]*)", part) if cache[name] is not None else []:
                if option not in cache[name]:
                    wrong.append(f"{command}: dialeval {name} has no {option}")
    assert len(cache) > 15 and not wrong, "\n".join(wrong)


def test_the_real_model_is_served_and_asked_by_the_same_name():
    """Issue 40: docs/bring_your_model.md served `.real-model/model` and then asked for
    `$PWD/.real-model/model` (the server answers 400 "Server is pinned to ...")."""
    lines = [c.text for c in documented_commands() if c.doc == "docs/bring_your_model.md"]
    served = next(shlex.split(line)[shlex.split(line).index("serve") + 1] for line in lines if "transformers serve" in line)
    asked = next(shlex.split(line)[shlex.split(line).index("--endpoint-model") + 1]
                 for line in lines if "--endpoint-model" in line)
    assert served == asked


# ---------------------------------------------------------------- running them
def commands_of(group: str) -> list[tuple[Command, Rule]]:
    out = [(c, rule_of(c)[0]) for c in documented_commands() if rule_of(c) and rule_of(c)[0].run == group]
    assert out, f"no documented command in group {group!r}"
    return out


def run_group(group: str, folder: Path, monkeypatch, capfd, **values) -> list[str]:
    """Run the group's ``dialeval`` commands one after the other in ``folder``, in this process (as
    tests/test_teachers.py does: torch and ParlAI are loaded once); each must end with status 0. ``values``
    fill ``{name}`` in the rules' replacements. Returns each one's output."""
    from parlai_dialeval.cli import main as dialeval

    monkeypatch.chdir(folder)
    outputs = []
    for command, rule in commands_of(group):
        text = command.text
        for documented, used in rule.replace:
            assert documented in text, f"{command}: the rule's replacement {documented!r} is not in it any more"
            text = text.replace(documented, used.format(**values))
        text = re.sub(r"\s\[[^\]]*\]", "", text)  # optional parts the rule did not fill
        text = text.replace("../shared/data", str(values.get("shared", "../shared/data")))
        words = shlex.split(text)
        assert words[0].rsplit("/", 1)[-1] == "dialeval", f"{command}: only dialeval commands run here"
        status = dialeval(words[1:])
        captured = capfd.readouterr()
        assert status == 0, f"{command}\n{captured.err[-3000:]}"
        outputs.append(captured.out)
    return outputs


def test_the_chateval_conversion_runs(shared_data, tmp_path, monkeypatch, capfd):
    run_group("chateval", tmp_path, monkeypatch, capfd, shared=shared_data)
    assert (tmp_path / "chateval.jsonl").stat().st_size > 0


@pytest.mark.slow
def test_the_teachers_display(shared_data, tmp_path, monkeypatch, capfd):
    monkeypatch.setenv("DIALEVAL_SHARED_DATA", str(shared_data))  # the teachers' default folders
    shown = "".join(run_group("teachers", tmp_path, monkeypatch, capfd)) + capfd.readouterr().out
    episodes = set(re.findall(r"- - - NEW EPISODE: (\S+) - - -", shown))
    assert "fed" in episodes and any(e.startswith("chateval") for e in episodes), episodes
    assert "[ji2022]: " in shown and "[model]: " in shown and "[ratings]: {'interesting'" in shown  # the added fields


@pytest.mark.slow
def test_the_fed_correlations_run(shared_data, tmp_path, monkeypatch, capfd):
    for name in ("fed_data.json", "replication_outputs"):
        (tmp_path / name).symlink_to(shared_data / "fed" / name)
    run_group("fed", tmp_path, monkeypatch, capfd)
    assert (tmp_path / "fed_correlations.csv").stat().st_size > 0


@pytest.mark.slow
def test_the_live_chat_analyses_and_their_replication_run(shared_data, tmp_path, monkeypatch, capfd):
    run_group("live chat", tmp_path, monkeypatch, capfd, shared=shared_data)
    for report in ("free1", "free2", "replication"):
        assert (tmp_path / "runs" / report / "report.html").is_file(), report


PYTHON_DOCS = ["docs/library.md"]  # worked examples in Python, run here block after block


def python_blocks(doc: str) -> list[str]:
    text = (REPO / doc).read_text(encoding="utf-8")
    return [body for language, body in FENCE.findall(text) if language == "python"]


@pytest.mark.slow
@pytest.mark.parametrize("doc", PYTHON_DOCS)
def test_the_worked_python_examples_run(doc, shared_data, tmp_path, monkeypatch, capfd):
    # Issue 56 item 2: the library calls a notebook makes, as the docs show them, on the data they name.
    blocks = python_blocks(doc)
    assert blocks, f"{doc} has no python block"
    monkeypatch.chdir(tmp_path)
    namespace: dict = {}
    for number, block in enumerate(blocks, 1):
        code = compile(block.replace("../shared/data", str(shared_data)), f"{doc} block {number}", "exec")
        exec(code, namespace)  # noqa: S102 - the project's own documentation
    shown = capfd.readouterr().out
    assert "workers flagged" in shown and "coefficient" in shown
    assert not list(tmp_path.iterdir()), "a library call wrote files"
