"""The fake's money to participants and words with them: bonuses (a set-up, then a ``pay`` that pays every
time it is called, as Prolific's), participant groups, messages, and a study's demographic export."""
from __future__ import annotations

import csv
import io

from parlai_dialeval.providers.prolific.fake.core import ApiError, Reply, now_text

# The demographic export's columns (docs "Export demographic data": the base fields; the header Prolific's
# web export writes, which the docs' example begins with "Submission id,Participant id,Status,...")
DEMOGRAPHIC_COLUMNS = ("Submission id", "Participant id", "Status", "Started at", "Completed at", "Reviewed at",
                       "Archived at", "Time taken", "Completion code", "Total approvals", "Age", "Sex",
                       "Ethnicity simplified", "Country of birth", "Country of residence", "Nationality", "Language",
                       "Student status", "Employment status")
EXPIRED = "DATA_EXPIRED"  # Prolific's value for a question the participant never answered (docs)


class PeopleMixin:
    # ------------------------------------------------------------------ bonuses
    def show_paid_bonuses(self) -> None:
        """Bonuses paid at least ``bonus_delay`` seconds ago appear in their submission's bonus_payments."""
        now, unseen = self.clock(), []
        for due, sub_id, amount in self.unseen_bonuses:
            if due <= now:
                self.submissions[sub_id]["bonus_payments"].append(amount)
            else:
                unseen.append((due, sub_id, amount))
        self.unseen_bonuses = unseen

    def api_set_up_bonuses(self, query, body):
        study = self.get(self.studies, body.get("study_id", ""), "study")
        rows = []
        for line in (body.get("csv_bonuses") or "").strip().splitlines():
            pid, _, amount = line.partition(",")
            if not any(s["participant_id"] == pid.strip() and s["study_id"] == study["id"]
                       for s in self.submissions.values()):
                raise ApiError(400, f"participant {pid.strip()} has no submission in study {study['id']}")
            rows.append((pid.strip(), round(float(amount) * 100)))
        if not rows:
            raise ApiError(400, "csv_bonuses is empty")
        amount = sum(r[1] for r in rows)
        fees = round(amount * self.fee_rate)
        bid = self.new_id("bon")
        self.bonuses[bid] = {"id": bid, "study": study["id"], "rows": rows, "amount": amount, "fees": fees,
                             "vat": 0, "total_amount": amount + fees, "pay_calls": 0}
        return {k: v for k, v in self.bonuses[bid].items() if k not in ("rows", "pay_calls")}

    def api_pay_bonuses(self, bid, query, body):
        bonus = self.get(self.bonuses, bid, "bonus payment")
        study = self.studies[bonus["study"]]
        ws = self.balances[self.projects[study["project"]]["workspace"]]
        if ws["available_balance"] < bonus["total_amount"]:
            raise ApiError(400, "insufficient balance to pay these bonuses")
        ws["available_balance"] -= bonus["total_amount"]
        ws["total_balance"] -= bonus["total_amount"]
        bonus["pay_calls"] += 1  # paying again pays again: Prolific's pay is not idempotent
        for pid, amount in bonus["rows"]:
            self.payments.append({"participant_id": pid, "amount": amount, "bonus_id": bid, "study_id": study["id"]})
            for sub in self.submissions.values():
                if sub["participant_id"] == pid and sub["study_id"] == study["id"]:
                    self.unseen_bonuses.append((self.clock() + self.bonus_delay, sub["id"], amount))
        return "The bonuses are being paid."

    # ------------------------------------------------------------------ participant groups
    def api_groups(self, query, body):
        ws = (query.get("workspace_id") or [None])[0]
        active = (query.get("active") or [""])[0].lower() == "true"  # deleted groups are listed unless asked
        return [self._group(g) for g in self.groups.values()
                if not (active and g["is_deleted"]) and (ws is None or g["workspace_id"] == ws)]

    @staticmethod
    def _group(g: dict) -> dict:
        return {k: v for k, v in g.items() if k != "participants"} | {"participant_count": len(g["participants"])}

    def api_create_group(self, query, body):
        if body.get("workspace_id") not in self.workspaces or not body.get("name"):
            raise ApiError(400, "workspace_id (a known workspace) and name are required")
        gid = self.new_id("grp")
        self.groups[gid] = {"id": gid, "name": body["name"], "workspace_id": body["workspace_id"],
                            "description": body.get("description", ""), "participants": {}, "is_deleted": False}
        return self._group(self.groups[gid])

    def api_delete_group(self, gid, query, body):
        self.get(self.groups, gid, "participant group")["is_deleted"] = True  # deletes are soft on Prolific

    def api_members(self, gid, query, body):
        group = self.get(self.groups, gid, "participant group")
        return {"results": [{"participant_id": p, "datetime_created": created}
                            for p, created in sorted(group["participants"].items())]}

    def api_add_members(self, gid, query, body):
        members = self.get(self.groups, gid, "participant group")["participants"]
        for pid in body.get("participant_ids") or []:
            members.setdefault(pid, now_text())
        return self.api_members(gid, query, body)

    def api_remove_members(self, gid, query, body):
        group = self.get(self.groups, gid, "participant group")
        for pid in body.get("participant_ids") or []:
            group["participants"].pop(pid, None)
        return self.api_members(gid, query, body)

    # ------------------------------------------------------------------ messages, demographics
    def api_send_message(self, query, body):
        if not all(isinstance(body.get(k), str) and body[k] for k in ("recipient_id", "study_id", "body")):
            raise ApiError(400, "recipient_id, study_id and body are required")
        self.get(self.studies, body["study_id"], "study")
        if not any(s["participant_id"] == body["recipient_id"] and s["study_id"] == body["study_id"]
                   for s in self.submissions.values()):
            raise ApiError(400, f"participant {body['recipient_id']} took no part in study {body['study_id']}")
        self.messages.append({"recipient_id": body["recipient_id"], "study_id": body["study_id"],
                              "body": body["body"], "sent_at": now_text()})

    def api_demographic_export(self, sid, query, body):
        """The study's submissions with each participant's demographics (``demographics``, set by a test;
        unknown fields ``DATA_EXPIRED``), as CSV."""
        self.get(self.studies, sid, "study")
        out = io.StringIO()
        writer = csv.writer(out)
        writer.writerow(DEMOGRAPHIC_COLUMNS)
        for sub in (s for s in self.submissions.values() if s["study_id"] == sid):
            known = self.demographics.get(sub["participant_id"], {})
            record = {"Submission id": sub["id"], "Participant id": sub["participant_id"], "Status": sub["status"],
                      "Started at": sub["started_at"], "Completed at": sub["completed_at"] or "",
                      "Completion code": sub["study_code"] or ""}
            writer.writerow([record.get(c, known.get(c, EXPIRED)) for c in DEMOGRAPHIC_COLUMNS])
        return Reply(out.getvalue(), {"Content-Type": "text/csv"})
