"""The fake's studies and submissions: what Prolific does when a participant takes a place, completes or
returns, and the money a published study holds (its places' cost reserved at publishing, an approved place
spent, the rest released once the stopped study has nothing left to review)."""
from __future__ import annotations

from parlai_dialeval.providers.prolific.fake.core import ApiError, now_text

REJECTION_CATEGORIES = {"TOO_QUICKLY", "TOO_SLOWLY", "FAILED_INSTRUCTIONS", "INCOMP_LONGITUDINAL", "FAILED_CHECK",
                        "LOW_EFFORT", "MALINGERING", "NO_CODE", "BAD_CODE", "NO_DATA", "UNSUPP_DEVICE", "OTHER"}
STUDY_REQUIRED = ("name", "description", "external_study_url", "prolific_id_option", "completion_codes",
                  "total_available_places", "estimated_completion_time", "reward")
# from state -> {action: to state}
STUDY_TRANSITIONS = {"UNPUBLISHED": {"PUBLISH": "ACTIVE"}, "PUBLISHING": {}, "SCHEDULED": {"STOP": "AWAITING REVIEW"},
                     "AWAITING REVIEW": {"STOP": "AWAITING REVIEW"},
                     "ACTIVE": {"PAUSE": "PAUSED", "STOP": "AWAITING REVIEW"},
                     "PAUSED": {"START": "ACTIVE", "STOP": "AWAITING REVIEW"}}
FREE_PLACE = {"RETURNED", "TIMED-OUT", "SCREENED OUT"}  # submissions in these states give their place back


class StudiesMixin:
    # ------------------------------------------------------------------ what participants do (hooks)
    def excluded(self, study: dict, pid: str) -> str | None:
        """Why ``pid`` may not take part in ``study`` (None when eligible)."""
        for flt in study.get("filters") or []:
            values = flt.get("selected_values") or []
            fid = flt.get("filter_id")
            if fid == "custom_blocklist" and pid in values:
                return "on the study's block list"
            if fid == "custom_allowlist" and pid not in values:
                return "not on the study's allow list"
            groups = [self.groups[g] for g in values if g in self.groups and not self.groups[g]["is_deleted"]]
            if fid == "participant_group_blocklist" and any(pid in g["participants"] for g in groups):
                return "in a blocked participant group"
            if fid == "participant_group_allowlist" and not any(pid in g["participants"] for g in groups):
                return "not in an allowed participant group"
        return None

    def start(self, study_id: str, pid: str) -> tuple[str, dict]:
        study = self.get(self.studies, study_id, "study")
        if study["status"] != "ACTIVE":
            raise ApiError(409, f"study {study_id} is {study['status']}, not ACTIVE")
        allowed = (study.get("submissions_config") or {}).get("max_submissions_per_participant", 1)
        done = sum(1 for s in self.submissions.values() if s["participant_id"] == pid and s["study_id"] == study_id)
        if allowed != -1 and done >= allowed:
            raise ApiError(409, f"participant {pid} already took part in study {study_id}")
        why = self.excluded(study, pid)
        if why:
            raise ApiError(403, f"participant {pid} is not eligible for study {study_id}: {why}")
        taken = sum(1 for s in self.submissions.values() if s["study_id"] == study_id and s["status"] not in FREE_PLACE)
        if taken >= study["total_available_places"]:
            raise ApiError(409, f"study {study_id} has no free places "
                                f"({taken} of {study['total_available_places']} taken)")
        sub = {"id": self.new_id("sub"), "study_id": study_id, "participant_id": pid, "status": "ACTIVE",
               "started_at": now_text(), "completed_at": None, "study_code": None, "bonus_payments": []}
        self.submissions[sub["id"]] = sub
        self.status_changed(sub)
        url = study["external_study_url"]
        for key, value in (("PROLIFIC_PID", pid), ("STUDY_ID", study_id), ("SESSION_ID", sub["id"])):
            url = url.replace("{{%" + key + "%}}", value)
        return url, sub

    def set_status(self, sub: dict, status: str) -> dict:
        """A submission moves (the participant returns, times out; a researcher decides): webhooks are told."""
        if sub["status"] != status:
            sub["status"] = status
            self.status_changed(sub)
        return sub

    def own_submission(self, submission_id: str | None, pid: str | None) -> dict:
        """The latest submission of the participant on the completion page."""
        subs = [s for s in self.submissions.values()
                if (submission_id and s["id"] == submission_id) or (pid and s["participant_id"] == pid)]
        if not subs:
            raise ApiError(404, "no submission of yours")
        return subs[-1]

    def complete(self, code: str, submission_id: str | None, pid: str | None) -> dict:
        subs = [s for s in self.submissions.values()
                if (submission_id and s["id"] == submission_id) or (pid and s["participant_id"] == pid)]
        active = [s for s in subs if s["status"] == "ACTIVE"]
        if not active:
            raise ApiError(404, "no active submission of yours to complete")
        sub = active[-1]
        codes = {c["code"]: c for c in self.studies[sub["study_id"]]["completion_codes"]}
        if code not in codes:
            raise ApiError(400, f"completion code {code!r} is not this study's")
        return self._completed(sub, codes[code])

    def _completed(self, sub: dict, code: dict) -> dict:
        """AWAITING REVIEW with ``code``, then the code's actions (Prolific's CLI
        docs/examples/study-with-participant-group-allow-list.json): AUTOMATICALLY_APPROVE approves it,
        ADD_TO_PARTICIPANT_GROUP adds the participant to the group named."""
        sub.update(completed_at=now_text(), study_code=code["code"])
        self.set_status(sub, "AWAITING REVIEW")
        for action in code.get("actions") or []:
            if action.get("action") == "ADD_TO_PARTICIPANT_GROUP":
                group = self.groups.get(action.get("participant_group"))
                if group is not None and not group["is_deleted"]:
                    group["participants"].setdefault(sub["participant_id"], now_text())
            elif action.get("action") == "AUTOMATICALLY_APPROVE":
                self._decide(sub, "APPROVED")
        return sub

    # ------------------------------------------------------------------ money a study holds
    def cost(self, reward: int, places: int) -> int:
        return reward * places + round(reward * places * self.fee_rate)

    # Prolific reserves a study's places' cost when it is published (and when places are added): the
    # workspace's available balance is "after removing funds assigned to already active studies" (docs "Get
    # the balance of a workspace"); an approved place is spent; the rest is released once the stopped study has
    # nothing left to review.
    def _wallet(self, study: dict) -> dict:
        return self.balances[self.projects[study["project"]]["workspace"]]

    def _reserve(self, study: dict, places: int) -> None:
        wallet, amount = self._wallet(study), self.cost(study["reward"], places)
        if wallet["available_balance"] < amount:
            raise ApiError(400, f"insufficient balance: {places} place(s) cost {amount}, available "
                                f"{wallet['available_balance']}")
        wallet["available_balance"] -= amount
        self.reserved[study["id"]] = self.reserved.get(study["id"], 0) + amount

    def _spend_place(self, study: dict) -> None:
        amount = min(self.cost(study["reward"], 1), self.reserved.get(study["id"], 0))
        self.reserved[study["id"]] = self.reserved.get(study["id"], 0) - amount
        self._wallet(study)["total_balance"] -= amount

    def held_in_total(self) -> None:
        """Each workspace's total balance: what is available plus what its studies hold."""
        for ws, wallet in self.balances.items():
            wallet["total_balance"] = wallet["available_balance"] + sum(
                held for sid, held in self.reserved.items()
                if sid in self.studies and self.projects[self.studies[sid]["project"]]["workspace"] == ws)

    def _release_if_done(self, study: dict) -> None:
        open_ = any(s["study_id"] == study["id"] and s["status"] in ("RESERVED", "ACTIVE", "AWAITING REVIEW")
                    for s in self.submissions.values())
        if study["id"] in self.stopped and not open_:
            self._wallet(study)["available_balance"] += self.reserved.pop(study["id"], 0)

    # ------------------------------------------------------------------ API: studies
    def api_cost(self, query, body):
        if not isinstance(body.get("reward"), int) or not isinstance(body.get("total_available_places"), int):
            raise ApiError(400, "reward and total_available_places must be integers (reward in minor units)")
        return {"total_cost": self.cost(body["reward"], body["total_available_places"])}

    def api_create_study(self, query, body):
        missing = [k for k in STUDY_REQUIRED if k not in body]
        if missing:
            raise ApiError(400, f"missing fields: {', '.join(missing)}")
        if body.get("project") not in self.projects:
            raise ApiError(400, f"unknown project {body.get('project')!r}")
        if not isinstance(body["reward"], int) or body["reward"] <= 0:
            raise ApiError(400, "reward must be a positive integer in minor units")
        hourly = body["reward"] * 60 / max(1, body["estimated_completion_time"])
        if hourly < self.min_hourly_minor:
            raise ApiError(400, f"reward is below the minimum hourly rate "
                                f"({hourly:.0f} < {self.min_hourly_minor} per hour)")
        for code in body["completion_codes"]:
            for action in code.get("actions") or []:
                if action.get("action") == "ADD_TO_PARTICIPANT_GROUP" and action.get("participant_group") not in \
                        self.groups:
                    raise ApiError(400, f"ADD_TO_PARTICIPANT_GROUP: unknown participant_group "
                                        f"{action.get('participant_group')!r}")
        sid = self.new_id("stu")
        study = dict(body, id=sid, status="UNPUBLISHED", filters=list(body.get("filters") or []))
        self.studies[sid] = study
        return study

    def api_project_studies(self, project, query, body):
        self.get(self.projects, project, "project")
        return [s for s in self.studies.values() if s["project"] == project]

    def api_study(self, sid, query, body):
        return self.get(self.studies, sid, "study")

    def api_update_study(self, sid, query, body):
        study = self.get(self.studies, sid, "study")
        if study["status"] != "UNPUBLISHED":
            allowed = set(body) <= {"internal_name", "total_available_places"}
            places = study["total_available_places"]
            fewer = body.get("total_available_places", places) < places
            if not allowed or fewer:
                raise ApiError(400, "a published study only takes a new internal_name or more places")
            self._reserve(study, body.get("total_available_places", places) - places)
        study.update(body)
        return study

    def api_delete_study(self, sid, query, body):
        study = self.get(self.studies, sid, "study")
        if study["status"] != "UNPUBLISHED":
            raise ApiError(400, "only unpublished studies can be deleted")
        del self.studies[sid]

    def api_transition_study(self, sid, query, body):
        study = self.get(self.studies, sid, "study")
        action = body.get("action")
        target = STUDY_TRANSITIONS.get(study["status"], {}).get(action)
        if target is None:
            raise ApiError(400, f"cannot {body.get('action')} a study that is {study['status']}")
        if action == "PUBLISH":
            self._reserve(study, study["total_available_places"])
        study["status"] = self.publish_status if action == "PUBLISH" else target
        if action == "STOP":
            self.stopped.add(sid)
            self._release_if_done(study)
        return study

    # ------------------------------------------------------------------ API: submissions
    def api_submissions(self, query, body):
        study = (query.get("study") or [None])[0]
        if study is not None:
            self.get(self.studies, study, "study")
        return [listed(s) for s in self.submissions.values() if study is None or s["study_id"] == study]

    def api_submission(self, sub_id, query, body):
        return single(self.get(self.submissions, sub_id, "submission"))

    def api_transition_submission(self, sub_id, query, body):
        sub = self.get(self.submissions, sub_id, "submission")
        action = body.get("action")
        if action == "COMPLETE":  # the researcher's server completes it (Prolific's CLI: submission transition)
            if sub["status"] != "ACTIVE":
                raise ApiError(400, f"submission {sub_id} is {sub['status']}, not ACTIVE")
            # Prolific's docs ("Approve or reject a submission"): the code must be one of the study's
            # and its actor the researcher
            codes = {c["code"]: c for c in self.studies[sub["study_id"]]["completion_codes"]
                     if c.get("actor") == "researcher"}
            if body.get("completion_code") not in codes:
                raise ApiError(400, "completion_code: not a researcher's code of this study")
            return single(self._completed(sub, codes[body["completion_code"]]))
        done = {"APPROVE": "APPROVED", "REJECT": "REJECTED"}.get(action)
        if done is None:
            raise ApiError(400, f"unknown action {action!r}")
        if sub["status"] == done:
            return single(sub)  # transitions are idempotent
        if sub["status"] != "AWAITING REVIEW":
            raise ApiError(400, f"submission {sub_id} is {sub['status']}, not AWAITING REVIEW")
        if action == "REJECT":
            if len(body.get("message") or "") < 100:
                raise ApiError(400, "message: a rejection needs at least 100 characters")
            if body.get("rejection_category") not in REJECTION_CATEGORIES:
                raise ApiError(400, f"rejection_category: one of {sorted(REJECTION_CATEGORIES)}")
        return single(self._decide(sub, done))

    def _decide(self, sub: dict, done: str) -> dict:
        self.set_status(sub, done)
        study = self.studies[sub["study_id"]]
        if done == "APPROVED":
            self._spend_place(study)
        self._release_if_done(study)
        return sub


def single(sub: dict) -> dict:
    """A submission as ``GET submissions/{id}/`` (and its transition) answers it: the participant is
    ``participant``, the code ``entered_code`` (docs "Retrieve a submission"; CLI client/responses.go
    TransitionSubmissionResponse)."""
    return {"id": sub["id"], "study_id": sub["study_id"], "participant": sub["participant_id"],
            "status": sub["status"], "started_at": sub["started_at"], "completed_at": sub["completed_at"],
            "entered_code": sub["study_code"], "bonus_payments": list(sub["bonus_payments"])}


def listed(sub: dict) -> dict:
    """A submission as an item of ``GET submissions/`` lists it: the documented list fields only, no
    ``bonus_payments`` (docs "List submissions"; Dallinger's prolific.py get_submissions example)."""
    return {"id": sub["id"], "participant_id": sub["participant_id"], "status": sub["status"],
            "started_at": sub["started_at"], "completed_at": sub["completed_at"], "study_code": sub["study_code"]}
