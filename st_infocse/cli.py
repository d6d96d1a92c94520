"""The ``st-infocse`` command: stage-1 pre-training, training, IDC mining and evaluation without a script.

    st-infocse pretrain-aux --model bert-base-uncased --train_data corpus.txt --output_dir stage1
    st-infocse train --objective infocse --model stage1/model --decoder stage1/decoder --output_dir out
    st-infocse mine --model out --docs docs.jsonl.gz --output_dir pairs
    st-infocse evaluate --model out --sts ../shared/data/senteval --beir scifact --beir_source ../shared/data/beir

Every flag of ``SentenceTransformerTrainingArguments`` is accepted by ``train`` and ``pretrain-aux``; ``--config
file.json|yaml`` holds any of them (flags given after it override it). Errors about inputs exit with code 2.
"""

from __future__ import annotations

import json
import logging
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

logger = logging.getLogger("st_infocse")

OBJECTIVES = ("simcse", "infocse", "cmlm-cse", "informin", "idc", "cmlm")
WIKI1M = "hf://datasets/princeton-nlp/datasets-for-simcse/wiki1m_for_simcse.txt"


class CLIError(Exception):
    """A problem with the user's input: reported in one line, exit code 2."""


# --------------------------------------------------------------------------------------------- arguments


@dataclass
class ModelArguments:
    model: str = field(
        default="bert-base-uncased",
        metadata={"help": "Hub id or local folder of a Hugging Face or Sentence Transformer model."},
    )
    pooling: str = field(
        default="cls",
        metadata={
            "help": "Pooling on top of the encoder: cls (SimCSE's cls_before_pooler), mean, max, or 'model' to keep the model's own modules."
        },
    )
    max_seq_length: int = field(default=32, metadata={"help": "Maximum tokens per sentence."})
    trust_remote_code: bool = field(default=False, metadata={"help": "Allow custom model code from the hub."})


@dataclass
class SavedModelArguments(ModelArguments):
    """For commands that use a trained model as it is: its own pooling and length unless told otherwise."""

    pooling: str = field(
        default="model", metadata={"help": "'model' keeps the saved modules; cls, mean or max re-pools the encoder."}
    )
    max_seq_length: int | None = field(
        default=None, metadata={"help": "Maximum tokens per sentence (default: the model's)."}
    )


@dataclass
class DataArguments:
    train_data: str = field(
        default=WIKI1M,
        metadata={
            "help": "Training text: a .txt(.gz) file (one sentence per line), .jsonl/.csv/.parquet, a save_to_disk folder, an hf:// file or a hub dataset id."
        },
    )
    text_column: str | None = field(
        default=None, metadata={"help": "Column holding the text (default: 'text' or the only string column)."}
    )
    max_train_samples: int | None = field(default=None, metadata={"help": "Use only the first N training texts."})
    stsb_dev: str = field(
        default="hub",
        metadata={
            "help": "STS-B dev for checkpoint selection: 'hub', a SentEval data/downstream folder, a sentence1/sentence2/score file, or 'none'."
        },
    )


@dataclass
class LossArguments:
    objective: str = field(default="infocse", metadata={"help": f"One of {', '.join(OBJECTIVES)}."})
    lambda_: float | None = field(
        default=None,
        metadata={
            "aliases": ["--lambda"],
            "help": "Weight of the auxiliary term (InfoCSE 1e-5, CMLM-CSE 0.005, InforMin 0.4 by default).",
        },
    )
    temperature: float = field(default=0.05, metadata={"help": "Contrastive temperature."})
    projection: str | None = field(
        default=None,
        metadata={
            "help": "Training-only projection head: mlp, bn-mlp or none (default: the objective's own: bn-mlp for "
            "infocse, mlp for simcse, cmlm-cse and informin)."
        },
    )
    k: int | None = field(
        default=None, metadata={"help": "Frozen lower layers of the auxiliary decoder (default: the preset's)."}
    )
    n: int | None = field(
        default=None, metadata={"help": "Fusion layers of the auxiliary decoder (default: the preset's)."}
    )
    mask_rate: float | None = field(
        default=None,
        metadata={
            "help": "Masking rate of the auxiliary MLM (default: infocse 0.40, 0.30 from 24 layers; cmlm-cse 0.15; "
            "pretrain-aux 0.15)."
        },
    )
    fusion_init: str | None = field(
        default=None,
        metadata={"help": "fresh (default, as the authors' code) or copy (the encoder layers above k) fusion layers."},
    )
    detach: bool = field(default=True, metadata={"help": "Freeze the decoder's lower copy (paper default)."})
    decoder: str | None = field(default=None, metadata={"help": "Stage-1 decoder folder (from pretrain-aux)."})
    tie_head: bool = field(
        default=True,
        metadata={"help": "pretrain-aux only: tie the MLM head's output projection to the word embeddings (Condenser)."},
    )
    masking: str = field(
        default="whole_word",
        metadata={"help": "pretrain-aux only: whole_word (Condenser, default) or token masking."},
    )
    informin_weight: float = field(
        default=0.0, metadata={"help": "Add InforMin's reconstruction term to InfoCSE with this weight."}
    )
    gather_across_devices: bool = field(
        default=False, metadata={"help": "Contrast against the embeddings of all processes (multi-GPU)."}
    )
    aux_learning_rate: float | None = field(
        default=None, metadata={"help": "Own learning rate for the loss's auxiliary modules."}
    )
    docs: str | None = field(
        default=None,
        metadata={"help": "idc: documents (.jsonl(.gz) with 'sentences' or 'text', or a save_to_disk folder)."},
    )
    rounds: int = field(default=3, metadata={"help": "idc: maximum mine -> train rounds."})
    idc_loss: str = field(default="mnrl", metadata={"help": "idc: loss trained on the mined pairs, mnrl or infocse."})
    idc_k: int = field(default=1, metadata={"help": "idc: top-K neighbours per sentence."})
    idc_similarity: str = field(
        default="cosine",
        metadata={
            "help": "idc: sentence score for mining, cosine or dot (inner product, paper 002 eq. 2).",
            "choices": ["cosine", "dot"],
        },
    )
    initial_annotation: str = field(
        default="model", metadata={"help": "idc: first-round pairs from the 'model' or 'adjacent' sentences."}
    )


@dataclass
class MineArguments:
    docs: str = field(
        default=None,
        metadata={
            "help": "Documents: .jsonl(.gz) with 'sentences' or 'text' (and 'id'), a save_to_disk folder, or a hub dataset id."
        },
    )
    output_dir: str = field(
        default="pairs", metadata={"help": "Folder for the mined pairs (datasets save_to_disk) and report.json."}
    )
    k: int = field(default=1, metadata={"help": "Top-K neighbours per sentence."})
    threshold: float | None = field(
        default=None,
        metadata={"help": "Floor on the edge score: a cosine, or the raw inner product with --similarity dot."},
    )
    similarity: str = field(
        default="cosine",
        metadata={
            "help": "Edge score: cosine, or dot (inner product, paper 002 eq. 2; the same as cosine for models "
            "ending in Normalize).",
            "choices": ["cosine", "dot"],
        },
    )
    min_sentences: int = field(default=2, metadata={"help": "Skip documents with fewer sentences."})
    max_sentences: int | None = field(default=1000, metadata={"help": "Skip documents with more sentences."})
    max_pairs_per_cluster: int | None = field(default=None, metadata={"help": "Cap on pairs per cluster."})
    batch_size: int = field(default=64, metadata={"help": "Encoding batch size."})
    max_docs: int | None = field(default=None, metadata={"help": "Mine only the first N documents."})
    seed: int = field(default=0, metadata={"help": "Seed for the pair cap's sample."})


@dataclass
class EvaluateArguments:
    sts: str | None = field(
        default=None, metadata={"help": "STS suite source: 'mteb' (online) or a SentEval data/downstream folder."}
    )
    beir: list[str] | None = field(default=None, metadata={"help": "BEIR datasets, e.g. scifact nfcorpus."})
    beir_source: str = field(
        default="mteb", metadata={"help": "'mteb' (online) or a folder with one BEIR folder per dataset."}
    )
    transfer: str | None = field(
        default=None, metadata={"help": "SentEval data/downstream folder for the transfer tasks."}
    )
    output_dir: str = field(
        default="evaluation", metadata={"help": "Where evaluation.json, evaluation.md and plots go."}
    )
    batch_size: int = field(default=64, metadata={"help": "Encoding batch size."})
    plots: bool = field(default=True, metadata={"help": "Draw bar charts (needs matplotlib)."})


def _training_arguments_class():
    from st_infocse.training.arguments import PaperTrainingArguments

    return PaperTrainingArguments


NO_EVALUATION = ["--eval_strategy", "no", "--load_best_model_at_end", "false"]


def _parse(dataclass_types: Sequence[type], argv: Sequence[str], prog: str, evaluates: bool = True) -> tuple[Any, ...]:
    """Parse flags into the dataclasses; ``--config FILE`` (JSON/YAML) is expanded first so later flags win.

    Without STS-B dev evaluation (``evaluates=False`` or ``--stsb_dev none``) the best-checkpoint defaults are
    switched off before the training arguments validate themselves.
    """
    from transformers import HfArgumentParser

    parser = HfArgumentParser(
        list(dataclass_types), prog=prog, epilog="--config FILE: JSON or YAML with any of these flags."
    )
    argv = list(argv)
    if "--config" in argv:
        index = argv.index("--config")
        if index + 1 >= len(argv):
            raise CLIError("--config needs a file")
        argv = _config_to_flags(argv[index + 1]) + argv[:index] + argv[index + 2 :]
    if not evaluates or _flag_value(argv, "--stsb_dev", "hub").lower() == "none":
        argv = NO_EVALUATION + argv
    return tuple(parser.parse_args_into_dataclasses(args=argv))


def _flag_value(argv: Sequence[str], flag: str, default: str) -> str:
    """The last value given for ``flag`` (``--flag value`` or ``--flag=value``)."""
    value = default
    for i, item in enumerate(argv):
        if item == flag and i + 1 < len(argv):
            value = argv[i + 1]
        elif item.startswith(flag + "="):
            value = item.split("=", 1)[1]
    return value


def _config_to_flags(path: str) -> list[str]:
    file = Path(path)
    if not file.is_file():
        raise CLIError(f"config file not found: {path}")
    text = file.read_text()
    try:
        if file.suffix in (".yaml", ".yml"):
            import yaml

            values = yaml.safe_load(text)
        else:
            values = json.loads(text)
    except Exception as exc:  # noqa: BLE001 - any parse failure is the user's file
        raise CLIError(f"cannot read config {path}: {exc}") from exc
    if not isinstance(values, dict):
        raise CLIError(f"config {path} must hold a mapping of flag names to values")
    flags: list[str] = []
    for key, value in values.items():
        if value is None:
            continue
        flags.append(f"--{key}")
        if isinstance(value, list):
            flags.extend(str(v) for v in value)
        elif isinstance(value, dict):
            flags.append(json.dumps(value))
        else:
            flags.append(str(value).lower() if isinstance(value, bool) else str(value))
    return flags


# ------------------------------------------------------------------------------------------------ inputs


def _looks_local(source: str) -> bool:
    return source.startswith((".", "/", "~")) or Path(source).suffix in (
        ".txt",
        ".gz",
        ".jsonl",
        ".json",
        ".csv",
        ".tsv",
        ".parquet",
    )


def load_model(args: ModelArguments):
    """A SentenceTransformer from a hub id or a local folder, with the requested pooling."""
    from sentence_transformers import SentenceTransformer
    from sentence_transformers.base.modules import Transformer
    from sentence_transformers.sentence_transformer.modules import Pooling

    path = Path(args.model).expanduser()
    if _looks_local(args.model) and not path.exists():
        raise CLIError(f"model not found: {args.model}")
    source = str(path) if path.exists() else args.model
    try:
        if args.pooling == "model":
            model = SentenceTransformer(source, trust_remote_code=args.trust_remote_code)
            if args.max_seq_length is not None:
                model.max_seq_length = args.max_seq_length
            return model
        if args.pooling not in ("cls", "mean", "max"):
            raise CLIError(f"unknown pooling {args.pooling!r}; use cls, mean, max or model")
        transformer = Transformer(
            source, max_seq_length=args.max_seq_length, model_kwargs={"trust_remote_code": args.trust_remote_code}
        )
    except OSError as exc:
        raise CLIError(f"cannot load model {args.model!r}: {exc}".splitlines()[0]) from exc
    return SentenceTransformer(modules=[transformer, Pooling(transformer.get_embedding_dimension(), args.pooling)])


def load_texts(source: str, text_column: str | None = None, max_samples: int | None = None):
    """A one-column ``text`` dataset; missing, non-string and blank rows are dropped and counted."""
    from datasets import Dataset, load_dataset, load_from_disk

    from st_infocse.training.data import clean_texts, read_text_file

    path = Path(source).expanduser()
    if _looks_local(source) and not path.exists():
        raise CLIError(f"training data not found: {source}")
    if path.is_dir():
        try:
            dataset = load_from_disk(str(path))
        except FileNotFoundError as exc:
            raise CLIError(f"{source} is not a dataset folder written by save_to_disk") from exc
    elif path.is_file() and path.name.endswith((".txt", ".txt.gz")):
        dataset = read_text_file(path)
    elif path.is_file():
        kind = {".jsonl": "json", ".json": "json", ".csv": "csv", ".tsv": "csv", ".parquet": "parquet"}.get(
            path.suffix if path.suffix != ".gz" else Path(path.stem).suffix
        )
        if kind is None:
            raise CLIError(f"unsupported file type for training data: {source}")
        dataset = load_dataset(
            kind, data_files=str(path), split="train", **({"delimiter": "\t"} if ".tsv" in path.name else {})
        )
    elif source.startswith("hf://"):
        dataset = load_dataset("text", data_files=source, split="train")
    else:
        dataset = load_dataset(source, split="train")
    if hasattr(dataset, "keys") and not isinstance(dataset, Dataset):  # a DatasetDict saved to disk
        dataset = dataset["train"]
    strings = [name for name, feature in dataset.features.items() if getattr(feature, "dtype", None) == "string"]
    column = text_column or ("text" if "text" in strings else (strings[0] if len(strings) == 1 else None))
    if column is None or column not in dataset.column_names:
        raise CLIError(f"choose the text column with --text_column (string columns in {source}: {strings})")
    if max_samples is not None:
        dataset = dataset.select(range(min(max_samples, len(dataset))))
    dataset, report = clean_texts(dataset, column)
    if report.dropped:
        print(f"{source}: {report}")
    if len(dataset) == 0:
        raise CLIError(f"no text in {source}")
    return dataset.rename_column(column, "text") if column != "text" else dataset


def load_documents(source: str, max_docs: int | None = None):
    from datasets import load_dataset, load_from_disk

    path = Path(source).expanduser()
    if _looks_local(source) and not path.exists():
        raise CLIError(f"documents not found: {source}")
    if path.is_dir():
        docs = load_from_disk(str(path))
    elif path.is_file():
        docs = load_dataset("json", data_files=str(path), split="train")
    else:
        docs = load_dataset(source, split="train")
    if not ({"sentences", "text"} & set(docs.column_names)):
        raise CLIError(f"documents in {source} need a 'sentences' (list) or 'text' column; found {docs.column_names}")
    return docs.select(range(min(max_docs, len(docs)))) if max_docs else docs


def _dev_evaluator(source: str):
    from st_infocse.evaluation import stsb_dev_evaluator

    if source.lower() == "none":
        return None
    path = Path(source).expanduser()
    if source != "hub" and not path.exists():
        raise CLIError(f"STS-B dev data not found: {source}")
    try:
        return stsb_dev_evaluator(source if source == "hub" else path)
    except OSError as exc:
        raise CLIError(f"cannot load STS-B dev from {source!r}: {exc}".splitlines()[0]) from exc


# ------------------------------------------------------------------------------------------------ losses


def build_loss(model, args: LossArguments, objective: str | None = None):
    from st_infocse import losses

    objective = objective or args.objective
    if objective not in OBJECTIVES:
        raise CLIError(f"unknown objective {objective!r}; choose one of {', '.join(OBJECTIVES)}")
    aux = dict(k=args.k, n=args.n, mask_rate=args.mask_rate, decoder=args.decoder, detach=args.detach)
    aux["fusion_init"] = args.fusion_init
    # Only an explicit --projection overrides the objective's own default head; "none" turns it off.
    head = {} if args.projection is None else {"projection": None if args.projection.lower() == "none" else args.projection}
    if objective == "simcse":
        return losses.SimCSELoss(
            model, temperature=args.temperature, gather_across_devices=args.gather_across_devices, **head
        )
    if objective == "cmlm":
        # The conditional MLM alone (paper 000 Table 5, "w/o contrastive loss").
        return losses.ConditionalMLMLoss(model, **aux)
    if objective == "informin":
        lam = 0.4 if args.lambda_ is None else args.lambda_
        return losses.InforMinReconstructionLoss(
            model,
            lambda_=lam,
            temperature=args.temperature,
            gather_across_devices=args.gather_across_devices,
            **head,
        )
    cls = losses.CMLMCSELoss if objective == "cmlm-cse" else losses.InfoCSELoss
    return cls(
        model,
        lambda_=args.lambda_,
        temperature=args.temperature,
        informin_weight=args.informin_weight,
        **head,
        gather_across_devices=args.gather_across_devices,
        **aux,
    )


def _learning_rate_mapping(loss, args: LossArguments) -> dict[str, float]:
    if args.aux_learning_rate is None:
        return {}
    names = [name for name, _ in loss.named_parameters() if not name.startswith("model.")]
    if not names:
        raise CLIError("--aux_learning_rate given, but this objective has no auxiliary modules")
    return {r"^(?!model\.)": args.aux_learning_rate}


# ---------------------------------------------------------------------------------------------- commands


def _finish_training_args(training_args, evaluator) -> None:
    if evaluator is None:
        training_args.eval_strategy = "no"
        training_args.load_best_model_at_end = False
        training_args.metric_for_best_model = None


def _train(model, loss, dataset, training_args, evaluator):
    from sentence_transformers import SentenceTransformerTrainer

    from st_infocse.training import AuxiliaryStateCallback
    from st_infocse.training.precision import warn_if_slow_bf16

    warn_if_slow_bf16(bool(training_args.bf16), training_args.device.type == "cpu")
    # --max_grad_norm bounds the encoder and the loss's heads/decoder together, as in the papers' trainer.
    auxiliary = AuxiliaryStateCallback(loss, clip_jointly=True)
    trainer = SentenceTransformerTrainer(
        model=model,
        args=training_args,
        train_dataset=dataset,
        loss=loss,
        evaluator=evaluator,
        callbacks=[auxiliary],
    )
    # Reporting integrations (--report_to) receive the logs before user callbacks; going first lets them record
    # the joint grad_norm and the auxiliary metrics this callback adds.
    trainer.callback_handler.callbacks.insert(0, trainer.callback_handler.pop_callback(auxiliary))
    resume = training_args.resume_from_checkpoint
    if isinstance(resume, str) and resume.lower() in ("true", "last"):
        resume = True  # the newest checkpoint-N in output_dir
    elif isinstance(resume, str) and resume.lower() in ("false", "none", ""):
        resume = None
    elif resume is not None and not Path(resume).is_dir():
        raise CLIError(f"--resume_from_checkpoint: no checkpoint folder at {resume}")
    trainer.train(resume_from_checkpoint=resume)
    return trainer


def _summary(title: str, rows: dict[str, Any]) -> None:
    width = max(len(k) for k in rows)
    print(f"\n{title}")
    for key, value in rows.items():
        print(f"  {key.ljust(width)}  {value}")


def cmd_pretrain_aux(argv: Sequence[str]) -> int:
    from st_infocse import losses

    model_args, data_args, loss_args, training_args = _parse(
        [ModelArguments, DataArguments, LossArguments, _training_arguments_class()],
        argv,
        "st-infocse pretrain-aux",
        evaluates=False,
    )
    model = load_model(model_args)
    dataset = load_texts(data_args.train_data, data_args.text_column, data_args.max_train_samples)
    loss = losses.AuxiliaryPretrainingLoss(
        model,
        k=loss_args.k,
        n=loss_args.n or 2,
        mask_rate=loss_args.mask_rate or 0.15,
        fusion_init=loss_args.fusion_init or "fresh",
        tie_head=loss_args.tie_head,
        masking=loss_args.masking,
    )
    training_args.learning_rate_mapping = training_args.learning_rate_mapping or _learning_rate_mapping(loss, loss_args)
    start = time.time()
    trainer = _train(model, loss, dataset, training_args, None)
    out = Path(training_args.output_dir)
    model.save(str(out / "model"))
    loss.save_decoder(out / "decoder")
    history = [entry for entry in trainer.state.log_history if "loss" in entry]
    _summary(
        "Stage-1 auxiliary pre-training done",
        {
            "texts": len(dataset),
            "steps": trainer.state.global_step,
            "last mlm / aux loss": f"{history[-1].get('mlm', float('nan')):.4f} / {history[-1].get('aux', float('nan')):.4f}"
            if history
            else "-",
            "time": f"{time.time() - start:.0f} s",
            "encoder": out / "model",
            "decoder": out / "decoder",
            "next": f"st-infocse train --model {out / 'model'} --decoder {out / 'decoder'}",
        },
    )
    return 0


def cmd_train(argv: Sequence[str]) -> int:
    model_args, data_args, loss_args, training_args = _parse(
        [ModelArguments, DataArguments, LossArguments, _training_arguments_class()], argv, "st-infocse train"
    )
    if loss_args.objective not in OBJECTIVES:
        raise CLIError(f"unknown objective {loss_args.objective!r}; choose one of {', '.join(OBJECTIVES)}")
    evaluator = _dev_evaluator(data_args.stsb_dev)
    _finish_training_args(training_args, evaluator)
    model = load_model(model_args)
    start = time.time()
    if loss_args.objective == "idc":
        return _train_idc(model, loss_args, training_args, evaluator, start)
    dataset = load_texts(data_args.train_data, data_args.text_column, data_args.max_train_samples)
    loss = build_loss(model, loss_args)
    if not training_args.learning_rate_mapping:
        training_args.learning_rate_mapping = _learning_rate_mapping(loss, loss_args)
    trainer = _train(model, loss, dataset, training_args, evaluator)
    out = Path(training_args.output_dir)
    model.save(str(out))
    rows = {"objective": loss_args.objective, "loss": f"{type(loss).__name__} {json.dumps(loss.get_config_dict())}"}
    rows.update(texts=len(dataset), steps=trainer.state.global_step, time=f"{time.time() - start:.0f} s")
    if evaluator is not None and trainer.state.best_metric is not None:
        rows["best STS-B dev"] = f"{100 * trainer.state.best_metric:.2f} ({trainer.state.best_model_checkpoint})"
    rows["model"] = out
    _summary("Training done", rows)
    return 0


def _train_idc(model, loss_args: LossArguments, training_args, evaluator, start: float) -> int:
    from sentence_transformers.sentence_transformer.losses import MultipleNegativesRankingLoss

    from st_infocse.mining import train_idc_rounds

    if not loss_args.docs:
        raise CLIError("--objective idc needs --docs (documents to mine pairs from)")
    if loss_args.idc_loss not in ("mnrl", "infocse"):
        raise CLIError(f"--idc_loss must be mnrl or infocse, got {loss_args.idc_loss!r}")
    documents = load_documents(loss_args.docs)
    if loss_args.idc_loss == "mnrl":
        factory: Callable = lambda m: MultipleNegativesRankingLoss(m, scale=1 / loss_args.temperature)  # noqa: E731
    else:
        factory = lambda m: build_loss(m, loss_args, objective="infocse")  # noqa: E731
    keep = (
        "per_device_train_batch_size",
        "learning_rate",
        "num_train_epochs",
        "max_steps",
        "warmup_steps",
        "seed",
        "logging_steps",
        "bf16",
    )
    overrides = {name: getattr(training_args, name) for name in keep}
    result = train_idc_rounds(
        model,
        documents,
        factory,
        rounds=loss_args.rounds,
        initial_annotation=loss_args.initial_annotation,
        evaluator=evaluator,
        training_args=overrides,
        mining_kwargs={"k": loss_args.idc_k, "similarity": loss_args.idc_similarity},
        output_dir=Path(training_args.output_dir) / "rounds",
        seed=training_args.seed,
    )
    out = Path(training_args.output_dir)
    model.save(str(out))
    print(result)
    _summary("IDC training done", {"documents": len(documents), "time": f"{time.time() - start:.0f} s", "model": out})
    return 0


def cmd_mine(argv: Sequence[str]) -> int:
    from st_infocse.mining import mine_pairs

    model_args, mine_args = _parse([SavedModelArguments, MineArguments], argv, "st-infocse mine")
    if not mine_args.docs:
        raise CLIError("--docs is required")
    documents = load_documents(mine_args.docs, mine_args.max_docs)
    model = load_model(model_args)
    start = time.time()
    mined = mine_pairs(
        documents,
        model,
        k=mine_args.k,
        threshold=mine_args.threshold,
        similarity=mine_args.similarity,
        min_sentences=mine_args.min_sentences,
        max_sentences=mine_args.max_sentences,
        max_pairs_per_cluster=mine_args.max_pairs_per_cluster,
        batch_size=mine_args.batch_size,
        seed=mine_args.seed,
        show_progress_bar=True,
    )
    out = Path(mine_args.output_dir)
    mined.pairs.save_to_disk(str(out / "pairs"))
    report = mined.report.to_dict() if hasattr(mined.report, "to_dict") else asdict(mined.report)
    (out / "report.json").write_text(json.dumps(report, indent=2, default=str) + "\n")
    print(mined.report)
    _summary(
        "Mining done",
        {
            "pairs": len(mined.pairs),
            "time": f"{time.time() - start:.0f} s",
            "dataset": out / "pairs",
            "report": out / "report.json",
        },
    )
    return 0


def cmd_evaluate(argv: Sequence[str]) -> int:
    from st_infocse import evaluation

    model_args, eval_args = _parse([SavedModelArguments, EvaluateArguments], argv, "st-infocse evaluate")
    if not (eval_args.sts or eval_args.beir or eval_args.transfer):
        raise CLIError("nothing to evaluate: give --sts, --beir and/or --transfer")
    for flag, value in (
        ("--sts", eval_args.sts),
        ("--beir_source", eval_args.beir_source if eval_args.beir else None),
        ("--transfer", eval_args.transfer),
    ):
        if value and value not in ("mteb", "hub") and not Path(value).expanduser().exists():
            raise CLIError(f"{flag}: not found: {value}")
    model = load_model(model_args)
    label = Path(model_args.model).name or model_args.model
    results: dict[str, Any] = {}
    try:
        if eval_args.sts:
            results["STS"] = evaluation.evaluate_sts_suite(
                model, eval_args.sts, batch_size=eval_args.batch_size, model_label=label
            )
            print(results["STS"])
        if eval_args.beir:
            results["BEIR"] = evaluation.evaluate_beir(
                model, eval_args.beir, source=eval_args.beir_source, batch_size=eval_args.batch_size, model_label=label
            )
            print(results["BEIR"])
        if eval_args.transfer:
            results["Transfer"] = evaluation.evaluate_transfer(
                model, eval_args.transfer, batch_size=eval_args.batch_size
            )
            print(results["Transfer"])
    except evaluation.DataFormatError as exc:
        raise CLIError(str(exc)) from exc
    written = evaluation.save_report(results, eval_args.output_dir, plots=eval_args.plots)
    _summary("Evaluation done", {kind: path for kind, path in written.items()})
    return 0


COMMANDS: dict[str, tuple[Callable[[Sequence[str]], int], str]] = {
    "pretrain-aux": (cmd_pretrain_aux, "stage 1: pre-train the auxiliary decoder (paper 000 §3.1)"),
    "train": (cmd_train, "train with --objective simcse|infocse|cmlm-cse|informin|idc|cmlm"),
    "mine": (cmd_mine, "mine IDC positive pairs from documents into a dataset on disk"),
    "evaluate": (cmd_evaluate, "STS suite, BEIR and transfer tasks; JSON, markdown and plots"),
}


def _usage() -> str:
    lines = ["usage: st-infocse <command> [flags]   (st-infocse <command> --help for its flags)", "", "commands:"]
    lines += [f"  {name:<13} {help_text}" for name, (_, help_text) in COMMANDS.items()]
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv or argv[0] in ("-h", "--help"):
        print(_usage())
        return 0 if argv else 2
    command, rest = argv[0], argv[1:]
    if command not in COMMANDS:
        print(f"st-infocse: unknown command {command!r}\n\n{_usage()}", file=sys.stderr)
        return 2
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    from st_infocse.modeling import UnsupportedModelError

    try:
        return COMMANDS[command][0](rest)
    except (CLIError, UnsupportedModelError, FileNotFoundError) as exc:
        print(f"st-infocse {command}: error: {exc}", file=sys.stderr)
        return 2
    except ValueError as exc:
        # Our own input checks raise ValueError with a message meant for the user.
        print(f"st-infocse {command}: error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
