"""The dashboard's integrity page (issue 51): behind the token like every page, the evidence about each participant
as the analysis commands build it (a participant who pastes while away from the page and one failing two
attention checks flagged, with their reasons; names escaped) and the agreement so far (Krippendorff's alpha per
criterion over items two participants rated)."""
from __future__ import annotations

import pandas as pd

from parlai_dialeval.dashboard.app import create_app

from .test_dashboard import HOSTILE, SECRET
from .test_dashboard_figures import conversation

PASTED = {"typed": 0, "pasted": 60, "pastes": [60], "keys": 0, "compose_seconds": 1.0, "away": 1, "away_seconds": 9.0}
TYPED = {"typed": 60, "pasted": 0, "keys": 60, "key_interval_ms": 170.0, "compose_seconds": 11.0, "away": 0}


def _records() -> list[dict]:
    study = {"type": "study", "name": "s", "criteria": [{"name": "fun", "positive": True, "scale": "continuous",
                                                          "min": 0, "max": 100}]}
    records = [study]
    for worker, record in (("typist", TYPED), (HOSTILE, PASTED), ("careless", TYPED)):
        text = f"{worker[:5]} writes a long enough message about gardening, number"
        records.append(conversation(f"c_{len(records)}", worker, "m", study="s", turns=[
            {"speaker": "human", "text": f"{text} {i}", "provenance": record} for i in range(4)]))
        for item in range(4):  # the same four items for everyone: agreement can be measured
            records.append({"type": "rating", "study": "s", "conversation_id": f"item{item}", "worker_id": worker,
                            "model": "m", "criterion": "fun", "scale": "continuous", "scale_min": 0, "scale_max": 100,
                            "value": 20.0 + 20 * item + len(worker) % 3, "provenance": {"seconds": 15.0}})
    records += [{"type": "rating", "study": "s", "conversation_id": f"c_attention{k}", "worker_id": "careless",
                 "model": "m", "criterion": "attention", "scale": "continuous", "scale_min": 0, "scale_max": 100,
                 "value": 5.0, "check": {"kind": "attention", "passed": False}} for k in range(2)]
    return records


class Source:
    task_name = "study_1"

    def records(self):
        return _records()

    def quality_table(self):
        return pd.DataFrame({"worker_id": ["typist"], "passed": [True]})


def test_the_integrity_page_lists_the_evidence_and_agreement_behind_the_token():
    app = create_app(Source(), SECRET)
    app.testing = True
    with app.test_client() as client:
        assert "sign in" in client.get("/integrity").get_data(as_text=True).lower()  # the login form only
        client.get(f"/?token={SECRET}")
        answer = client.get("/integrity")
        page = answer.get_data(as_text=True)
    assert answer.status_code == 200 and "script-src" not in answer.headers["Content-Security-Policy"]
    assert HOSTILE not in page and "&lt;img src=x onerror=alert(1)&gt;" in page
    assert 'data-testid="integrity-flagged">2</b> of 3 participants flagged' in page
    rows = page.split('data-testid="evidence-row"')[1:]
    assert len(rows) == 3 and "careless" in rows[0] + rows[1] and "typist" in rows[2]
    assert "pasted, away" in page and "failed 2 of 2 attention checks" in page and "(FAILED_CHECK)" in page
    assert 'data-testid="rating-agreement"' in page and "fun" in page.split('data-testid="rating-agreement"')[1]
