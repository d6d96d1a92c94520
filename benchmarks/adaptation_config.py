"""The adaptation benchmark's run configuration: the rows and seeds asked for, the budget every row shares, and the
job queue they make (``adaptation.py`` runs it, ``adaptation_report.py`` reads the finished jobs by it)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from benchmarks.adaptation_domains import Sizes
from benchmarks.adaptation_rows import ROWS, Row
from benchmarks.harness import RESULTS

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
