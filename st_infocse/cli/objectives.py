"""Each objective of ``st-infocse train`` (and stage 1, ``pretrain-aux``) as one entry: the flag sections it takes,
how its training data is prepared before the model loads, how its loss is built and what it saves (or, for IDC, its
own run of mine -> train rounds). The command follows the entry; nothing else in it names an objective. The losses
and their defaults are the registry's (:mod:`st_infocse.losses.registry`)."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from st_infocse.cli.arguments import DataArguments, KeepArguments, declared, flag_error
from st_infocse.cli.errors import CLIError
from st_infocse.cli.objective_flags import (
    AuxiliaryRateFlags,
    CMLMCSEFlags,
    ConditionalMLMFlags,
    ContrastiveFlags,
    DecoderFlags,
    DecoderWarmupFlags,
    DistillFlags,
    ICTFlags,
    IDCFlags,
    InforMinFlags,
    LoRAFlags,
    MNRLFlags,
    Stage1Flags,
    loss_options,
)
from st_infocse.cli.output import finish_run, summary
from st_infocse.cli.parsing import FlagParser, flag_of
from st_infocse.losses.registry import STAGE1, get_objective
from st_infocse.mining.documents import load_documents
from st_infocse.training.builder import learning_rate_mapping, save_model


@dataclass(frozen=True)
class Entry:
    """One objective: its flag sections, its data and its loss.

    Attributes:
        name: the ``--objective`` value.
        loss_flags: the dataclass of its loss's keyword arguments (None: a loss of sentence-transformers' defaults).
        sections: its other flag sections, in ``--help`` order.
        prepare: ``flags -> data``, before the model loads (a bad file is refused before anything loads): the
            training dataset, or what :attr:`finish` or :attr:`run` trains on (documents, a draw of queries), whose
            length is the run's count of training examples.
        loss: ``(model, flags, dataset) -> loss``, after the model (and :attr:`finish`'s dataset).
        finish: ``(model, flags, data) -> dataset``, where the dataset needs the model as given.
        run: its own run in place of one trainer (IDC's rounds): ``(loaded, flags, measured, data, start)``.
        refused_flags: flags with no meaning for it, refused by name (a trainer's flag or a section's it shares).
        save: ``(model, loss, output_dir, own_length) -> summary rows``, what the run saves (default: the model, at
            its own length).
        title: the run's summary titles (empty: "Training NAME" and "Training done").
    """

    name: str
    loss_flags: type | None
    sections: tuple[type, ...]
    prepare: Callable[[Any], Any]
    loss: Callable[[Any, Any, Any], Any] | None = None
    finish: Callable[[Any, Any, Any], Any] | None = None
    run: Callable[..., int] | None = None
    refused_flags: tuple[str, ...] = ()
    save: Callable[[Any, Any, Path, int | None], dict] = lambda model, loss, out, own: save_model(model, out, own) or {}
    title: str = ""

    @property
    def all(self) -> tuple[type, ...]:
        return (*self.sections, *((self.loss_flags,) if self.loss_flags is not None else ()))


def build_loss(model, objective: str, loss_flags: Any = None):
    """The loss of ``objective`` (or stage 1's) from the registry, given its loss flags (None: the loss's own
    defaults); the registry refuses a name it does not know, or an objective with no loss of its own."""
    entry = STAGE1 if objective == STAGE1.name else get_objective(objective)
    return entry.loss_class()(model, **loss_options(loss_flags))


def add_adapter(model, lora, notes: dict[str, str]) -> None:
    """A LoRA adapter on the model when ``--lora_r`` asks for one (every other weight frozen), named in ``notes`` (the
    summaries'). Every objective that takes the adapter's flags adds it here, IDC's rounds too."""
    if lora is None or not lora.lora_r:
        return
    from st_infocse.training.lora import LoRASettings, add_lora

    settings = LoRASettings(lora.lora_r, lora.lora_alpha, tuple(lora.lora_target_modules), lora.lora_dropout)
    try:
        add_lora(model, settings)
    except ValueError as error:  # a target module no layer has: under --lora_target_modules
        raise flag_error(error, lora) from None
    notes["LoRA adapter"] = settings.describe(model)


def texts(flags) -> Any:
    """The training texts of ``--train_data``, split into sentences with ``--split_sentences``."""
    from st_infocse.training.texts import load_texts

    data = flags.data
    return load_texts(data.train_data, data.text_column, data.max_train_samples, data.split_sentences)


def registry_loss(model, flags, dataset):
    """The objective's loss from the registry, its decoder first warmed up where ``--decoder_warmup_steps`` asks."""
    if flags.warmup is not None and flags.warmup.decoder_warmup_steps is not None:
        from st_infocse.training.probe_decoder import warm_up_decoder

        loss, warmup, args = flags.loss, flags.warmup, flags.trainer
        loss.decoder = str(warm_up_decoder(
            model, dataset["text"], args.output_dir, objective=flags.objective,
            steps=warmup.decoder_warmup_steps, batch_size=args.per_device_train_batch_size,
            learning_rate=warmup.decoder_warmup_learning_rate, seed=args.seed, k=loss.k, n=loss.n,
            mask_rate=loss.mask_rate, fusion_init=loss.fusion_init))
    return build_loss(model, flags.objective, flags.loss)


def context_pairs(flags) -> Any:
    """ICT's training pairs from ``--docs`` (each sentence and the rest of its document); the trainer's batch
    sampler keeps one document's pairs out of each other's batch."""
    from st_infocse.mining import DocumentAwareBatchSampler, context_pairs

    docs = flags.docs
    pairs, report = context_pairs(load_documents(docs))
    print(f"--objective ict: {report.pairs_summary('(sentence, rest of its document) pairs')}")
    if len(pairs) == 0:
        raise CLIError(f"--docs {docs}: no document has two sentences, so ICT has no pair to train on")
    flags.trainer.batch_sampler = DocumentAwareBatchSampler.for_pairs(pairs)
    return pairs.select_columns(["anchor", "positive"])


def pair_loss(model, flags, dataset):
    """sentence-transformers' MultipleNegativesRankingLoss; its scale is 1 / ``--temperature`` where given."""
    from sentence_transformers.sentence_transformer.losses import MultipleNegativesRankingLoss

    temperature = getattr(flags.loss, "temperature", None)
    return MultipleNegativesRankingLoss(model, **({} if temperature is None else {"scale": 1 / temperature}))


def pseudo_queries(flags) -> Any:
    """``--objective distill``'s pseudo-queries from ``--docs``, drawn before the model loads (their count is the
    run's size)."""
    from st_infocse.mining import pseudo_queries

    distill = flags.distill
    drawn = pseudo_queries(load_documents(distill.docs), distill.distill_queries, flags.trainer.seed,
                           max_queries=distill.distill_max_queries)
    print(f"--objective distill: {drawn.summary()}")
    return drawn


def hybrid_teacher(model, flags, drawn):
    """The hybrid teacher's candidates and scores for each pseudo-query, from the model as given."""
    from st_infocse.mining import hybrid_teacher_dataset

    distill, args = flags.distill, flags.trainer
    dataset, report = hybrid_teacher_dataset(
        model, (), distill.distill_queries, distill.distill_loss, distill.distill_candidates,
        flags.lexical.settings(), seed=args.seed, batch_size=args.per_device_eval_batch_size, drawn=drawn,
    )
    print(f"--objective distill: {report.summary()}")
    return dataset


def distillation_loss(model, flags, dataset):
    from st_infocse.mining import distillation_loss

    distill = flags.distill
    return distillation_loss(model, distill.distill_loss, distill.student_temperature, distill.teacher_temperature)


def save_stage1(model, loss, out: Path, own_length: int | None) -> dict:
    """Stage 1 saves the encoder and the decoder apart, for ``train --model OUT/model --decoder OUT/decoder``."""
    save_model(model, out / "model", own_length)
    loss.save_decoder(out / "decoder")
    return {"encoder": out / "model", "decoder": out / "decoder",
            "next": f"st-infocse train --model {out / 'model'} --decoder {out / 'decoder'}"}


def train_idc(loaded, flags, measured, documents, start: float) -> int:
    """IDC's mine -> train rounds on ``--docs`` (on a LoRA adapter with ``--lora_r``); the best round (or the start)
    is saved, the adapter merged into it. Each round trains with the rounds' defaults and every trainer flag given."""
    from st_infocse.mining import train_idc_rounds
    from st_infocse.mining.rounds import document_sample, round_training_args

    model, idc, args, keep = loaded.model, flags.idc, flags.trainer, flags.keep
    factory: Callable = lambda m: flags.entry.loss(m, flags, None)  # noqa: E731
    round_args = round_training_args(args, flags.given, learning_rate_mapping(factory(model), flags.aux_learning_rate))
    docs, sampled = document_sample(documents, idc.idc_max_docs, args.seed)
    anchor = (f"{keep.weight_anchor:g} of each round's change kept (start + {keep.weight_anchor:g} x (trained - "
              "start)), before the round is scored and mines" if keep.weight_anchor < 1 else "")
    folder = Path(args.output_dir) / "rounds"
    summary("IDC training", {
        "documents": sampled or len(docs), **({"round 1 mined by": idc.idc_annotator} if idc.idc_annotator else {}),
        "rounds": f"up to {idc.rounds} (mine -> train)", "model": loaded.how, **measured.notes,
        "each round trains with": ", ".join(f"{name}={value}" for name, value in round_args.items()),
        **({"weight anchor": anchor} if anchor else {}),
        "rounds folder": folder, "max length": loaded.lengths(),
    })
    try:
        result = train_idc_rounds(
            model, docs, factory, rounds=idc.rounds, initial_annotation=idc.initial_annotation,
            evaluator=measured.evaluator, training_args=round_args,
            mining_kwargs={"k": idc.idc_k, "similarity": idc.idc_similarity, "precision": idc.idc_precision},
            output_dir=folder, seed=args.seed, annotator=idc.idc_annotator,
            trust_remote_code=flags.model.trust_remote_code, keep_trained_if=flags.run.keep_trained_if,
            keep_start_if_better=keep.keep_start_if_better, weight_anchor=keep.weight_anchor,
        )
    except ValueError as exc:  # the rounds name the argument that failed (annotator: --idc_annotator)
        raise flag_error(exc, idc, keep) from None
    summary("IDC rounds", result.round_rows())
    rows: dict[str, Any] = {"documents": len(docs), "time": f"{time.time() - start:.0f} s"}
    finish_run(loaded, flags, measured, "IDC training done", rows, {"objective": "idc", "round_arguments": round_args,
                                                                    "rounds": result.to_dict()}, anchor, result)
    return 0


# ------------------------------------------------------------------------------------------------------ entries

_TEXT = (DataArguments, KeepArguments, AuxiliaryRateFlags)


def _sentence(name: str, loss_flags: type, *sections: type) -> Entry:
    return Entry(name, loss_flags, (*_TEXT, *sections, LoRAFlags), texts, registry_loss)


_ROUNDS_OWN = declared("st_infocse.mining.rounds", "ROUNDS_OWN_TRAINER_ARGS")

#: The objectives of ``st-infocse train``, by ``--objective``, and stage 1 (``pretrain-aux``).
ENTRIES: dict[str, Entry] = {
    "simcse": _sentence("simcse", ContrastiveFlags),
    "infocse": _sentence("infocse", ConditionalMLMFlags, DecoderWarmupFlags),
    "cmlm-cse": _sentence("cmlm-cse", CMLMCSEFlags, DecoderWarmupFlags),
    "informin": _sentence("informin", InforMinFlags),
    "cmlm": _sentence("cmlm", DecoderFlags, DecoderWarmupFlags),
    "ict": Entry("ict", None, (ICTFlags, KeepArguments, LoRAFlags), context_pairs, pair_loss),
    "distill": Entry("distill", None, (DistillFlags, KeepArguments, LoRAFlags), pseudo_queries, distillation_loss,
                     finish=hybrid_teacher),
    "idc": Entry("idc", MNRLFlags, (IDCFlags, KeepArguments, LoRAFlags), lambda flags: load_documents(flags.docs),
                 pair_loss, run=train_idc,
                 refused_flags=(*_ROUNDS_OWN, "confirm_share")),  # the rounds decide on all the queries
    STAGE1.name: Entry(STAGE1.name, Stage1Flags, (DataArguments, AuxiliaryRateFlags), texts, registry_loss,
                       save=save_stage1, title="Stage-1 auxiliary pre-training"),
}

#: IDC's pair losses (``--idc_loss``): the entry whose loss flags and loss each takes. With InfoCSE's loss, IDC
#: takes its loss flags and the auxiliary learning rate (its rounds mine their own pairs: no text corpus to warm a
#: decoder on).
IDC_LOSSES: dict[str, Entry] = {
    "mnrl": ENTRIES["idc"],
    "infocse": replace(ENTRIES["idc"], loss_flags=ConditionalMLMFlags,
                       sections=(IDCFlags, KeepArguments, AuxiliaryRateFlags, LoRAFlags),
                       loss=lambda model, flags, dataset: build_loss(model, "infocse", flags.loss)),
}


def entry_of(objective: str, idc_loss: str = "mnrl") -> Entry:
    """The entry of ``objective`` (or ``pretrain-aux``); IDC's depends on its pair loss."""
    return IDC_LOSSES[idc_loss] if objective == "idc" else ENTRIES[objective]


def takers() -> dict[str, str]:
    """Flag (each spelling the parser takes, as a name) -> the objectives that take it, for the line that refuses it."""
    taken: dict[str, list[str]] = {}
    for entry in [*ENTRIES.values(), *IDC_LOSSES.values()]:
        for flag in {flag_of(option) for option in FlagParser(entry.all, "").flags}:
            if entry.name not in taken.setdefault(flag, []):  # IDC once, whichever pair loss takes it
                taken[flag].append(entry.name)
    return {flag: ", ".join(names) for flag, names in taken.items()}
