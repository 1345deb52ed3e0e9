"""The dashboard's reads and writes: the task's data as ``dialeval export`` reads it (platform/export.py
``collect``), Mephisto's unit rows, the task's own worker check, and on Prolific ``dialeval review``'s table
and decisions (parlai_dialeval/providers/prolific/review.py), all re-read at most every few seconds.

Review actions go through review.py's public functions, so they keep its guarantees: the decision is in the
ledger before Prolific is called, a bonus is paid once per submission and reason.
"""
from __future__ import annotations

import threading
import time
from pathlib import Path

from parlai_dialeval.dashboard import summary
from parlai_dialeval.errors import DialevalError

ACTIONS = ("approve", "reject", "bonus", "block", "message")


# a place held this long with no act of its page's is listed (a person reads the instructions first)
IDLE_PLACE_SECONDS = 300


class TaskSource:
    """One task's data for the page. ``ttl``: seconds a snapshot is reused (the page refreshes itself, and
    several tabs may be open); ``money_ttl``: the same for the Prolific figures, which cost API calls;
    ``patience``: seconds of waiting for a bot's reply past which the page warns (``--slow-reply``)."""

    def __init__(self, task_name: str, data_dir: str | Path | None = None, task_type: str | None = None,
                 ttl: float = 2.0, money_ttl: float = 15.0, patience: float | None = None):
        from parlai_dialeval.crowdsourcing.platform.env import database_path, prepare_mephisto
        from parlai_dialeval.crowdsourcing.platform.speed import PATIENCE_SECONDS

        self.task_name, self.task_type, self.ttl, self.money_ttl = task_name, task_type, ttl, money_ttl
        self.patience = PATIENCE_SECONDS if patience is None else patience
        self.data_dir = prepare_mephisto(data_dir)
        if not database_path(self.data_dir).is_file():
            raise DialevalError(f"no task named {task_name!r}: nothing was ever launched with data directory "
                                f"{self.data_dir}; give the launch's --mephisto-data")
        from mephisto.abstractions.databases.local_database import LocalMephistoDB

        self._lock = threading.RLock()
        self._snapshot: tuple[float, dict] | None = None
        self._money: tuple[float, dict | None] | None = None
        self._records: list[dict] = []
        self._charts: dict[str, tuple[object, str | None]] = {}  # chart -> (its figures, its SVG), redrawn on change
        self._board: tuple[int, dict] | None = None  # (the votes it was computed from, the leaderboard)
        # one handle for the dashboard's life: Mephisto keeps a SQLite connection per handle and thread
        self._db = LocalMephistoDB(database_path=str(database_path(self.data_dir)))

    # ------------------------------------------------------------ reading
    def snapshot(self) -> dict:
        from parlai_dialeval.crowdsourcing.platform import progress as unit_progress
        from parlai_dialeval.crowdsourcing.platform.export import collect_from_db
        from parlai_dialeval.crowdsourcing.platform.places import idle_places
        from parlai_dialeval.crowdsourcing.platform.resume import launch_state

        with self._lock:
            if self._snapshot and time.time() - self._snapshot[0] < self.ttl:
                return self._snapshot[1]
            report, spec = collect_from_db(self._db, self.task_name, self.task_type)
            records = report.records
            units, started = unit_progress.unit_rows(self._db, self.task_name)
            checks, check_note = None, ""
            if spec.worker_checks is not None:
                try:
                    checks = spec.worker_checks(records, None)
                except DialevalError as error:  # e.g. no ratings yet: say so on the page
                    check_note = str(error)
            else:
                check_note = f"task {spec.name} has no worker check"
            now = time.time()
            progress = summary.progress(records, units, started, now, launch_state(self._db, self.task_name))
            # the launch's record, and this reading as its last point
            history = [*unit_progress.read_log(unit_progress.log_path(self.data_dir, self.task_name)),
                       {"at": now, **{key: progress[key] for key in unit_progress.COUNTS}}]
            bots = summary.endpoints(records)
            data = {"task_name": self.task_name, "task_type": spec.name, "read_at": now,
                    "progress": progress, "groups": summary.per_group(records, units),
                    "quality": summary.quality(checks, records, onboarding_statuses(self._db, self.task_name)),
                    "check_note": check_note,
                    "endpoints": bots, "too_slow": summary.too_slow(bots, self.patience), "patience": self.patience,
                    "notes": report.notes, **standings(records, history, self._charts),
                    "idle_places": idle_places(self._db, self.task_name, spec.extra.get("export_files", ()),
                                               IDLE_PLACE_SECONDS, now),
                    "on_prolific": self.on_prolific(), "adaptive": self.adaptive()}
            self._records, self._quality = records, checks
            self._snapshot = (now, data)
            return data

    def records(self) -> list[dict]:
        """The canonical records of the newest snapshot."""
        self.snapshot()
        return self._records

    def quality_table(self):
        """The task's own worker test of the newest snapshot (worker_id, passed) for the integrity page, or None."""
        self.snapshot()
        table = getattr(self, "_quality", None)
        if table is None or "passed" not in getattr(table, "columns", ()):
            return None
        return table[["worker_id", "passed"]].astype({"worker_id": str})

    def work(self, worker: str) -> tuple[list[dict], dict[str, list[dict]]]:
        """The participant's conversations and comparisons (as exported), and their ratings by conversation."""
        records = self.records()
        ratings: dict[str, list[dict]] = {}
        for record in records:
            if record["type"] == "rating" and record.get("worker_id") == worker:
                ratings.setdefault(record["conversation_id"], []).append(record)
        return [r for r in records if r["type"] in ("conversation", "comparison") and r.get("worker_id") == worker], ratings

    def leaderboard(self) -> dict:
        """dashboard/leaderboard.py over the newest snapshot's records, computed again only when they changed."""
        from parlai_dialeval.dashboard.leaderboard import leaderboard

        records = self.records()
        key = hash(tuple((r.get("item_id"), r.get("turn_index"), r.get("worker_id"), r.get("choice"), r.get("unverified"))
                         for r in records if r["type"] == "comparison"))
        with self._lock:
            if self._board is None or self._board[0] != key:
                self._board = (key, leaderboard(records))
            return self._board[1]

    def on_prolific(self) -> bool:
        from parlai_dialeval.providers.prolific.common import PROVIDER_TYPE, datastore

        if not (self.data_dir / PROVIDER_TYPE / "prolific.db").is_file():  # never launched on Prolific
            return False
        return bool(datastore(self._db).all("SELECT 1 FROM studies WHERE task_name = ? AND study_id IS NOT NULL",
                                            self.task_name))

    def adaptive(self) -> dict | None:
        """The adaptive run's state (platform/adaptive/config.py writes it after every batch), if there is one."""
        from parlai_dialeval.dashboard.adaptive_view import read_state

        return read_state(self.data_dir, self.task_name)

    def money(self, fresh: bool = False) -> dict | None:
        """Spent / committed on Prolific from ``dialeval review``'s table; None when not on Prolific.
        ``fresh``: ask Prolific now (a participant's page, where a decision is taken), else reuse the last
        answer for ``money_ttl`` seconds."""
        with self._lock:
            if not fresh and self._money and time.time() - self._money[0] < self.money_ttl:
                return self._money[1]
            if not self.on_prolific():
                self._money = (time.time(), None)
                return None
            from parlai_dialeval.providers.prolific.common import datastore

            table, note = self.review_table()
            store = datastore(self._db)
            studies = store.all("SELECT * FROM studies WHERE task_name = ? AND study_id IS NOT NULL", self.task_name)
            rows = table.drop(columns=["agent_id"]).to_dict("records")
            figures = summary.money(rows, studies)
            figures.update(submissions=rows, qc_note=note, decisions=store.decisions(task_name=self.task_name),
                           read_at=time.time())
            self._money = (time.time(), figures)
            return figures

    def review_table(self):
        from parlai_dialeval.crowdsourcing.platform.quality import review_qc
        from parlai_dialeval.providers.prolific import review

        return review.review_table(self._db, self.task_name, *review_qc(self.task_name, self.data_dir))

    # ------------------------------------------------------------ review actions
    def check_action(self, kind: str, participant: str, fields: dict) -> dict:
        """The action's fields, checked as ``dialeval review`` checks them, before anyone confirms it."""
        from parlai_dialeval.providers.prolific import review
        from parlai_dialeval.providers.prolific.api import to_major, to_minor

        if kind not in ACTIONS:
            raise DialevalError(f"unknown action {kind!r}")
        if not self.on_prolific():
            raise DialevalError("review actions need a study run on Prolific (mephisto/provider=prolific)")
        if kind == "reject":
            review.check_rejection(fields.get("message") or "", fields.get("category") or "")
            return {"message": fields["message"], "category": fields["category"]}
        if kind == "bonus":
            if not (fields.get("reason") or "").strip():
                raise DialevalError("a bonus needs a reason (the participant sees it; it also keeps the same bonus "
                                    "from being paid twice)")
            try:
                minor = to_minor(fields.get("amount") or "", "bonus amount")
            except ArithmeticError:
                raise DialevalError(f"bonus amount: {fields.get('amount')!r} is not an amount such as 0.50") from None
            if minor <= 0:
                raise DialevalError(f"bonus amount must be positive (got {fields.get('amount')})")
            return {"amount": to_major(minor), "reason": fields["reason"].strip()}
        if kind == "block":
            return {"reason": (fields.get("reason") or "").strip() or "blocked from the dashboard"}
        if kind == "message":
            text = (fields.get("message") or "").strip()
            if not text or len(text) > review.MAX_MESSAGE:
                raise DialevalError(f"a message has 1 to {review.MAX_MESSAGE} characters (got {len(text)})")
            return {"message": text}
        return {}

    def act(self, kind: str, participant: str, fields: dict) -> str:
        """Carry out a confirmed action through review.py; returns what was done."""
        from parlai_dialeval.providers.prolific import bonus, review

        fields = self.check_action(kind, participant, fields)
        with self._lock:
            self.snapshot()
            db = self._db
            if kind == "block":
                review.block(db, participant, fields["reason"])
                done = f"blocked {participant} from later studies"
            else:
                table, _ = self.review_table()
                agent = review.agent_of(db, table, participant, kind)
                if kind == "approve":
                    review.approve(db, agent)
                    done = f"approved {participant}"
                elif kind == "reject":
                    review.reject(db, agent, fields["message"], fields["category"])
                    done = f"rejected {participant} ({fields['category']})"
                elif kind == "message":
                    done = review.send_message(db, agent, fields["message"])
                else:
                    done = bonus.pay(db, agent, fields["amount"], fields["reason"])
            self._money = self._snapshot = None  # the next page shows the decision
            return done


def standings(records: list[dict], history: list[dict], drawn: dict) -> dict:
    """Who is ahead so far, with charts: each bot's mean per criterion, each pair's win rate, progress over
    ``history`` (platform/progress.py's samples, oldest first). ``drawn``: chart name -> (its figures, its SVG), kept between calls so that a chart is drawn
    again only when its figures changed (the page reloads every few seconds)."""
    from parlai_dialeval.dashboard import charts

    def chart(name: str, figures, draw) -> str | None:
        if name not in drawn or drawn[name][0] != figures:
            drawn[name] = (figures, draw())
        return drawn[name][1]

    means, pairs = summary.bot_means(records), summary.win_rates(records)
    criteria = []
    for criterion in dict.fromkeys(row["criterion"] for row in means):
        rows = [row for row in means if row["criterion"] == criterion]
        scale = rows[0]["scale"] if None not in rows[0]["scale"] else None
        criteria.append({"label": rows[0]["label"], "rows": rows, "chart": chart(
            f"criterion {criterion}", rows, lambda: charts.interval_chart(
                rows, [row["model"] for row in rows], f"mean {rows[0]['label']} (95% interval)", limits=scale))})
    pairs_chart = chart("pairs", pairs, lambda: charts.interval_chart(
        pairs, [f"{p['a']} vs {p['b']}" for p in pairs], "win rate of the first (95% interval)", 0.5, (0, 1))
        if pairs else None)
    # drawn again when the counts changed, or a minute later (the last point is the reading, moving on)
    figures = [*history[:-1], {**history[-1], "at": history[-1]["at"] // 60}] if history else []
    return {"criteria": criteria, "pairs": pairs, "pairs_chart": pairs_chart,
            "progress_chart": chart("progress", figures, lambda: charts.progress_chart(history)),
            "history_since": history[0]["at"] if history else None, "history_samples": len(history)}


def onboarding_statuses(db, task_name: str) -> dict[str, list[str]]:
    """Worker name -> the Mephisto statuses of their onboarding attempts, oldest first (approved: passed)."""
    tasks = db.find_tasks(task_name=task_name)
    attempts: dict[str, list[str]] = {}
    agents = db.find_onboarding_agents(task_id=tasks[0].db_id) if tasks else []
    for agent in sorted(agents, key=lambda a: int(a.db_id) if str(a.db_id).isdigit() else 0):
        attempts.setdefault(db.get_worker(agent.worker_id)["worker_name"], []).append(agent.db_status)
    return attempts
