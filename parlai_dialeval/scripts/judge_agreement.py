"""dialeval judge_agreement: a judge's answers against the humans' on the same items (docs/judge.md)."""
from __future__ import annotations

from pathlib import Path

from parlai.core.params import ParlaiParser
from parlai.core.script import ParlaiScript, register_script

from parlai_dialeval.errors import DialevalError
from parlai_dialeval.options import checked


@register_script("judge_agreement")
class JudgeAgreement(ParlaiScript):
    @classmethod
    def setup_args(cls):
        from parlai_dialeval.scripts.command_line import add_unverified_arg, output_folder

        parser = ParlaiParser(False, False, "Judge-human agreement next to human-human agreement on the same items")
        group = parser.add_argument_group("Input and output")
        group.add_argument("--judge", nargs="+", required=True, metavar="F.jsonl",
                           help="dialeval judge output (records with worker_id judge:<name>)")
        group.add_argument("--human", nargs="+", required=True, metavar="PATH",
                           help="the human data the judge was asked on (canonical or any importable source)")
        add_unverified_arg(group)
        group.add_argument("--from", dest="data_format", default=None, metavar="FORMAT",
                           help="force the human data's format (detected when omitted)")
        group.add_argument("--out", required=True, metavar="DIR", type=output_folder, help="output folder")
        group.add_argument("--rescale", choices=("linear",), default=None,
                           help="a judge that rated on another scale than the humans is refused unless this says "
                                "how to map its values (linear: its lowest and highest points onto theirs)")
        group.add_argument("--seed", type=checked("--seed", "non_negative_int"), default=0,
                           help="seed of the bootstrap intervals (>= 0)")
        return parser

    def run(self):
        import pandas as pd

        from parlai_dialeval.data.dataset import read_jsonl
        from parlai_dialeval.judge import agreement as ag
        from parlai_dialeval.scripts.command_line import load_data, write_csv, write_json

        opt = self.opt
        judge = read_jsonl(opt["judge"])
        ag.require_meta(judge, ", ".join(opt["judge"]))
        human = load_data(opt, key="human")
        out = Path(opt["out"])
        runs = judge_summaries(opt["judge"])
        answered = {}
        for run in runs:
            asked, readable = answered.get(run["protocol"], (0, 0))
            answered[run["protocol"]] = (asked + run["items"], readable + run["answered"])
        tables, warnings = {}, []
        if not judge.comparisons.empty:
            matched = ag.match_comparisons(judge.comparisons, human.comparisons)
            tables["pairwise_agreement"] = ag.pairwise_agreement(matched)
            tables["pairwise_intervals"] = ag.pairwise_intervals(matched, opt["seed"])
            tables["position_bias"] = ag.position_bias(judge.comparisons)
            tables["pairwise_rankings"] = ag.pairwise_rankings(matched)
            verdicts = [ag.verdicts(tables["pairwise_agreement"], tables["pairwise_intervals"],
                                    tables["position_bias"], answered)]
        else:
            verdicts = []
        if not judge.ratings.empty:
            ratings, warnings = ag.check_scales(judge.ratings, human.ratings, opt["rescale"])
            for warning in warnings:
                print(f"warning: {warning}")
            units = ag.match_ratings(ratings, human.ratings)
            tables["rating_agreement"] = ag.rating_agreement(units)
            tables["rating_intervals"] = ag.rating_intervals(units, opt["seed"])
            tables["rating_rankings"] = ag.rating_rankings(units)
            verdicts.append(ag.verdicts(tables["rating_agreement"], tables["rating_intervals"], None, answered))
        if not tables:
            raise DialevalError(f"no judge comparisons or ratings in {', '.join(opt['judge'])}")
        tables = {"verdicts": pd.concat(verdicts, ignore_index=True), **tables}
        for name, frame in tables.items():
            write_csv(frame, out / f"{name}.csv")
        write_json({**{name: frame.to_dict(orient="records") for name, frame in tables.items()},
                    "rule": ag.RULE, "judge_runs": runs, "scale_warnings": warnings}, out / "summary.json")
        report_path = _report(tables, runs, warnings, out, opt)
        for row in tables["verdicts"].itertuples():
            print(f"{row.protocol} / {row.criterion}: {row.verdict} ({row.because})")
        print(f"wrote {', '.join(f'{n}.csv' for n in tables)}, summary.json and {report_path.name} to {out}")
        return tables


def judge_summaries(paths: list[str]) -> list[dict]:
    """What ``dialeval judge`` wrote next to each output (F.summary.json): items asked, answered, and
    why the others have no answer; a file without one counts as unknown."""
    import json

    runs = []
    for path in paths:
        summary = Path(path).with_suffix(".summary.json")
        if summary.is_file():
            data = json.loads(summary.read_text(encoding="utf-8"))
            runs.append({"file": str(path), "protocol": data.get("protocol"), "items": int(data.get("items", 0)),
                         "answered": int(data.get("answered", 0)), "unanswered": int(data.get("unanswered", 0)),
                         "bad_replies": data.get("bad_replies") or {},
                         "items_not_asked": data.get("items_without_context") or {}})
    return runs


def _report(tables: dict, runs: list[dict], warnings: list[str], out: Path, opt) -> Path:
    import matplotlib.pyplot as plt
    import pandas as pd

    from parlai_dialeval.judge.agreement import RULE
    from parlai_dialeval.report import Report

    report = Report("Judge against humans", out)
    report.heading("Verdict")
    for row in tables["verdicts"].itertuples():
        report.text(f"{row.protocol} / {row.criterion}: {row.verdict} ({row.because}).")
    report.text(RULE, note=True)
    for warning in warnings:
        report.warn(warning)
    report.text(f"Judge: {', '.join(opt['judge'])}. Humans: {', '.join(opt['human'])}. Every figure is on the "
                "items both answered; human-human agreement is on the same items (docs/judge.md).", note=True)
    report.heading("Items the judge left without an answer")
    if runs:
        report.table(pd.DataFrame([{"file": r["file"], "protocol": r["protocol"], "items asked": r["items"],
                                    "answered": r["answered"], "unanswered": r["unanswered"],
                                    "unreadable replies": ", ".join(f"{k}: {v}" for k, v in r["bad_replies"].items())
                                    or "none",
                                    "items not asked": ", ".join(f"{k}: {v}" for k, v in r["items_not_asked"].items())
                                    or "none"} for r in runs]),
                     "Unanswered items are left out of every figure below (nothing is guessed)")
    else:
        unknown = ("No judge summary (F.summary.json next to the judge output) was found: how many items the "
                   "judge left unanswered is unknown.")
        report.warn(unknown)
        report.text(unknown)  # under its heading too, which stays empty otherwise
    if "pairwise_agreement" in tables:
        agreement = tables["pairwise_agreement"].merge(tables["pairwise_intervals"], on=["protocol", "criterion"])
        report.heading("Pairwise agreement")
        report.table(agreement, "Share of agreeing (judge, human vote) and (human, human) pairs, with and without "
                                "ties; 95% bootstrap intervals with items resampled (low/high)")
        labels = agreement["protocol"] + "/" + agreement["criterion"]
        fig, ax = plt.subplots(figsize=(max(4, 1.4 * len(agreement)), 3))
        x = range(len(agreement))
        for shift, who in ((-0.2, "judge_human"), (0.2, "human_human")):
            errors = [agreement[who] - agreement[f"{who}_low"], agreement[f"{who}_high"] - agreement[who]]
            ax.bar([i + shift for i in x], agreement[who], 0.4, yerr=errors, capsize=3, label=who.replace("_", "-"))
        ax.set_xticks(list(x), labels, rotation=30, ha="right")
        ax.set_ylabel("agreement")
        ax.legend()
        report.figure(fig, "pairwise_agreement", "Agreement with ties, judge-human next to human-human (95% intervals)")
        report.heading("Position bias")
        report.table(tables["position_bias"], "Answers by position over both orders; first_share 0.5 = no bias")
        _rankings(report, tables["pairwise_rankings"], "Win rates (wins + half the ties) by judge and humans")
    if "rating_agreement" in tables:
        report.heading("Ratings")
        report.table(tables["rating_agreement"].merge(tables["rating_intervals"], on=["protocol", "criterion"]),
                     "Spearman at item and system level, quadratic-weighted kappa; 95% bootstrap intervals (items "
                     "resampled) of judge vs the other raters' mean and of the first rater vs that mean")
        ranks = tables["rating_rankings"]
        _rankings(report, ranks, "System means by judge and humans")
        for (protocol, criterion), group in ranks.groupby(["protocol", "criterion"]):
            fig, ax = plt.subplots(figsize=(3.5, 3.5))
            ax.scatter(group["human_mean"], group["judge_mean"])
            for row in group.itertuples():
                ax.annotate(str(row.model), (row.human_mean, row.judge_mean), fontsize=7)
            ax.set_xlabel("human mean")
            ax.set_ylabel("judge mean")
            report.figure(fig, f"systems_{protocol}_{criterion}".replace("/", "_"),
                          f"{protocol} / {criterion}: system means")
    for name in tables:
        report.file(f"{name}.csv")
    return report.write()


def _rankings(report, ranks, caption: str) -> None:
    """The ranking table once, with a line naming the systems ranked differently."""
    differ = sorted(map(str, ranks.loc[ranks["rank_differs"], "model"])) if not ranks.empty else []
    report.text(f"The judge ranks {', '.join(differ)} differently from the humans (rank_differs)." if differ
                else "The judge ranks every system as the humans do.")
    report.table(ranks, caption)
