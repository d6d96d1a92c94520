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
TF32 off); ``--model`` takes another copy of all-MiniLM-L6-v2 than the wheel's. Over 500 lines: the settings
table (a row per setting, with its reason) and the report of every group; the plots are in ``aux_mechanism_plot.py``.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import platform
import statistics
import time
from dataclasses import asdict, dataclass, field
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
    JobQueue,
    at,
    commits_line,
    load_pooled_model,
    mean_std,
    update_block,
    welch,
)
from benchmarks.long_budget import HELD_OUT  # noqa: E402
from benchmarks.long_budget import Bench as LongBudgetBench  # noqa: E402
from st_infocse import losses  # noqa: E402
from st_infocse.modeling import AuxiliaryDecoder  # noqa: E402

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
    loss.cmlm.metrics.reset()
    model.train(was_training)
    ratios = [m / c for m, c in zip(mlm, cl, strict=True) if c > 0]
    return {"contrastive_norm": statistics.mean(cl), "mlm_norm": statistics.mean(mlm),
            "ratio": statistics.mean(ratios) if ratios else float("nan")}


class Bench(LongBudgetBench):
    """long_budget.py's queue and data (claims, held-out sentences, STS-B dev, the diagnostic), with this benchmark's
    settings; a row that needs the probe or stage 1 runs it itself when no worker has claimed it."""

    # --------------------------------------------------------------------------------------------- queue

    def wait_for(self, job: str) -> None:
        self.queue.wait_for(job, self.run_job, poll=5)  # nobody has it: do it here rather than wait forever

    def run(self) -> None:
        self.queue.run(self.cfg.jobs(), self.run_job, keep_going=True)

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
        mapping = {r"^(?!model\.)": setting.aux_lr} if setting.aux_lr is not None else None
        row.train_seconds, row.log_history = self.train(model, loss, self.dataset(steps), seed, steps,
                                                        self.cfg.learning_rate, evaluator, row.curve,
                                                        learning_rate_mapping=mapping)
        if has_mlm:
            row.gradient_ratio["end"] = gradient_ratio(model, loss, ratio_texts, self.cfg.batch_size,
                                                       self.cfg.ratio_batches)
        self.finish(job, row, model)

    def store(self, job: str, payload: dict[str, Any]) -> None:
        super().store(job, {"device": self.cfg.device, "device_name": device_name(self.cfg.device)} | payload)


def device_name(device: str) -> str:
    if device.startswith("cuda") and torch.cuda.is_available():
        return torch.cuda.get_device_name(0)
    return platform.processor() or platform.machine()


def worker(cfg: Config) -> None:
    torch.set_num_threads(cfg.threads)
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    Bench(cfg).run()


# ------------------------------------------------------------------------------------------------- report


def _gain(curve: list[dict[str, Any]], prefix: str, which: int) -> float | None:
    return at(curve, f"eval_{prefix}_information_gain", which)


def _fmt(value: float | None, digits: int = 4) -> str:
    return "-" if value is None else f"{value:.{digits}f}"


def report(cfg: Config, command: str, stem: str) -> str:
    done = JobQueue(cfg.work_dir).done()
    rows = {k: v for k, v in done.items() if k not in ("probe", "stage1")}
    by_setting: dict[str, list[dict[str, Any]]] = {}
    for data in rows.values():
        by_setting.setdefault(data["setting"], []).append(data)
    devices = sorted({d.get("device_name", "?") for d in done.values()})
    lines = [f"Command: `{command}` — device: {', '.join(devices)}; {cfg.steps} steps x batch {cfg.batch_size} "
             f"(5x steps where a row says so), max length {cfg.max_length}, lr {cfg.learning_rate:g}, evaluated at max "
             f"length {cfg.eval_max_length}. Spearman x100 (SentEval 'all'); ± is the sample std over seeds; p is "
             "Welch's t-test against SimCSE on STS avg.", "", commits_line(done), ""]
    simcse = [d["sts_avg"] for d in by_setting.get("simcse", []) if d["sts_avg"] is not None]
    simcse_dev = [d["stsb_dev"] for d in by_setting.get("simcse", [])]

    def versus(group: list[dict[str, Any]], key: str, base: list[float]) -> str:
        values = [d[key] for d in group if d[key] is not None]
        if not values or not base:
            return "-"
        diff = statistics.mean(values) - statistics.mean(base)
        tested = welch(values, base)
        return f"{diff:+.2f}" + (f" (p = {tested[1]:.3f})" if tested else "")

    lines += ["**Every objective (current defaults)**", "",
              "| Objective | Seeds | " + " | ".join(TASKS) + " | STS avg | vs SimCSE | STS-B dev | vs SimCSE |",
              "|---|---|" + "---|" * (len(TASKS) + 4)]
    for name, setting in SETTINGS.items():
        group = sorted(by_setting.get(name, []), key=lambda d: d["seed"])
        if setting.group != "table" or not group or group[0]["sts_avg"] is None:
            continue
        cells = [mean_std([d["sts"][t] for d in group]) for t in TASKS]
        lines.append(f"| {setting.description} | {','.join(str(d['seed']) for d in group)} | " + " | ".join(cells)
                     + f" | {mean_std([d['sts_avg'] for d in group])} | "
                     + ("-" if name == "simcse" else versus(group, "sts_avg", simcse))
                     + f" | {mean_std([d['stsb_dev'] for d in group])} | "
                     + ("-" if name == "simcse" else versus(group, "stsb_dev", simcse_dev)) + " |")

    lines += ["", "**Does InfoCSE's own decoder read h?**", "",
              "Information gain of the row's own decoder (auxiliary MLM loss with another sentence's h minus with "
              "the true h, nats per masked token, 512 held-out sentences) at step 0, halfway and at the end; the "
              "frozen probe decoder reads "
              + (f"{done['probe']['untrained_model']['probe_information_gain']:.4f}" if "probe" in done else "-")
              + " nats from the untrained model. Accuracy gap: masked-token accuracy with the true h minus with the shuffled "
              "one, in points. Gradient ratio: norm of the weighted MLM term's gradient over the contrastive term's, at "
              "the encoder, at step 0 and after training (mean over 4 batches).", "",
              "| Setting | Seeds | own gain: start | middle | end | own MLM acc. end | acc. gap end | probe gain end | "
              "grad ratio start | end | STS avg | vs SimCSE | STS-B dev | vs SimCSE |",
              "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for name, setting in SETTINGS.items():
        group = sorted(by_setting.get(name, []), key=lambda d: d["seed"])
        if setting.objective != "infocse" or not group:
            continue

        def mean_of(values: list[float | None]) -> float | None:
            present = [v for v in values if v is not None]
            return statistics.mean(present) if present else None

        middle = [at([p for p in d["curve"] if "eval_live_information_gain" in p],
                      "eval_live_information_gain", len([p for p in d["curve"]
                                                          if "eval_live_information_gain" in p]) // 2)
                  for d in group]
        ratio_start = mean_of([d["gradient_ratio"].get("start", {}).get("ratio") for d in group])
        ratio_end = mean_of([d["gradient_ratio"].get("end", {}).get("ratio") for d in group])
        acc = mean_of([at(d["curve"], "eval_live_accuracy", -1) for d in group])
        gap = mean_of([at(d["curve"], "eval_live_accuracy_gap", -1) for d in group])
        sts = [d["sts_avg"] for d in group if d["sts_avg"] is not None]
        lines.append(
            f"| {setting.description} | {','.join(str(d['seed']) for d in group)} | "
            f"{_fmt(mean_of([_gain(d['curve'], 'live', 0) for d in group]))} | {_fmt(mean_of(middle))} | "
            f"{_fmt(mean_of([_gain(d['curve'], 'live', -1) for d in group]))} | "
            f"{'-' if acc is None else f'{100 * acc:.1f}%'} | {'-' if gap is None else f'{100 * gap:+.2f}'} | "
            f"{_fmt(mean_of([_gain(d['curve'], 'probe', -1) for d in group]))} | "
            f"{'-' if ratio_start is None else f'{ratio_start:.2e}'} | "
            f"{'-' if ratio_end is None else f'{ratio_end:.2e}'} | "
            f"{mean_std(sts) if sts else '-'} | {versus(group, 'sts_avg', simcse)} | "
            f"{mean_std([d['stsb_dev'] for d in group])} | {versus(group, 'stsb_dev', simcse_dev)} |")
    released = by_setting.get("infocse", [])
    released_sts = [d["sts_avg"] for d in released if d["sts_avg"] is not None]
    released_dev = [d["stsb_dev"] for d in released]
    compared = [(name, setting) for name, setting in SETTINGS.items()
                if name != "infocse" and setting.objective == "infocse" and len(by_setting.get(name, [])) >= 2]
    if released and compared:
        lines.append("")
        for name, setting in compared:
            group = by_setting[name]
            lines.append(f"- {setting.description} minus InfoCSE (defaults), seeds {len(group)} vs {len(released)}: "
                         f"STS avg {versus(group, 'sts_avg', released_sts)}, "
                         f"STS-B dev {versus(group, 'stsb_dev', released_dev)}.")
    for job in ("probe", "stage1"):
        if job not in done:
            continue
        data = done[job]
        if job == "stage1":
            curve = data["curve"]
            accs = [(p["step"], p["eval_stage1_accuracy"]) for p in curve if "eval_stage1_accuracy" in p]
            final = accs[-1][1]
            plateau = next(step for step, acc in accs if acc >= final - 0.005)
            lines += ["", f"Stage 1: {cfg.stage1_steps} steps at a constant lr {cfg.stage1_lr:g} "
                      f"({data['train_seconds']:.0f} s); held-out auxiliary MLM accuracy "
                      + ", ".join(f"{100 * a:.1f}% at {s}" for s, a in accs[:: max(1, len(accs) // 8)])
                      + f", {100 * final:.1f}% at {accs[-1][0]}; within 0.5 points of the last value from step "
                      f"{plateau}; its decoder's gain {_fmt(_gain(curve, 'stage1', 0))} → "
                      f"{_fmt(_gain(curve, 'stage1', -1))} nats."]
        else:
            scores = data["untrained_model"]
            steps = cfg.probe_steps
            lines += ["", f"Probe decoder (also the decoder trained alone first): {steps} steps at lr "
                      f"{cfg.probe_lr:g} on the untrained model's frozen embeddings ({data['train_seconds']:.0f} s); on "
                      f"the untrained model: gain {scores[f'{job}_information_gain']:.4f} nats, accuracy "
                      f"{100 * scores[f'{job}_accuracy']:.2f}% vs {100 * scores[f'{job}_accuracy_shuffled']:.2f}% "
                      "with shuffled h."]
    markdown = "\n".join(lines) + "\n"
    payload = {"command": command, "config": {k: str(v) if isinstance(v, Path) else v for k, v in asdict(cfg).items()},
               "settings": {k: asdict(v) for k, v in SETTINGS.items()}, "torch": torch.__version__, "jobs": done}
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / f"{stem}.json").write_text(json.dumps(payload, indent=1))
    (RESULTS / f"{stem}.md").write_text("# When does the auxiliary MLM matter?\n\n" + markdown)
    plot(done, GROUPS, RESULTS / f"{stem}_gain.png", RESULTS / f"{stem}_stage1.png")
    return markdown


def restore(cfg: Config, stem: str) -> int:
    """Seed the queue's cache with committed rows, so a new checkout resumes instead of re-running them.

    Rows of this benchmark come from ``results/<stem>.json``; SimCSE's and InfoCSE's (defaults) from
    ``results/long_budget.json``, whose rows were trained and scored exactly as these are. Decoders are not kept, so
    the probe (and stage 1) are trained again when a row needs them. Returns the number of rows written.
    """
    done = cfg.work_dir / "done"
    done.mkdir(parents=True, exist_ok=True)
    written = 0
    own = RESULTS / f"{stem}.json"
    if own.exists():
        for job, data in json.loads(own.read_text())["jobs"].items():
            if job not in ("probe", "stage1") and not (done / f"{job}.json").exists():
                (done / f"{job}.json").write_text(json.dumps(data, indent=1))
                written += 1
    long_budget = RESULTS / "long_budget.json"
    if long_budget.exists():
        payload = json.loads(long_budget.read_text())
        for job, data in payload["jobs"].items():
            if data.get("objective") not in ("simcse", "infocse") or (done / f"{job}.json").exists():
                continue
            row = Row(job, data["objective"], data["seed"], SETTINGS[data["objective"]].description,
                      payload["config"]["steps"], data["train_seconds"], data["curve"], data["log_history"], {},
                      data["sts"], data["sts_avg"], data["stsb_dev"], data["eval_seconds"])
            record = {"job": job, "device": "cpu", "device_name": payload.get("machine", "cpu"),
                      "source": "long_budget.json"} | asdict(row)
            (done / f"{job}.json").write_text(json.dumps(record, indent=1))
            written += 1
    return written


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
        print(f"restored {restore(cfg, ns.stem)} rows into {cfg.work_dir / 'done'}")
    else:
        markdown = report(cfg, "HF_HUB_OFFLINE=1 python -m benchmarks.aux_mechanism run (workers sharing one queue), "
                          "then report", ns.stem)
        # The block goes to the benchmarks README and to the guide that quotes it.
        update_block(markdown, ns.stem, (README, REPO / "docs" / "auxiliary-objective.md"))
        print(markdown)


if __name__ == "__main__":
    main()
