"""dialeval review TASK_NAME: the Prolific submissions of a task, with QC results and suggested
decisions; approve, reject, bonus, block and message (docs/crowdsourcing.md, "Run your study on Prolific")."""
from __future__ import annotations

from parlai.core.params import ParlaiParser
from parlai.core.script import ParlaiScript, register_script

from parlai_dialeval.scripts.command_line import add_mephisto_data_arg


@register_script("review")
class Review(ParlaiScript):
    @classmethod
    def setup_args(cls):
        parser = ParlaiParser(False, False, "List the Prolific submissions of TASK_NAME (Prolific's status, "
                              "Mephisto's, the worker's quality-control result, bonuses paid, a suggested decision) "
                              "and act on them. Every decision is written to the ledger (prolific/prolific.db in the "
                              "Mephisto data directory) before Prolific is called, so nothing is paid twice.")
        parser.add_argument("task_name", help="the Mephisto task name (mephisto.task.task_name of the launch)")
        add_mephisto_data_arg(parser)
        parser.add_argument("--approve-passing", action="store_true",
                            help="approve every submission awaiting review whose suggestion is 'approve' (finished "
                                 "in Mephisto and not failing the task's quality control)")
        parser.add_argument("--reject", default=None, metavar="WORKER",
                            help="reject this participant's submission (needs --message and --category)")
        parser.add_argument("--message", nargs="+", default=None, metavar="TEXT",
                            help="with --reject: the reason shown to the participant, at least 100 characters; "
                                 "alone, `--message WORKER TEXT` sends TEXT to that participant on Prolific (once: "
                                 "the same text to the same participant is never sent twice)")
        parser.add_argument("--category", default=None,
                            help="with --reject: Prolific's rejection category: TOO_QUICKLY, TOO_SLOWLY, "
                                 "FAILED_INSTRUCTIONS, INCOMP_LONGITUDINAL, FAILED_CHECK, LOW_EFFORT, MALINGERING, "
                                 "NO_CODE, BAD_CODE, NO_DATA, UNSUPP_DEVICE or OTHER")
        parser.add_argument("--bonus", nargs=2, default=None, metavar=("WORKER", "AMOUNT"),
                            help="pay this participant a bonus of AMOUNT in the study's currency, major units "
                                 "(0.50 = 50 pence); needs --reason; paid once per submission and reason")
        parser.add_argument("--bonus-unpaid", type=int, default=None, metavar="DECISION",
                            help="a bonus shown as 'pending: check on Prolific' (Prolific failed while paying it, so "
                                 "it may or may not be paid): you checked on app.prolific.com that it was NOT paid; "
                                 "send it again (refused if Prolific's records now show it paid)")
        parser.add_argument("--reason", default=None,
                            help="with --bonus: why (the participant sees it); with --block: a note for the ledger")
        parser.add_argument("--block", default=None, metavar="WORKER",
                            help="block this participant from every later study (the workspace's block group, "
                                 "mephisto.provider.block_group)")
        return parser

    def run(self):
        from parlai_dialeval.crowdsourcing.platform.env import database_path, prepare_mephisto
        from parlai_dialeval.errors import DialevalError

        opt = self.opt
        message = opt["message"] or []
        if opt["reject"] and not (len(message) == 1 and opt["category"]):
            raise DialevalError("--reject needs --message (one text of 100+ characters, quoted) and --category")
        if message and not opt["reject"] and len(message) != 2:
            raise DialevalError("--message WORKER TEXT: the participant and the text (quoted), or with --reject the "
                                f"reason alone (got {len(message)} values)")
        if opt["bonus"] and not opt["reason"]:
            raise DialevalError("--bonus needs --reason")
        data_dir = prepare_mephisto(opt["mephisto_data"])
        if not database_path(data_dir).is_file():
            raise DialevalError(f"no Mephisto database at {database_path(data_dir)}; give --mephisto-data")
        from mephisto.abstractions.databases.local_database import LocalMephistoDB

        from parlai_dialeval.crowdsourcing.platform.quality import review_qc
        from parlai_dialeval.providers.prolific import bonus, review

        db = LocalMephistoDB(database_path=str(database_path(data_dir)))
        table, note = review.review_table(db, opt["task_name"], *review_qc(opt["task_name"], data_dir))
        done = []
        if opt["reject"]:
            review.reject(db, review.agent_of(db, table, opt["reject"], "--reject"), message[0], opt["category"])
            done.append(f"rejected {opt['reject']} ({opt['category']})")
        elif message:
            done.append(review.send_message(db, review.agent_of(db, table, message[0], "--message"), message[1]))
        if opt["bonus"]:
            worker, amount = opt["bonus"]
            done.append(bonus.pay(db, review.agent_of(db, table, worker, "--bonus"), amount, opt["reason"]))
        if opt["bonus_unpaid"] is not None:
            done.append(bonus.repay(db, opt["bonus_unpaid"]))
        if opt["block"]:
            review.block(db, opt["block"], opt["reason"] or "blocked with dialeval review")
            done.append(f"blocked {opt['block']} from later studies")
        if opt["approve_passing"]:
            for row in table[table["suggestion"] == "approve"].itertuples():
                review.approve(db, review.agent_of(db, table, row.participant, "--approve-passing"))
                done.append(f"approved {row.participant}")
        if done:
            table, note = review.review_table(db, opt["task_name"], *review_qc(opt["task_name"], data_dir))
        print(table.drop(columns=["agent_id"]).to_string(index=False) if len(table) else "no submissions yet")
        if note:
            print(f"quality control: n/a ({note})")
        from parlai_dialeval.crowdsourcing.platform.quality import attention_failures

        for worker, failed in attention_failures(opt["task_name"], data_dir).items():
            # the one failure Prolific's attention-check policy accepts as grounds for a rejection
            print(f"{worker}: failed {failed['failed']} of {failed['items']} attention checks, grounds for a rejection "
                  f"under Prolific's policy: dialeval review {opt['task_name']} --reject {worker} --category "
                  f"{failed['category']} --message \"{failed['message']}\"")
        for line in done:
            print(line)
        return table
