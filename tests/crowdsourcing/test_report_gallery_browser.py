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

from .browser_page import chromium_page, require_chromium, serious_accessibility_violations

pytestmark = [pytest.mark.browser, pytest.mark.slow, pytest.mark.timeout(600)]
WINDOW = {"width": 1280, "height": 900}
PAIRS = ("AMT_NCM_Test_Human1_Human2", "AMT_NCM_Test_NCM_Human1")
ROUND_2 = "live_chat_round_2"  # the analysis replicate compares with the gallery's analyze_live_chat


def small_ratings() -> tuple[list[dict], list[dict], list[dict]]:
    """Scale-design ratings (three models, two scales), and two workers' and a judge's 0-2 ratings of the
    same conversations (judge_agreement)."""
    scales = [{"type": "study", "name": "sc"}]
    for i in range(6):
        for m, model in enumerate(("m1", "m2", "m3")):
            for w, (scale, low, high) in enumerate((("likert", 1, 6), ("likert", 1, 6), ("continuous", 0, 100))):
                value = 1 + (i + m + w) % 6 if scale == "likert" else 20.0 * m + 3 * i + w
                scales.append({"type": "rating", "study": "sc", "conversation_id": f"item{i}", "worker_id": f"w{w}",
                               "model": model, "criterion": "readability", "scale": scale, "scale_min": low,
                               "scale_max": high, "value": value})

    def rated(worker, values):
        return [{"type": "rating", "conversation_id": f"c{i}", "worker_id": worker, "model": f"m{i % 3}",
                 "criterion": "overall", "scale": "likert", "scale_min": 0, "scale_max": 2, "value": v,
                 "meta": {"protocol": "sm_dialog"}} for i, v in enumerate(values)]

    human = [0, 1, 2, 2, 1, 0] * 6
    return scales, rated("w1", human) + rated("w2", human[1:] + human[:1]), rated("judge:x", human[2:] + human[:2])


def commands(shared: Path, out: Path) -> dict[str, list[str]]:
    """Report name -> the command that writes it (small inputs: two ChatEval comparisons, a round of Ji et
    al.'s live chats (the second round's analysis for `replicate` is written first, by the test), FED's
    annotations, test_single_model's small SM and PW study, small_ratings; bootstrap rounds and trials cut
    down)."""
    from test_single_model import synthetic_records

    from parlai_dialeval.data import write_jsonl

    chateval = [str(shared / "chateval" / "amt_ab_2018" / name) for name in PAIRS]
    study, scales, human, judge = (out / f"{name}.jsonl" for name in ("study", "scales", "human", "judge"))
    if not study.is_file():
        out.mkdir(parents=True, exist_ok=True)
        write_jsonl(synthetic_records(), study)
        for path, records in zip((scales, human, judge), small_ratings()):
            write_jsonl(records, path)
    return {
        # 100 rounds: fewer would put the rough-interval warning in the gallery's picture
        "analyze_pairwise": ["analyze_pairwise", "--data", *chateval, "--bootstrap-rounds", "100"],
        "certify": ["certify", "--data", *chateval],
        "analyze_live_chat": ["analyze_live_chat", "--data",
                              str(shared / "ji2022" / "raw_mturk_csv" / "FreeTopicRound1")],
        "analyze_annotations": ["analyze_annotations", "--data", str(shared / "fed" / "fed_data.json")],
        "plan": ["plan", "--judge-agreement", "0.8"],
        "analyze_single_model": ["analyze_single_model", "--data", str(study), "--n-boot", "50"],
        "significance_time": ["significance_time", "--data", str(study), "--trials", "30", "--weights", "1:0,1:5,0:1"],
        "compare_protocols": ["compare_protocols", "--data", str(study), "--trials", "20"],
        "analyze_scales": ["analyze_scales", "--data", str(scales)],
        "judge_agreement": ["judge_agreement", "--judge", str(judge), "--human", str(human)],
        "replicate": ["replicate", "--runs", str(out / "analyze_live_chat"), str(out / ROUND_2)],
    }


def dashboard_html() -> str:
    """The dashboard's overview of a live-chat study under way, as the app renders it (a stand-in source
    with two bots rated on two criteria, one of them reversed, and a slow bot)."""
    from parlai_dialeval.dashboard import summary
    from parlai_dialeval.dashboard.app import create_app
    from parlai_dialeval.dashboard.source import standings
    from parlai_dialeval.crowdsourcing.platform.progress import UnitRow

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
                    "idle_places": [], **standings(records, [
                        {"at": 1_799_998_800.0 + 60 * m, "done": m // 8, "in_flight": 1, "left": 2 - m // 8}
                        for m in range(20)], {})}

        def money(self, fresh=False):
            return None

    app = create_app(Source(), "gallery-secret-token")
    with app.test_client() as web:
        web.get("/?token=gallery-secret-token")
        return web.get("/").get_data(as_text=True)


def test_every_report_and_the_dashboard_fit_a_1280_px_window(shared_data, tmp_path):
    require_chromium()
    pages = {}
    round_2 = ["analyze_live_chat", "--data", str(shared_data / "ji2022" / "raw_mturk_csv" / "FreeTopicRound2")]
    assert dialeval([*round_2, "--out", str(tmp_path / ROUND_2)]) == 0
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
            found = serious_accessibility_violations(page)  # the dashboard's reload included (an HTTP header)
            assert not found, f"{name}: {found}"
            if gallery:
                Path(gallery).mkdir(parents=True, exist_ok=True)
                page.screenshot(path=str(Path(gallery) / f"{name}.png"))
    assert not wide, f"pages wider than {WINDOW['width']} px: {wide}"
    assert len(pages) == len(commands(shared_data, tmp_path)) + 1
