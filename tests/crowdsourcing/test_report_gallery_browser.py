"""The researcher's pages in Chromium at 1,280 px (issue 40): each analysis report built here from the
tests' data fits the window (document.scrollWidth <= 1,280: wide tables are split, column names in words),
and so does the dashboard's overview; none has a serious or critical axe-core violation (text contrast
under 4.5:1 among them; the numbers drawn on the pairwise heatmap are checked in test_pairwise_analysis). With DIALEVAL_GALLERY set, each page's first screen goes there as a
PNG: docs/report_gallery.md is made this way (the command is in that page), so it shows the pages this
test passed."""
from __future__ import annotations

import os
from pathlib import Path

import pytest

from parlai_dialeval.cli import main as dialeval

from .protocol_harness import chromium_page, require_chromium, serious_accessibility_violations

pytestmark = [pytest.mark.browser, pytest.mark.slow, pytest.mark.timeout(400)]
WINDOW = {"width": 1280, "height": 900}
PAIRS = ("AMT_NCM_Test_Human1_Human2", "AMT_NCM_Test_NCM_Human1")


def commands(shared: Path, out: Path) -> dict[str, list[str]]:
    """Report name -> the command that writes it (small inputs: two ChatEval comparisons, a round of Ji et
    al.'s live chats, FED's annotations, test_single_model's small SM and PW study; bootstrap rounds and
    trials cut down)."""
    from test_single_model import synthetic_records

    from parlai_dialeval.data import write_jsonl

    chateval = [str(shared / "chateval" / "amt_ab_2018" / name) for name in PAIRS]
    study = out / "study.jsonl"
    if not study.is_file():
        out.mkdir(parents=True, exist_ok=True)
        write_jsonl(synthetic_records(), study)
    return {
        "analyze_pairwise": ["analyze_pairwise", "--data", *chateval, "--bootstrap-rounds", "20"],
        "certify": ["certify", "--data", *chateval],
        "analyze_live_chat": ["analyze_live_chat", "--data",
                              str(shared / "ji2022" / "raw_mturk_csv" / "FreeTopicRound1")],
        "analyze_annotations": ["analyze_annotations", "--data", str(shared / "fed" / "fed_data.json")],
        "plan": ["plan", "--judge-agreement", "0.8"],
        "analyze_single_model": ["analyze_single_model", "--data", str(study), "--n-boot", "50"],
        "significance_time": ["significance_time", "--data", str(study), "--trials", "30", "--weights", "1:0,1:5,0:1"],
    }


def dashboard_html() -> str:
    """The dashboard's overview of a live-chat study under way, as the app renders it (a stand-in source
    with two bots rated on two criteria, one of them reversed, and a slow bot)."""
    from parlai_dialeval.dashboard import summary
    from parlai_dialeval.dashboard.app import create_app
    from parlai_dialeval.dashboard.source import standings
    from parlai_dialeval.dashboard.summary import UnitRow

    criteria = [{"name": "interesting", "positive": True, "min": 0, "max": 100},
                {"name": "robotic", "positive": False, "min": 0, "max": 100}]
    records = [{"type": "study", "criteria": criteria}]
    for k in range(12):
        model = ("blender", "qc")[k % 2]
        records.append({"type": "conversation", "id": f"c{k}", "worker_id": f"worker_{k % 3}", "models": [model],
                        "status": "complete", "assignment_id": str(k % 3), "submission": "submitted",
                        "turns": [{"speaker": "human", "text": "hi"},
                                  {"speaker": model, "text": "hello", "meta": {"latency": 14.0 + k}}]})
        for name, good, bad in (("interesting", 70, 30), ("robotic", 30, 75)):
            records.append({"type": "rating", "conversation_id": f"c{k}", "worker_id": f"worker_{k % 3}",
                            "model": model, "criterion": name, "value": (good if model == "blender" else bad) + k})
    units = [UnitRow("0", "completed", "worker_0"), UnitRow("1", "completed", "worker_1"),
             UnitRow("2", "assigned", "worker_2"), UnitRow("3", "launched")]
    bots = summary.endpoints(records)

    class Source:
        task_name = "live_chat_study"

        def snapshot(self):
            return {"task_name": self.task_name, "task_type": "live_chat_da", "read_at": 1_800_000_000.0,
                    "progress": summary.progress(records, units, 1_799_998_800.0, 1_800_000_000.0),
                    "groups": summary.per_group(records, units), "check_note": "", "notes": [],
                    "quality": summary.quality(None, records), "endpoints": bots, "patience": 10.0,
                    "too_slow": summary.too_slow(bots, 10.0), "on_prolific": False, "adaptive": None,
                    "idle_places": [], **standings(records, [(1_799_998_800.0 + 60 * m, m // 8, 1) for m in range(20)], {})}

        def money(self, fresh=False):
            return None

    app = create_app(Source(), "gallery-secret-token")
    with app.test_client() as web:
        web.get("/?token=gallery-secret-token")
        return web.get("/").get_data(as_text=True)


def test_every_report_and_the_dashboard_fit_a_1280_px_window(shared_data, tmp_path):
    require_chromium()
    pages = {}
    for name, args in commands(shared_data, tmp_path).items():
        out = tmp_path / name
        assert dialeval([*args, "--out", str(out)]) == 0, name
        pages[name] = (out / "report.html").as_uri()
    dashboard = tmp_path / "dashboard.html"
    dashboard.write_text(dashboard_html())
    pages["dashboard"] = dashboard.as_uri()
    gallery = os.environ.get("DIALEVAL_GALLERY")
    wide = {}
    with chromium_page(tmp_path) as page:
        page.set_viewport_size(WINDOW)
        for name, url in pages.items():
            page.goto(url)
            width = page.evaluate("document.documentElement.scrollWidth")
            if width > WINDOW["width"]:
                wide[name] = width
            # axe-core's color-contrast among them: every text at least 4.5:1 against its background
            found = serious_accessibility_violations(page)
            if name == "dashboard":  # it reloads itself by design (--refresh): a page without scripts has no other way
                found = [violation for violation in found if not violation.startswith("meta-refresh ")]
            assert not found, f"{name}: {found}"
            if gallery:
                Path(gallery).mkdir(parents=True, exist_ok=True)
                page.screenshot(path=str(Path(gallery) / f"{name}.png"))
    assert not wide, f"pages wider than {WINDOW['width']} px: {wide}"
    assert len(pages) == len(commands(shared_data, tmp_path)) + 1
