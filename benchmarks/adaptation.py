"""Adapting the model a user already has (issue 29): does any unsupervised objective beat all-MiniLM-L6-v2 as shipped
on its own domain's retrieval, or should the user not train?

    W=/path/outside/the/repo
    HF_HUB_OFFLINE=1 nohup python -m benchmarks.adaptation run --work-dir $W > w1.log 2>&1 &   # one worker per core,
    HF_HUB_OFFLINE=1 nohup python -m benchmarks.adaptation run --work-dir $W > w2.log 2>&1 &   # sharing one queue
    HF_HUB_OFFLINE=1 python -m benchmarks.adaptation report    # from the jobs store: JSON, markdown, PNG, README
    HF_HUB_OFFLINE=1 python -m benchmarks.adaptation plot                    # the PNG again, from the committed JSON

Two domains (``adaptation_domains.py``): SciFact (train on the corpus abstracts; test: the 300 test queries, nDCG@10
and Recall@100) and Reuters-21578 (train on the TRAIN bodies; test: each TEST article, as the mean of its
sentences' embeddings, retrieves its own headline among all test headlines, and the reverse: Recall@5/10/20 as
paper 002 reports them, and nDCG@10). Every row starts from all-MiniLM-L6-v2 as shipped, loaded by the package's
rule (mean pooling, Normalize, 256 tokens), trains with one budget shared by every row and domain (``--steps`` x
``--batch-size`` at ``--learning-rate``, linear decay after ``--warmup``, texts cut at ``--max-length`` tokens) and is
scored at its own 256 tokens (round-1 IDC models are saved at it too, for round 2). The model reported is the one at the last step: no test query or test
headline chooses anything. Every ``--eval-steps`` steps a fixed sub-sample of the test (``--curve-docs``) is scored
for the plot only. Each row also reports STS (SentEval "all") and STS-B dev, and a pseudo-dev built from the
training documents alone (SciFact: a title retrieves the last two sentences of its own abstract; Reuters: a first
sentence retrieves the rest of its body), at the start and the end, to show whether a user without test queries could have seen the outcome.

Rows (``--rows``): ``shipped`` (no training); ``simcse``; ``mnrl-ss`` (MultipleNegativesRankingLoss on (s, s));
``tsdae`` (DenoisingAutoEncoderLoss, decoder tied to the encoder, deletion noise 0.6); ``ict`` (MNRL on a sentence
and the rest of its document); ``infocse`` (as released); ``infocse-df-0.1`` and ``infocse-df-1`` (the decoder
first trained alone on the domain's sentences, then its full gradient at lr ``--aux-lr``); ``cmlm-cse``;
``informin``; IDC (paper 002): pairs mined from the domain's documents (a seeded subset of ``--mine-docs``, the
same for every annotator and round) by the shipped model or by all-mpnet-base-v2, trained with MNRL or InfoCSE;
round 2 re-mines with the round-1 model and trains it for the same budget again (twice the steps in all).
Finished jobs are JSON files in ``--jobs-dir`` (``benchmarks/results/adaptation_jobs``, the store the report
reads); a repeated command skips them, several workers share the queue (``runner.py``). The rows, the
configuration and the report live beside this file.
"""

from __future__ import annotations

import os
import random
import time
from dataclasses import asdict
from pathlib import Path
from typing import Any

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("HF_DATASETS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

import torch
from datasets import Dataset
from sentence_transformers.base.evaluation import BaseEvaluator
from sentence_transformers.sentence_transformer import losses as st_losses

# This checkout's package before the virtual environment's editable install (a worktree at a fixed commit).
from benchmarks import runner  # noqa: E402
from benchmarks.adaptation_config import Config, config_from, parser  # noqa: E402
from benchmarks.adaptation_domains import Domain, load_reuters, load_scifact  # noqa: E402
from benchmarks.adaptation_rows import (  # noqa: E402
    MINING_SEED,
    ROWS,
    Row,
    delete_words,
    ict_pairs,
    mining_subset,
)
from benchmarks.harness import (  # noqa: E402
    machine,
    minilm_path,
    mpnet_path,
    sts_scores,
    sts_suite_scores,
)
from benchmarks.runner import log  # noqa: E402
from st_infocse import losses  # noqa: E402
from st_infocse.evaluation import AtLengthEvaluator, LexicalSettings  # noqa: E402
from st_infocse.mining import (  # noqa: E402
    DocumentAwareBatchSampler,
    distillation_loss,
    hybrid_teacher_dataset,
    mine_pairs,
)
from st_infocse.training import (  # noqa: E402
    LoRASettings,
    add_lora,
    learning_rate_mapping,
    load_model,
    merge_lora,
    save_model,
    toward_start,
    train_probe_decoder,
)


def _x100(scores: dict[str, float]) -> dict[str, float]:
    return {k: round(100 * v, 4) for k, v in scores.items()}


class CurveEvaluator(BaseEvaluator):
    """The curve: the domain's sub-sampled test, x100, and how long scoring it took (not training time)."""

    def __init__(self, task: Any, headline: str) -> None:
        super().__init__()
        self.task = task
        self.seconds = 0.0
        self.primary_metric = f"curve_{headline}"

    def __call__(self, model: Any, output_path: str | None = None, epoch: int = -1, steps: int = -1) -> dict:
        start = time.perf_counter()
        scores = {f"curve_{k}": v for k, v in _x100(self.task.evaluate(model)).items()}
        self.seconds += time.perf_counter() - start
        return scores


class Worker(runner.Worker):
    """A worker of the adaptation queue: every kind of job (shipped, references, mining, probe, rows, merges, later
    scoring), which share its domain cache and scoring. Finished jobs go to ``--jobs-dir``, the store the report
    reads; models, pairs and decoders stay in ``--work-dir``."""

    def __init__(self, cfg: Config) -> None:
        super().__init__(cfg.work_dir, cfg.jobs_dir)
        self.cfg = cfg
        self._domains: dict[str, Domain] = {}

    # ------------------------------------------------------------------------------------------- plumbing

    def run(self) -> list[str]:
        torch.set_num_threads(self.cfg.threads)
        return super().run()

    def jobs(self) -> list[str]:
        return self.cfg.jobs()

    def run_job(self, job: str) -> None:
        domain, what, *seed = job.split("__")
        if seed[-1:] == ["queries"]:
            self.queries(domain, what, int(seed[0].removeprefix("s")) if what != "shipped" else None)
        elif what == "shipped":
            self.shipped(domain)
        elif what == "references":
            self.references(domain)
        elif what == "probe":
            self.probe(domain)
        elif what.startswith("mine-"):
            self.mine(domain, what.removeprefix("mine-"))
        elif seed[1:] in (["sts"], ["test"]):
            self.later(domain, what, int(seed[0].removeprefix("s")), seed[1])
        else:
            self.row(domain, what, int(seed[0].removeprefix("s")))

    def domain(self, name: str) -> Domain:
        if name not in self._domains:
            load = load_scifact if name == "scifact" else load_reuters
            self._domains[name] = load(self.cfg.scifact if name == "scifact" else self.cfg.reuters, self.cfg.sizes)
        return self._domains[name]

    def path(self, *parts: str) -> Path:
        return self.cfg.work_dir.joinpath(*parts)

    def store(self, job: str, payload: dict[str, Any], started: dict[str, Any] | None = None) -> None:
        """The job with the budget, the threads, the machine at its start (``started``) and the load at its end."""
        end = os.getloadavg()[0]
        super().store(job, {"budget": self.cfg.budget(), "threads": self.cfg.threads, "machine": started or machine(),
                            "load_1min_end": round(end, 2)} | payload)

    @staticmethod
    def headline(domain: str) -> str:
        return "ndcg@10" if domain == "scifact" else "a2h_ndcg@10"

    # ------------------------------------------------------------------------------------------- scoring

    def scores(self, model: Any, own_length: int, domain: Domain) -> dict[str, Any]:
        """Everything reported for a finished model, at its own length."""
        start = time.perf_counter()
        training_length = model.max_seq_length
        model.max_seq_length = own_length
        model.eval()
        out: dict[str, Any] = self.test_scores(model, domain) if self.cfg.test_set else {}
        # the STS suite takes minutes per model: a screen may leave it to the finalists
        out |= sts_scores(model, self.cfg.senteval, suite=self.cfg.sts_suite and not self.cfg.smoke)
        model.max_seq_length = training_length
        out["eval_seconds"] = round(time.perf_counter() - start, 1)
        return out

    @staticmethod
    def test_scores(model: Any, domain: Domain) -> dict[str, Any]:
        """The whole test (with each query's score) and the pseudo-dev: most of a finished model's scoring time,
        which a screen leaves to the rows it keeps (``--no-test-set``, then ``--test-only``)."""
        return Worker.query_scores(model, domain) | {"pseudo_dev": _x100(domain.pseudo_dev.evaluate(model))}

    @staticmethod
    def query_scores(model: Any, domain: Domain) -> dict[str, Any]:
        """The whole test, and each test query's score (x100) for the report's paired test over queries."""
        metrics, per_query = domain.test.evaluate_queries(model)
        return {"test": _x100(metrics),
                "test_per_query": {k: {q: round(100 * v, 4) for q, v in scores.items()} for k, scores in per_query.items()}}

    # ------------------------------------------------------------------------------------------- jobs

    def shipped(self, name: str) -> None:
        started = machine()
        domain = self.domain(name)
        loaded = load_model(self.cfg.model)
        evaluator = CurveEvaluator(domain.curve, self.headline(name))
        curve = [{"step": 0} | {f"eval_{k}": v for k, v in evaluator(loaded.model).items()}]
        self.store(f"{name}__shipped", {"domain": name, "row": "shipped", "seed": None, "test_key": self.cfg.test_key(),
                                        "description": ROWS["shipped"].description, "model": loaded.how,
                                        "own_length": loaded.own_length, "data": domain.info,
                                        "data_seconds": round(domain.seconds, 1), "curve": curve,
                                        **self.scores(loaded.model, loaded.own_length, domain)}, started)

    def references(self, name: str) -> None:
        """BM25 and the hybrid of BM25 with the shipped model on the same test queries (issue 38's reference lines:
        how much the domain's words hold that the model misses), each query's nDCG@10 x100."""
        started = machine()
        domain = self.domain(name)
        model = load_model(self.cfg.model).model
        settings = LexicalSettings()
        start = time.perf_counter()
        per_query = domain.test.lexical_references(model, settings)
        self.store(f"{name}__references", {"domain": name, "test_key": self.cfg.test_key(),
                                           "lexical": settings.describe(), "seconds": round(time.perf_counter() - start, 1),
                                           "test_per_query": {ref: {q: round(100 * v, 4) for q, v in scores.items()}
                                                              for ref, scores in per_query.items()}}, started)

    def probe(self, name: str) -> None:
        """The decoder for the decoder-first rows, trained alone on the shipped model's frozen embeddings."""
        started = machine()
        domain = self.domain(name)
        model = load_model(self.cfg.model, max_seq_length=self.cfg.max_length).model
        start = time.perf_counter()
        decoder, curve = train_probe_decoder(model, domain.sentences, steps=self.cfg.probe_steps,
                                             learning_rate=self.cfg.probe_lr, seed=0, show_progress_bar=False)
        seconds = time.perf_counter() - start
        decoder.save_pretrained(self.path(name, "probe_decoder"))
        self.store(f"{name}__probe", {"train_seconds": round(seconds, 1), "curve": curve[::10] + curve[-1:]},
                   started)

    def mine(self, name: str, annotator: str) -> None:
        """Round-1 pairs: mined once per annotator by the model as shipped (all-MiniLM-L6-v2 or all-mpnet-base-v2)."""
        started = machine()
        documents, selection = mining_subset(self.domain(name).documents, self.cfg.mine_docs)
        model = load_model(str(self.cfg.mpnet) if annotator == "mpnet" else self.cfg.model).model
        start = time.perf_counter()
        mined = mine_pairs(documents, model, k=1, seed=MINING_SEED, batch_size=64, show_progress_bar=False)
        seconds = time.perf_counter() - start
        mined.pairs.save_to_disk(str(self.path(name, f"pairs-{annotator}")))
        self.store(f"{name}__mine-{annotator}", {"seconds": round(seconds, 1), "documents": selection,
                                                 "pairs": len(mined.pairs), "report": mined.report.to_dict()},
                   started)

    def dataset(self, spec: Row, name: str, model: Any, own_length: int, seed: int) -> tuple[Dataset, Any, dict]:
        """The row's training data, its batch sampler (None: the trainer's) and what to record about it."""
        domain = self.domain(name)
        sentences = domain.sentences
        if spec.data == "sentences":
            return Dataset.from_dict({"text": sentences}), None, {}
        if spec.data == "same-pairs":
            return Dataset.from_dict({"anchor": sentences, "positive": list(sentences)}), None, {}
        if spec.data == "tsdae":
            rng = random.Random(seed)
            return Dataset.from_dict({"damaged": [delete_words(s, rng) for s in sentences], "original": sentences}), \
                None, {}
        if spec.data == "distill":  # the teacher: BM25 fused with the model as the user has it (its own length)
            training_length, model.max_seq_length = model.max_seq_length, own_length
            start = time.perf_counter()
            dataset, report = hybrid_teacher_dataset(model, domain.documents, "held_out", "kl", 4, LexicalSettings(),
                                                     seed=seed, show_progress_bar=False)
            model.max_seq_length = training_length
            return dataset, None, {"teacher_seconds": round(time.perf_counter() - start, 1),
                                   "teacher": asdict(report)}
        if spec.data == "ict":
            pairs = ict_pairs(domain.documents)
        elif spec.round == 1:
            self.wait_for(f"{name}__mine-{spec.annotator}")
            pairs = Dataset.load_from_disk(str(self.path(name, f"pairs-{spec.annotator}")))
        else:  # round 2: the round-1 model mines the same documents again
            documents, selection = mining_subset(domain.documents, self.cfg.mine_docs)
            training_length, model.max_seq_length = model.max_seq_length, own_length
            start = time.perf_counter()
            mined = mine_pairs(documents, model, k=1, seed=MINING_SEED, batch_size=64, show_progress_bar=False)
            model.max_seq_length = training_length
            pairs = mined.pairs
            extra = {"mining_seconds": round(time.perf_counter() - start, 1), "documents": selection,
                     "mining": mined.report.to_dict()}
            return pairs.select_columns(["anchor", "positive"]), DocumentAwareBatchSampler.for_pairs(pairs), \
                extra | {"pairs": len(pairs)}
        # A document's pairs are near-duplicates of each other: keep them out of each other's batch.
        return pairs.select_columns(["anchor", "positive"]), DocumentAwareBatchSampler.for_pairs(pairs), \
            {"pairs": len(pairs)}

    def build_loss(self, spec: Row, model: Any, name: str) -> tuple[torch.nn.Module, dict[str, float] | None]:
        if spec.loss == "simcse":
            return losses.SimCSELoss(model), None
        if spec.loss == "mnrl":
            return st_losses.MultipleNegativesRankingLoss(model), None
        if spec.loss == "tsdae":
            # Tied: the decoder is the encoder's own weights plus cross-attention, as the library recommends.
            return st_losses.DenoisingAutoEncoderLoss(model, tie_encoder_decoder=True), None
        if spec.loss == "cmlm-cse":
            return losses.CMLMCSELoss(model), None
        if spec.loss == "informin":
            return losses.InforMinReconstructionLoss(model), None
        if spec.loss == "distill-kl":
            return distillation_loss(model, "kl"), None
        if not spec.decoder_first:
            return losses.InfoCSELoss(model), None
        self.wait_for(f"{name}__probe")
        loss = losses.InfoCSELoss(model, lambda_=spec.lambda_, decoder=str(self.path(name, "probe_decoder")),
                                  aux_gradient="full")
        return loss, learning_rate_mapping(loss, self.cfg.aux_lr)  # docs/auxiliary-objective.md, "What to set"

    def train(self, model: Any, loss: torch.nn.Module, dataset: Dataset, seed: int, evaluator: Any,
              curve: list[dict[str, Any]], offset: int, sampler: Any, mapping: dict[str, float] | None,
              learning_rate: float) -> tuple[float, list[dict[str, Any]]]:
        return runner.train(model, loss, dataset, steps=self.cfg.steps, batch_size=self.cfg.batch_size,
                            learning_rate=learning_rate, seed=seed, evaluator=evaluator, eval_steps=self.cfg.eval_steps,
                            curve=curve, offset=offset, warmup=self.cfg.warmup, logging_steps=min(10, self.cfg.steps),
                            mapping=mapping, sampler=sampler, use_cpu=not torch.cuda.is_available())

    def finished_model(self, name: str, row: str, seed: int) -> Any:
        """A finished row's model as the user would get it: its saved folder, or the merge made again from it."""
        spec = ROWS[row]
        if not spec.merge_of:
            return load_model(str(self.path("models", f"{name}__{row}__s{seed}")))
        trained = load_model(str(self.path("models", f"{name}__{spec.merge_of}__s{seed}")))
        start = load_model(self.cfg.model)  # the user's model, also for round 2
        trained.model.load_state_dict(toward_start(start.model.state_dict(), trained.model.state_dict(), spec.merge))
        return trained

    def later(self, name: str, row: str, seed: int, part: str) -> None:
        """The STS suite (``--sts-only``) or the whole test and pseudo-dev (``--test-only``) of a finished row's
        model, scored after a screen left them out; the report merges them into the row."""
        started = machine()
        self.wait_for(f"{name}__{row}__s{seed}")
        model = self.finished_model(name, row, seed).model  # loaded at its own length
        model.eval()
        begin = time.perf_counter()
        if part == "sts":
            scores = sts_suite_scores(model, self.cfg.senteval)
        else:
            scores = self.test_scores(model, self.domain(name))
        self.store(f"{name}__{row}__s{seed}__{part}", {f"{part}_of": f"{name}__{row}__s{seed}", **scores,
                                                      "eval_seconds": round(time.perf_counter() - begin, 1)},
                   started)

    def merged(self, name: str, row: str, seed: int) -> None:
        """A trained row's model moved back toward the start: start + merge * (trained - start), weight by weight."""
        started = machine()
        spec, job = ROWS[row], f"{name}__{row}__s{seed}"
        base_job = f"{name}__{spec.merge_of}__s{seed}"
        self.wait_for(base_job)
        base = self.queue.load(base_job)
        begin = time.perf_counter()
        trained = self.finished_model(name, row, seed)
        seconds = time.perf_counter() - begin
        evaluator = CurveEvaluator(self.domain(name).curve, self.headline(name))
        curve = [{"step": base["steps_total"]} | {f"eval_{k}": v for k, v in evaluator(trained.model).items()}]
        self.store(job, {"domain": name, "row": row, "seed": seed, "description": spec.description,
                         "steps_total": base["steps_total"], "learning_rate": base.get("learning_rate"),
                         "train_seconds": round(base["train_seconds"] + seconds, 1), "merge": spec.merge,
                         "merge_of": base_job, "curve": curve, "log_history": [],
                         **self.scores(trained.model, trained.own_length, self.domain(name))}, started)

    def row(self, name: str, row: str, seed: int) -> None:
        if ROWS[row].merge_of:
            self.merged(name, row, seed)
            return
        started = machine()
        model, own, payload = self.train_row(name, row, seed)
        self.store(f"{name}__{row}__s{seed}", payload | self.scores(model, own, self.domain(name)), started)

    def train_row(self, name: str, row: str, seed: int) -> tuple[Any, int, dict[str, Any]]:
        """Train a row's model and save it (``models/<job>``) as the user would get it; what the row's job records
        about its training."""
        spec = ROWS[row]
        job = f"{name}__{row}__s{seed}"
        domain = self.domain(name)
        source, offset = self.cfg.model, 0
        if spec.round == 2:
            first = f"{name}__{row.removesuffix('-r2')}-r1__s{seed}"
            self.wait_for(first)
            source, offset = str(self.path("models", first)), self.cfg.steps
        loaded = load_model(source, max_seq_length=self.cfg.max_length)
        model, own = loaded.model, loaded.own_length
        if spec.lora_r:  # before the loss: InfoCSE-like losses copy the (base) lower layers when built
            add_lora(model, LoRASettings(r=spec.lora_r, alpha=2.0 * spec.lora_r))
        if torch.cuda.is_available():
            torch.cuda.reset_peak_memory_stats()
        dataset, sampler, extra = self.dataset(spec, name, model, own, seed)
        torch.manual_seed(seed)  # the loss's own heads and decoders start from the row's seed
        loss, mapping = self.build_loss(spec, model, name)
        if len(dataset) < self.cfg.batch_size:  # the trainer would silently run no step at all
            raise ValueError(f"{job}: {len(dataset)} training rows, fewer than one batch of {self.cfg.batch_size}")
        evaluator = CurveEvaluator(domain.curve, self.headline(name))
        curve: list[dict[str, Any]] = []
        seconds, history = self.train(model, loss, dataset, seed, AtLengthEvaluator(evaluator, own), curve, offset,
                                      sampler, mapping, spec.learning_rate or self.cfg.learning_rate)
        train_seconds = seconds - evaluator.seconds  # the curve's evaluations are not training
        if not curve or curve[-1]["step"] != offset + self.cfg.steps:  # the last step is always on the curve
            model.max_seq_length = own
            curve.append({"step": offset + self.cfg.steps} | {f"eval_{k}": v for k, v in evaluator(model).items()})
            model.max_seq_length = self.cfg.max_length
        if torch.cuda.is_available():
            extra["peak_memory_mb"] = round(torch.cuda.max_memory_allocated() / 2**20)
        if spec.lora_r:
            # add_lora leaves the adapter's weights alone trainable in the model
            extra["trained_weights"] = sum(p.numel() for p in model.parameters() if p.requires_grad)
            merge_lora(model)
        # Saved as the user would get it (own length): round 2 and the merges start from it.
        save_model(model, self.path("models", job), own)
        probe = self.queue.load(f"{name}__probe") if spec.decoder_first else None
        return model, own, {"domain": name, "row": row, "seed": seed, "description": spec.description,
                            "steps_total": offset + self.cfg.steps,
                            "learning_rate": spec.learning_rate or self.cfg.learning_rate,
                            "train_seconds": round(train_seconds, 1), "curve_seconds": round(evaluator.seconds, 1),
                            "probe_seconds": probe["train_seconds"] if probe else None, "curve": curve,
                            "log_history": history, **extra}

    def queries(self, name: str, row: str, seed: int | None) -> None:
        """A finished row's (or the shipped model's) whole test, query by query (``--queries-only``), for rows
        scored before per-query scores were kept. A model that was not kept is trained again from its row's seed
        (the report checks that its test metrics are the row's); a merge row waits for its base row's model."""
        started = machine()
        job = f"{name}__shipped" if row == "shipped" else f"{name}__{row}__s{seed}"
        begin = time.perf_counter()
        retrained = None
        if row == "shipped":
            model = load_model(self.cfg.model).model
        else:
            spec = ROWS[row]
            if spec.merge_of:
                self.wait_for(f"{name}__{spec.merge_of}__s{seed}__queries")
            elif not self.path("models", job).exists():
                retrained = self.train_row(name, row, seed)[2]["train_seconds"]
            model = self.finished_model(name, row, seed).model  # loaded at its own length
        model.eval()
        scoring = time.perf_counter()
        self.store(f"{job}__queries", {"queries_of": job, "retrain_seconds": retrained,
                                       **self.query_scores(model, self.domain(name)),
                                       "eval_seconds": round(time.perf_counter() - scoring, 1),
                                       "seconds": round(time.perf_counter() - begin, 1)}, started)


def main() -> None:
    ns = parser(__doc__).parse_args()
    from benchmarks.adaptation_report import plot_from_results, report

    if ns.part == "plot":
        plot_from_results()
        return
    ns.model = minilm_path(ns.model)
    cfg = config_from(ns)
    if ns.part == "report":
        print(report(cfg, parser().parse_args(["run"]), ns))
        return
    if any(ROWS[r].annotator == "mpnet" for r in cfg.rows):
        cfg.mpnet = mpnet_path(cfg.mpnet)
    needed = [cfg.senteval] + [cfg.scifact if d == "scifact" else cfg.reuters for d in cfg.domains]
    missing = [str(p) for p in needed if not p.exists()]
    if missing:
        raise SystemExit(f"not found: {', '.join(missing)} (data: ../shared/data/SOURCES.md)")
    failed = Worker(cfg).run()
    log(f"queue finished; failed: {', '.join(failed) or 'none'}")


if __name__ == "__main__":
    main()
