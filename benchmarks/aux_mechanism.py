"""When does InfoCSE's auxiliary MLM matter? The decoder's learning settings, the loss weight, and every objective.

    HF_HUB_OFFLINE=1 python -m benchmarks.aux_mechanism run --workers 6    # one queue, several processes
    HF_HUB_OFFLINE=1 python -m benchmarks.aux_mechanism report             # JSON, markdown, PNGs, README block
    HF_HUB_OFFLINE=1 python -m benchmarks.aux_mechanism restore            # a new checkout: committed rows to the cache
    HF_HUB_OFFLINE=1 python -m benchmarks.aux_mechanism plot               # the PNGs again, from the committed JSON

The setting of ``benchmarks/long_budget.py`` (all-MiniLM-L6-v2 with CLS pooling, 200 steps of 64 Wikipedia sentences,
max length 32, lr 3e-5 with linear decay, joint gradient clipping at 1.0, STS-B dev and the h-shuffle diagnostic
every ``--eval-steps`` with the frozen probe decoder and the row's own decoder), with more rows:

- the table: SimCSE, InfoCSE as released, InfoCSE with lambda 0 (its BatchNorm head alone, paper 000 Table 5's
  "w/o MLM loss"), CMLM-CSE and InforMin-CL under their defaults, ``--seeds`` each;
- the decoder's learning: the auxiliary modules at their own learning rate (``learning_rate_mapping``), the
  unweighted decoder gradient (``InfoCSELoss(aux_gradient="full")``), a decoder started from stage 1
  (``AuxiliaryPretrainingLoss`` run at a constant learning rate while its held-out accuracy is logged, to see it
  plateau) and a decoder first trained alone on the frozen untrained encoder (a trained copy of the probe decoder;
  the probe itself stays frozen), and a longer budget;
- the weight: lambda 1e-5 ... 1 with a decoder that reads ``h``.

Every InfoCSE-like row also logs, at step 0 and after training, the ratio of the MLM term's gradient norm to the
contrastive term's at the encoder's parameters (mean over ``--ratio-batches`` batches, model in training mode).
Finished jobs are JSON files under ``--work-dir``; a repeated command resumes. ``--device cuda`` runs on a GPU (fp32,
TF32 off); ``--model`` takes another copy of all-MiniLM-L6-v2 than the wheel's (or ``$ST_INFOCSE_MINILM``). The
report is in ``aux_mechanism_report.py``, the plots in ``aux_mechanism_plot.py``.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import platform
import statistics
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("HF_DATASETS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

import torch
from sentence_transformers import SentenceTransformer
from sentence_transformers.sentence_transformer.evaluation import SequentialEvaluator

from benchmarks.aux_mechanism_plot import plot  # noqa: E402
from benchmarks.harness import (  # noqa: E402
    README,
    REPO,
    RESULTS,
    SHARED,
    load_pooled_model,
    update_block,
)
from benchmarks.long_budget import HELD_OUT  # noqa: E402
from benchmarks.long_budget import Bench as LongBudgetBench  # noqa: E402
from benchmarks.runner import Worker  # noqa: E402
from st_infocse import losses  # noqa: E402
from st_infocse.modeling import AuxiliaryDecoder  # noqa: E402
from st_infocse.training import learning_rate_mapping  # noqa: E402

# Sentences for the gradient-ratio batches: after the held-out diagnostic sentences, used by nothing else.
RATIO_SENTENCES = (HELD_OUT[1], HELD_OUT[1] + 512)
TASKS = ["STS12", "STS13", "STS14", "STS15", "STS16", "STS-B", "SICK-R"]


@dataclass(frozen=True)
class Setting:
    description: str
    objective: str  # simcse | infocse | cmlm-cse | informin
    group: str  # table | decoder | weight
    lambda_: float | None = None
    aux_lr: float | None = None
    aux_gradient: str = "weighted"
    decoder: str | None = None  # None (fresh) | "probe" (a trained copy of the probe decoder) | "stage1"
    steps_factor: int = 1


def _lambda_label(value: float) -> str:
    return f"{value:g}"


SETTINGS: dict[str, Setting] = {
    "simcse": Setting("SimCSELoss (defaults: MLP head at training only)", "simcse", "table"),
    "infocse": Setting("InfoCSELoss (defaults: the released script's setting)", "infocse", "table"),
    "infocse-lambda0": Setting("InfoCSELoss(lambda_=0): the BatchNorm head alone, no MLM (paper 000 Table 5)",
                               "infocse", "table", lambda_=0.0),
    "cmlm-cse": Setting("CMLMCSELoss (defaults: paper 003)", "cmlm-cse", "table"),
    "informin": Setting("InforMinReconstructionLoss (defaults: lambda 0.4, paper 001)", "informin", "table"),
    # The decoder's learning (lambda 1e-5 as released).
    "infocse-auxlr1e-4": Setting("InfoCSE, aux lr 1e-4", "infocse", "decoder", aux_lr=1e-4),
    "infocse-auxlr1e-3": Setting("InfoCSE, aux lr 1e-3", "infocse", "decoder", aux_lr=1e-3),
    "infocse-full-auxlr1e-4": Setting("InfoCSE, full decoder gradient, aux lr 1e-4", "infocse", "decoder",
                                      aux_lr=1e-4, aux_gradient="full"),
    "infocse-full-auxlr1e-3": Setting("InfoCSE, full decoder gradient, aux lr 1e-3", "infocse", "decoder",
                                      aux_lr=1e-3, aux_gradient="full"),
    "infocse-full-auxlr1e-3-long": Setting("InfoCSE, full decoder gradient, aux lr 1e-3, 5x steps", "infocse",
                                           "decoder", aux_lr=1e-3, aux_gradient="full", steps_factor=5),
    "infocse-stage1": Setting("InfoCSE after stage 1 (encoder and decoder), defaults", "infocse", "decoder",
                              decoder="stage1"),
    "infocse-stage1-full-auxlr1e-4": Setting("InfoCSE after stage 1, full decoder gradient, aux lr 1e-4",
                                             "infocse", "decoder", aux_lr=1e-4, aux_gradient="full",
                                             decoder="stage1"),
    "infocse-probe": Setting("InfoCSE, decoder trained alone first (the probe's), defaults", "infocse", "decoder",
                             decoder="probe"),
    "infocse-probe-full-auxlr1e-4": Setting(
        "InfoCSE, decoder trained alone first, full gradient, aux lr 1e-4", "infocse", "decoder", aux_lr=1e-4,
        aux_gradient="full", decoder="probe"),
    "infocse-probe-full-auxlr1e-4-long": Setting(
        "InfoCSE, decoder trained alone first, full gradient, aux lr 1e-4, 5x steps", "infocse", "decoder",
        aux_lr=1e-4, aux_gradient="full", decoder="probe", steps_factor=5),
}
# The weight, with the decoder trained alone first and its full gradient at aux lr 1e-4 (lambda 1e-5 is the row
# infocse-probe-full-auxlr1e-4 above).
for _value in (1e-3, 1e-1, 1.0):
    SETTINGS[f"weight-{_lambda_label(_value)}"] = Setting(
        f"InfoCSE, decoder trained alone first, full gradient, aux lr 1e-4, lambda {_lambda_label(_value)}",
        "infocse", "weight", lambda_=_value, aux_lr=1e-4, aux_gradient="full", decoder="probe")
GROUPS = {name: setting.group for name, setting in SETTINGS.items()}  # what the plots colour and place


@dataclass
class Config:
    steps: int
    stage1_steps: int
    stage1_lr: float
    stage1_eval_steps: int
    probe_steps: int
    probe_lr: float
    eval_steps: int
    batch_size: int
    max_length: int
    eval_max_length: int
    learning_rate: float
    seeds: list[int]
    mechanism_seeds: list[int]
    weight_seeds: list[int]
    ratio_batches: int
    settings: list[str]
    sentences: Path
    senteval: Path
    work_dir: Path
    model: str | None
    device: str
    threads: int
    smoke: bool = False

    def jobs(self) -> list[str]:
        jobs = ["probe"]
        if any(SETTINGS[name].decoder == "stage1" for name in self.settings):
            jobs.append("stage1")
        for name in self.settings:
            group = SETTINGS[name].group
            seeds = {"table": self.seeds, "decoder": self.mechanism_seeds, "weight": self.weight_seeds}[group]
            jobs += [f"{name}-s{seed}" for seed in seeds]
        return jobs


@dataclass
class Row:
    job: str
    setting: str
    seed: int
    description: str
    steps: int
    train_seconds: float = 0.0
    curve: list[dict[str, Any]] = field(default_factory=list)
    log_history: list[dict[str, Any]] = field(default_factory=list)
    gradient_ratio: dict[str, dict[str, float]] = field(default_factory=dict)
    sts: dict[str, float] = field(default_factory=dict)
    sts_avg: float | None = None
    stsb_dev: float | None = None
    eval_seconds: float = 0.0


def gradient_ratio(model: SentenceTransformer, loss: torch.nn.Module, texts: list[str], batch_size: int,
                   batches: int) -> dict[str, float]:
    """Norms of the contrastive and the weighted MLM term's gradients at the encoder's parameters, and their ratio.

    The model trains as it does in a step (dropout on); the loss's MLM metrics are left as they were found.
    """
    params = [p for p in model.parameters() if p.requires_grad]
    device = params[0].device
    was_training = model.training
    model.train()
    cl, mlm = [], []
    for index in range(batches):
        chunk = texts[index * batch_size:(index + 1) * batch_size]
        features = {k: v.to(device) for k, v in model.preprocess(chunk).items() if isinstance(v, torch.Tensor)}
        terms = loss([features])
        grads_cl = torch.autograd.grad(terms["contrastive"], params, retain_graph=True, allow_unused=True)
        grads_mlm = torch.autograd.grad(terms["cmlm"], params, allow_unused=True)
        for store, grads in ((cl, grads_cl), (mlm, grads_mlm)):
            norms = [torch.linalg.vector_norm(g.float()) for g in grads if g is not None]
            store.append(float(torch.linalg.vector_norm(torch.stack(norms))) if norms else 0.0)
    loss.cmlm.metrics.pop()  # drop the MLM sums this measurement added
    model.train(was_training)
    ratios = [m / c for m, c in zip(mlm, cl, strict=True) if c > 0]
    return {"contrastive_norm": statistics.mean(cl), "mlm_norm": statistics.mean(mlm),
            "ratio": statistics.mean(ratios) if ratios else float("nan")}


class Bench(LongBudgetBench):
    """long_budget.py's queue and data (claims, held-out sentences, STS-B dev, the diagnostic), with this benchmark's
    settings; a row that needs the probe or stage 1 runs it itself when no worker has claimed it."""

    # A prerequisite nobody has claimed is run here rather than waited for forever; a failed row leaves the others.
    keep_going = True
    run_prerequisites = True
    poll = 5.0

    def run(self) -> list[str]:
        return Worker.run(self)  # no core lending: every worker keeps its threads

    # --------------------------------------------------------------------------------------------- data

    def load_model(self, path: str | None = None) -> SentenceTransformer:
        if path is not None:
            model = SentenceTransformer(path, device=self.cfg.device)
        else:
            model = load_pooled_model("cls", self.cfg.max_length, self.cfg.model, self.cfg.device)
        model.max_seq_length = self.cfg.max_length
        return model

    # --------------------------------------------------------------------------------------------- jobs

    def stage1(self) -> None:
        """Stage 1 at a constant learning rate, its held-out auxiliary MLM accuracy logged to see where it flattens."""
        model = self.load_model()
        torch.manual_seed(0)
        loss = losses.AuxiliaryPretrainingLoss(model)
        evaluator = self.diagnostic(loss, "stage1")
        curve: list[dict[str, Any]] = [{"step": 0} | {f"eval_{k}": v for k, v in evaluator(model).items()}]
        seconds, history = self.train(model, loss, self.dataset(self.cfg.stage1_steps), 0, self.cfg.stage1_steps,
                                      self.cfg.stage1_lr, evaluator, curve, eval_steps=self.cfg.stage1_eval_steps,
                                      scheduler="constant")
        folder = self.cfg.work_dir / "stage1_output"
        model.save(str(folder / "model"))
        loss.save_decoder(folder / "decoder")
        self.store("stage1", {"train_seconds": seconds, "curve": curve, "log_history": history,
                              "config": loss.get_config_dict()})

    def build_loss(self, setting: Setting, model: SentenceTransformer) -> torch.nn.Module:
        if setting.objective == "simcse":
            return losses.SimCSELoss(model)
        if setting.objective == "informin":
            return losses.InforMinReconstructionLoss(model)
        decoder = None
        if setting.decoder == "stage1":
            decoder = str(self.cfg.work_dir / "stage1_output" / "decoder")
        elif setting.decoder == "probe":
            decoder = str(self.cfg.work_dir / "probe_decoder")
        cls = losses.CMLMCSELoss if setting.objective == "cmlm-cse" else losses.InfoCSELoss
        return cls(model, lambda_=setting.lambda_, decoder=decoder, aux_gradient=setting.aux_gradient)

    def row(self, job: str, name: str, seed: int) -> None:
        setting = SETTINGS[name]
        if setting.decoder:
            self.wait_for(setting.decoder)
        # A row that does not start from the probe's decoder does not wait for it; it is scored by the probe if the
        # probe is done when the row starts.
        probe = (AuxiliaryDecoder.from_pretrained(self.cfg.work_dir / "probe_decoder")
                 if self.result_path("probe").exists() else None)
        if setting.decoder == "stage1":
            model = self.load_model(str(self.cfg.work_dir / "stage1_output" / "model"))
        else:
            model = self.load_model()
        torch.manual_seed(seed)
        loss = self.build_loss(setting, model)
        evaluators: list[Any] = [self.dev()] + ([self.diagnostic(probe, "probe")] if probe is not None else [])
        has_mlm = getattr(loss, "lambda_", 0) and hasattr(loss, "cmlm")
        if has_mlm:
            evaluators.append(self.diagnostic(loss, "live"))
        evaluator = SequentialEvaluator(evaluators)
        steps = self.cfg.steps * setting.steps_factor
        row = Row(job, name, seed, setting.description, steps)
        ratio_texts = self.sentences(*RATIO_SENTENCES)
        if has_mlm:
            row.gradient_ratio["start"] = gradient_ratio(model, loss, ratio_texts, self.cfg.batch_size,
                                                         self.cfg.ratio_batches)
        row.curve.append({"step": 0} | {f"eval_{k}": float(v) for k, v in evaluator(model).items()})
        mapping = learning_rate_mapping(loss, setting.aux_lr) or None
        row.train_seconds, row.log_history = self.train(model, loss, self.dataset(steps), seed, steps,
                                                        self.cfg.learning_rate, evaluator, row.curve,
                                                        learning_rate_mapping=mapping)
        if has_mlm:
            row.gradient_ratio["end"] = gradient_ratio(model, loss, ratio_texts, self.cfg.batch_size,
                                                       self.cfg.ratio_batches)
        self.finish(job, row, model)

    def record(self, job: str) -> dict[str, Any]:
        return super().record(job) | {"device": self.cfg.device, "device_name": device_name(self.cfg.device)}


def device_name(device: str) -> str:
    if device.startswith("cuda") and torch.cuda.is_available():
        return torch.cuda.get_device_name(0)
    return platform.processor() or platform.machine()


def worker(cfg: Config) -> None:
    torch.set_num_threads(cfg.threads)
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    Bench(cfg).run()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("part", choices=["run", "report", "restore", "plot"],
                        help="run the queue; report the finished jobs; restore committed rows into the cache; plot: "
                        "the PNGs again from the committed results/<stem>.json (no data, no training)")
    parser.add_argument("--workers", type=int, default=1, help="processes sharing the queue")
    parser.add_argument("--steps", type=int, default=200)
    parser.add_argument("--stage1-steps", type=int, default=2000)
    parser.add_argument("--stage1-lr", type=float, default=1e-4, help="Condenser's pre-training learning rate")
    parser.add_argument("--stage1-eval-steps", type=int, default=100)
    parser.add_argument("--probe-steps", type=int, default=150)
    parser.add_argument("--probe-lr", type=float, default=5e-4)
    parser.add_argument("--eval-steps", type=int, default=50)
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--max-length", type=int, default=32)
    parser.add_argument("--eval-max-length", type=int, default=128)
    parser.add_argument("--learning-rate", type=float, default=3e-5)
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2], help="seeds of the table's rows")
    parser.add_argument("--mechanism-seeds", type=int, nargs="+", default=[0])
    parser.add_argument("--weight-seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--ratio-batches", type=int, default=4)
    parser.add_argument("--settings", nargs="+", default=list(SETTINGS), choices=list(SETTINGS))
    parser.add_argument("--sentences", type=Path, default=SHARED / "sentences/enwiki_wikiextractor_sentences.txt.gz")
    parser.add_argument("--senteval", type=Path, default=SHARED / "senteval")
    parser.add_argument("--model", default=None, help="all-MiniLM-L6-v2 folder (default: the wheel's)")
    parser.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--smoke", action="store_true", help="skip the final STS suite (a quick check of the script)")
    parser.add_argument("--work-dir", type=Path, default=REPO / "benchmarks/work/aux_mechanism")
    parser.add_argument("--stem", default="aux_mechanism", help="name of the result files and README block")
    ns = parser.parse_args()
    if ns.part == "plot":
        plot(json.loads((RESULTS / f"{ns.stem}.json").read_text())["jobs"], GROUPS, RESULTS / f"{ns.stem}_gain.png",
             RESULTS / f"{ns.stem}_stage1.png")
        return
    cfg = Config(**{k: v for k, v in vars(ns).items() if k not in ("part", "workers", "stem")})
    cfg.work_dir.mkdir(parents=True, exist_ok=True)
    if ns.part == "run":
        if ns.workers == 1:
            worker(cfg)
            return
        context = multiprocessing.get_context("spawn")
        processes = [context.Process(target=worker, args=(cfg,)) for _ in range(ns.workers)]
        for process in processes:
            process.start()
            time.sleep(2)
        for process in processes:
            process.join()
        failed = [p.exitcode for p in processes if p.exitcode]
        if failed:
            raise SystemExit(f"{len(failed)} worker(s) failed")
    elif ns.part == "restore":
        from benchmarks.aux_mechanism_report import restore

        print(f"restored {restore(cfg, ns.stem)} rows into {cfg.work_dir / 'done'}")
    else:
        from benchmarks.aux_mechanism_report import report

        markdown = report(cfg, "HF_HUB_OFFLINE=1 python -m benchmarks.aux_mechanism run (workers sharing one queue), "
                          "then report", ns.stem)
        # The block goes to the benchmarks README and to the guide that quotes it.
        update_block(markdown, ns.stem, (README, REPO / "docs" / "auxiliary-objective.md"))
        print(markdown)


if __name__ == "__main__":
    main()
