"""dialeval judge_agreement: a judge's answers against the humans' on the same items (docs/judge.md)."""
from __future__ import annotations

from pathlib import Path

from parlai.core.params import ParlaiParser
from parlai.core.script import ParlaiScript, register_script

from parlai_dialeval.errors import DialevalError


@register_script("judge_agreement")
class JudgeAgreement(ParlaiScript):
    @classmethod
    def setup_args(cls):
        from parlai_dialeval.scripts.command_line import output_folder

        parser = ParlaiParser(False, False, "Judge-human agreement next to human-human agreement on the same items")
        group = parser.add_argument_group("Input and output")
        group.add_argument("--judge", nargs="+", required=True, metavar="F.jsonl",
                           help="dialeval judge output (records with worker_id judge:<name>)")
        group.add_argument("--human", nargs="+", required=True, metavar="PATH",
                           help="the human data the judge was asked on (canonical or any importable source)")
        group.add_argument("--from", dest="data_format", default=None, metavar="FORMAT",
                           help="force the human data's format (detected when omitted)")
        group.add_argument("--out", required=True, metavar="DIR", type=output_folder, help="output folder")
        return parser

    def run(self):
        from parlai_dialeval.data.dataset import read_jsonl
        from parlai_dialeval.importers import load
        from parlai_dialeval.judge import agreement as ag
        from parlai_dialeval.scripts.command_line import write_csv, write_json

        opt = self.opt
        judge = read_jsonl(opt["judge"])
        human = load(opt["human"], fmt=opt["data_format"], log=print)
        out = Path(opt["out"])
        tables = {}
        if not judge.comparisons.empty:
            matched = ag.match_comparisons(judge.comparisons, human.comparisons)
            tables["pairwise_agreement"] = ag.pairwise_agreement(matched)
            tables["position_bias"] = ag.position_bias(judge.comparisons)
            tables["pairwise_rankings"] = ag.pairwise_rankings(matched)
        if not judge.ratings.empty:
            units = ag.match_ratings(judge.ratings, human.ratings)
            tables["rating_agreement"] = ag.rating_agreement(units)
            tables["rating_rankings"] = ag.rating_rankings(units)
        if not tables:
            raise DialevalError(f"no judge comparisons or ratings in {', '.join(opt['judge'])}")
        for name, frame in tables.items():
            write_csv(frame, out / f"{name}.csv")
        write_json({name: frame.to_dict(orient="records") for name, frame in tables.items()}, out / "summary.json")
        report_path = _report(tables, out, opt)
        print(f"wrote {', '.join(f'{n}.csv' for n in tables)}, summary.json and {report_path.name} to {out}")
        return tables


def _report(tables: dict, out: Path, opt) -> Path:
    import matplotlib.pyplot as plt

    from parlai_dialeval.report import Report

    report = Report("Judge against humans", out)
    report.text(f"Judge: {', '.join(opt['judge'])}. Humans: {', '.join(opt['human'])}. Every figure is on the "
                "items both answered; human-human agreement is on the same items (docs/judge.md).", note=True)
    if "pairwise_agreement" in tables:
        agreement = tables["pairwise_agreement"]
        report.heading("Pairwise agreement")
        report.table(agreement, "Share of agreeing (judge, human vote) and (human, human) pairs, with and without ties")
        labels = agreement["protocol"] + "/" + agreement["criterion"]
        fig, ax = plt.subplots(figsize=(max(4, 1.4 * len(agreement)), 3))
        x = range(len(agreement))
        ax.bar([i - 0.2 for i in x], agreement["judge_human"], 0.4, label="judge-human")
        ax.bar([i + 0.2 for i in x], agreement["human_human"], 0.4, label="human-human")
        ax.set_xticks(list(x), labels, rotation=30, ha="right")
        ax.set_ylabel("agreement")
        ax.legend()
        report.figure(fig, "pairwise_agreement", "Agreement with ties, judge-human next to human-human")
        report.heading("Position bias")
        report.table(tables["position_bias"], "Answers by position over both orders; first_share 0.5 = no bias")
        ranks = tables["pairwise_rankings"]
        report.heading("System rankings")
        report.table(ranks[ranks["rank_differs"]], "Systems the judge ranks differently from the humans",
                     empty="The judge ranks every system as the humans do.")
        report.table(ranks, "Win rates (wins + half the ties) by judge and humans")
    if "rating_agreement" in tables:
        report.heading("Ratings")
        report.table(tables["rating_agreement"], "Spearman at item and system level, quadratic-weighted kappa")
        ranks = tables["rating_rankings"]
        report.table(ranks[ranks["rank_differs"]], "Systems the judge ranks differently from the humans",
                     empty="The judge ranks every system as the humans do.")
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
