"""``st-infocse train``: one objective on training text, or IDC's mine -> train rounds on documents.

    st-infocse train --objective infocse --model stage1/model --decoder stage1/decoder --output_dir out
    st-infocse train --recipe infocse-bert-base --train_data wiki1m_for_simcse.txt --output_dir out
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Sequence
from pathlib import Path

from st_infocse.cli.errors import CLIError
from st_infocse.cli.evaluators import (
    kept_line,
    lexical_reference_callback,
    lexical_reference_rows,
    run_evaluation,
    worse_at_end,
    write_run_summary,
)
from st_infocse.cli.inputs import (
    apply_weight_anchor,
    check_earlier_run,
    check_planned_steps,
    finish_training_args,
    model_from_args,
    text_source,
)
from st_infocse.cli.interrupt import Interrupted
from st_infocse.cli.objectives import build_loss, learning_rate_mapping, warm_up_decoder
from st_infocse.cli.output import lengths, start_summary, summary
from st_infocse.cli.parsing import asks_for_help, read_sources
from st_infocse.cli.training_flags import TrainingFlags, read_training_flags
from st_infocse.mining.documents import load_documents
from st_infocse.recipes import format_recipe_list
from st_infocse.training.builder import save_model
from st_infocse.training.texts import count_long_texts, load_texts

__all__ = ["cmd_train", "run_trainer"]

NOT_MEASURED = "not measured (no evaluator: --stsb_dev none and no --eval_retrieval)"


def run_trainer(model, loss, dataset, training_args, evaluator, callbacks=()):
    """Train ``loss`` on ``dataset`` through the package's trainer builder, resuming where ``--resume_from_checkpoint``
    says; returns the trainer."""
    from st_infocse.cli.interrupt import interrupt_callback, interruptible
    from st_infocse.training.builder import build_trainer

    trainer = build_trainer(model, loss, dataset, training_args, evaluator)
    for callback in callbacks:
        trainer.add_callback(callback)
    interrupt = interrupt_callback()
    trainer.add_callback(interrupt)
    resume = training_args.resume_from_checkpoint
    if isinstance(resume, str) and resume.lower() in ("true", "last"):
        resume = True  # the newest checkpoint-N in output_dir
    elif isinstance(resume, str) and resume.lower() in ("false", "none", ""):
        resume = None
    elif resume is not None and not Path(resume).is_dir():
        raise CLIError(f"--resume_from_checkpoint: no checkpoint folder at {resume}")
    with interruptible(interrupt):
        trainer.train(resume_from_checkpoint=resume)
    return trainer


def cmd_train(argv: Sequence[str]) -> int:
    sources = read_sources(argv, "st-infocse train", recipes=True) if not asks_for_help(argv) else None
    if sources is not None and sources.recipe == "list":
        print(format_recipe_list())
        return 0
    flags = read_training_flags(argv, "train", sources)
    if flags is None:  # --help
        return 0
    training_args, objective = flags.trainer, flags.objective
    if flags.idc is not None:
        documents = load_documents(flags.docs)
        dataset = None
    elif flags.ict is not None:
        dataset, training_args.batch_sampler = context_dataset(flags.docs)
    elif flags.distill is not None:
        dataset, drawn = None, draw_pseudo_queries(flags.distill, training_args.seed)
    else:
        dataset = load_texts(text_source(flags.data.train_data), flags.data.text_column,
                             flags.data.max_train_samples)
        if flags.data.split_sentences:
            dataset = sentences_of(dataset)
    measured = run_evaluation(flags.run, training_args, flags.given)
    check_keep_rule(flags, measured)
    lexical = reference_settings(flags, measured)
    finish_training_args(training_args, measured.evaluator)
    anchor = None
    if flags.idc is None:
        steps = check_planned_steps(len(dataset) if dataset is not None else len(drawn.queries), training_args)
        anchor = apply_weight_anchor(flags.keep.weight_anchor, training_args, steps, flags.given)
    replaced = check_earlier_run(training_args.output_dir, training_args.resume_from_checkpoint,
                                 flags.output.overwrite_output_dir)
    loaded = model_from_args(flags.model, training_args.seed)
    model, own_length = loaded.model, loaded.own_length
    measured.for_model(model, training_args, own_length)
    start = time.time()
    if flags.idc is not None:
        return _train_idc(loaded, documents, flags, measured, start)
    adapter = add_adapter(model, flags.lora)
    if adapter:
        measured.notes["LoRA adapter"] = adapter
    if flags.distill is not None:
        dataset = distillation_dataset(model, drawn, flags, training_args)
    # ICT's and distillation's long side is the document: that is what the training length cuts.
    documents_side = flags.ict is not None or flags.distill is not None
    texts = dataset["positive"] if documents_side else dataset["text"]
    lengths_report = count_long_texts(model.tokenizer, texts, model.max_seq_length, seed=training_args.seed)
    cut = lengths_report.message(already_split=documents_side or flags.data.split_sentences)
    if flags.warmup is not None and flags.warmup.decoder_warmup_steps is not None:
        flags.loss.decoder = warm_up_decoder(model, dataset["text"], flags.loss, flags.warmup, objective,
                                             training_args.per_device_train_batch_size, training_args.seed,
                                             training_args.output_dir)
    if flags.distill is not None:
        from st_infocse.mining import distillation_loss

        loss = distillation_loss(model, flags.distill.distill_loss, flags.distill.student_temperature,
                                 flags.distill.teacher_temperature)
    else:
        loss = build_loss(model, objective, flags.loss)
    if not training_args.learning_rate_mapping:
        training_args.learning_rate_mapping = learning_rate_mapping(loss, flags.aux_learning_rate)
    start_summary(f"Training {objective}", len(dataset), training_args, model.max_seq_length, own_length,
                  {"model": loaded.how, **measured.notes, **({"texts cut": cut} if cut else {}),
                   **({"output folder": replaced} if replaced else {}),
                   **({"weight anchor": anchor} if anchor else {})})
    from st_infocse.training.snapshot import StartingWeights

    callbacks, ends, start_weights = [], None, StartingWeights()  # one copy of the start for both callbacks
    if measured.evaluator is not None:
        from st_infocse.training.start_end import StartEndCallback

        ends = StartEndCallback(measured.evaluator, keep_start_if_better=flags.keep.keep_start_if_better, log=False,
                                keep_trained_if=flags.run.keep_trained_if, start_weights=start_weights)
        callbacks.append(ends)
    if lexical is not None and ends is not None:  # after StartEndCallback: its start evaluation leaves the hits
        references = lexical_reference_callback(measured.retrieval, lexical)
        callbacks.append(references)
    if anchor:
        from st_infocse.training.anchor import WeightAnchorCallback

        callbacks.append(WeightAnchorCallback(flags.keep.weight_anchor, start_weights=start_weights))
    try:
        trainer = run_trainer(model, loss, dataset, training_args, measured.evaluator, callbacks)
    except Interrupted as stop:
        print(stop.line(training_args.output_dir))
        return 130
    out = Path(training_args.output_dir)
    training_length = model.max_seq_length
    if adapter:
        from st_infocse.training.lora import merge_lora

        merge_lora(model)  # the user's modules, with the adapter's change folded into the weights it adapted
    save_model(model, out, own_length)
    rows = {"objective": objective, "loss": f"{type(loss).__name__} {json.dumps(loss.get_config_dict())}"}
    rows.update(texts=len(dataset), steps=trainer.state.global_step, time=f"{time.time() - start:.0f} s")
    record: dict = {"objective": objective, "model": loaded.how, "steps": trainer.state.global_step}
    if anchor:
        rows["weight anchor"] = anchor
        record["weight_anchor"] = flags.keep.weight_anchor
    if adapter:
        rows["LoRA adapter"] = f"{adapter}; merged into the saved model"
        record["lora"] = {"r": flags.lora.lora_r, "alpha": flags.lora.lora_alpha,
                          "target_modules": flags.lora.lora_target_modules}
    warnings: list[str] = []
    if ends is not None:
        result = ends.result
        rows.update(result.rows(measured.labels))
        rows["saved"] = kept_line(result)
        warnings = worse_at_end(measured.labels, result.start, result.end)
        record["start_end"] = result.to_dict()
        record["saved"] = rows["saved"]
        if lexical is not None:
            reference_rows, record["lexical_references"] = lexical_reference_rows(references, lexical.describe())
            rows.update(reference_rows)
    else:
        rows["start -> end"] = NOT_MEASURED
    rows["max length"] = lengths(training_length, own_length)
    rows["model"] = out
    record["max_seq_length"] = {"training": training_length, "saved": own_length}
    rows["run summary"] = write_run_summary(out, record)
    summary("Training done", rows)
    for line in warnings:
        print(line)
    return 0


def add_adapter(model, lora) -> str:
    """A LoRA adapter on the model when ``--lora_r`` asks for one (every other weight frozen); what it is, for the
    summaries, or "" without one."""
    if lora is None or not lora.lora_r:
        return ""
    from st_infocse.training.lora import LoRASettings, add_lora, lora_parameters

    settings = LoRASettings(r=lora.lora_r, alpha=lora.lora_alpha, target_modules=tuple(lora.lora_target_modules),
                            dropout=lora.lora_dropout)
    try:
        adapted = add_lora(model, settings)
    except ValueError as error:
        raise CLIError(f"--lora_target_modules: {error}") from None
    trained = sum(p.numel() for _, p in lora_parameters(model))
    total = sum(p.numel() for p in model.parameters())
    return (f"rank {settings.r}, alpha {settings.alpha:g} on {len(adapted)} layers "
            f"({', '.join(settings.target_modules)}); {trained:,} of {total:,} weights train")


def reference_settings(flags: TrainingFlags, measured):
    """BM25's settings for the reference lines beside ``--eval_retrieval`` (None without it, with ``--bm25 false``,
    or without ``bm25s``, which a note in the start-up summary then names)."""
    import importlib.util

    if flags.lexical is None or measured.retrieval is None or not flags.lexical.bm25:
        return None
    if importlib.util.find_spec("bm25s") is None or importlib.util.find_spec("Stemmer") is None:
        if "bm25" in flags.typed:
            raise CLIError("--bm25 true needs bm25s and PyStemmer: pip install 'st-infocse[eval]'")
        measured.notes["BM25 beside the scores"] = "not scored: pip install 'st-infocse[eval]' (bm25s, PyStemmer)"
        return None
    settings = flags.lexical.settings()
    measured.notes["BM25 beside the scores"] = settings.describe()
    return settings


def draw_pseudo_queries(distill, seed: int):
    """``--objective distill``'s pseudo-queries from ``--docs``, drawn before the model loads (their count is the
    run's size)."""
    from st_infocse.mining import pseudo_queries

    drawn = pseudo_queries(load_documents(distill.docs), distill.distill_queries, seed,
                           max_queries=distill.distill_max_queries)
    skipped = ", ".join(f"{reason}={n:,}" for reason, n in sorted(drawn.skipped.items()) if n)
    print(f"--objective distill: {len(drawn.queries):,} {distill.distill_queries} pseudo-queries over "
          f"{len(drawn.corpus):,} documents" + (f"; skipped documents: {skipped}" if skipped else ""))
    if len(drawn.queries) == 0:
        raise CLIError(f"--docs {distill.docs}: no document gave a {distill.distill_queries} pseudo-query")
    return drawn


def distillation_dataset(model, drawn, flags: TrainingFlags, training_args):
    """The hybrid teacher's candidates and scores for each pseudo-query, from the model as given."""
    from st_infocse.mining import hybrid_teacher_dataset

    distill = flags.distill
    dataset, report = hybrid_teacher_dataset(
        model, (), distill.distill_queries, distill.distill_loss, distill.distill_candidates,
        flags.lexical.settings(), seed=training_args.seed, batch_size=training_args.per_device_eval_batch_size,
        drawn=drawn,
    )
    print(f"--objective distill: {report.summary()}")
    return dataset


def context_dataset(docs: str):
    """ICT's training pairs from ``--docs`` (each sentence and the rest of its document) and the batch sampler that
    keeps one document's pairs out of each other's batch."""
    from st_infocse.mining import DocumentAwareBatchSampler, context_pairs

    pairs, report = context_pairs(load_documents(docs))
    reasons = ", ".join(f"{reason}={n:,}" for reason, n in sorted(report.skipped.items()) if n)
    print(f"--objective ict: {report.documents_used:,} documents -> {len(pairs):,} (sentence, rest of its document) "
          f"pairs" + (f"; skipped {report.documents_skipped:,} documents ({reasons})" if reasons else ""))
    if len(pairs) == 0:
        raise CLIError(f"--docs {docs}: no document has two sentences, so ICT has no pair to train on")
    return pairs.select_columns(["anchor", "positive"]), DocumentAwareBatchSampler.for_pairs(pairs)


def sentences_of(dataset):
    """The training texts split into sentences (the splitter IDC mining uses), in order."""
    from datasets import Dataset

    from st_infocse.mining.sentences import split_sentences

    sentences = [sentence for text in dataset["text"] for sentence in split_sentences(text)]
    print(f"--split_sentences: {len(dataset):,} texts -> {len(sentences):,} sentences")
    return Dataset.from_dict({"text": sentences})


def idc_round_arguments(given: frozenset[str], training_args) -> dict:
    """The trainer arguments each IDC round receives: paper 002's round defaults (``DEFAULT_TRAINING_ARGS``), then
    every trainer flag given (``given``: the flags set), as parsed."""
    from dataclasses import fields

    from st_infocse.mining.rounds import DEFAULT_TRAINING_ARGS

    trainer_fields = {item.name for item in fields(training_args) if item.init}
    given = (given & trainer_fields) - {"output_dir"}  # each round has its own folder under it
    return {**DEFAULT_TRAINING_ARGS, "seed": training_args.seed, **{name: getattr(training_args, name) for name in sorted(given)}}


def idc_documents(documents, size: int | None, seed: int):
    """A ``seed`` sample of ``size`` documents, in their order (``--idc_max_docs``), and how it was drawn (None: all)."""
    import random

    if size is None or len(documents) <= size:
        return documents, None
    kept = sorted(random.Random(seed).sample(range(len(documents)), size))
    chosen = documents.select(kept) if hasattr(documents, "select") else [documents[i] for i in kept]
    return chosen, f"{size:,} of {len(documents):,} (a --seed {seed} sample, --idc_max_docs)"


def check_keep_rule(flags: TrainingFlags, measured) -> None:
    """``--keep_trained_if reliable`` judges the gain over the queries (pairs) of the checkpoint metric: refused, before
    the model loads, when nothing measures the run, when the start is never restored, or when the checkpoint metric
    is not one whose evaluator keeps per-query scores (retrieval nDCG@10, STS-B dev)."""
    run_args, training_args = flags.run, flags.trainer
    if run_args.keep_trained_if != "reliable":
        return
    if measured.evaluator is None:
        raise CLIError("--keep_trained_if reliable judges the gain on your queries: give --eval_retrieval (or "
                       "--stsb_dev)")
    if flags.keep is not None and not flags.keep.keep_start_if_better:
        raise CLIError("--keep_trained_if reliable chooses between the start and the trained model, which "
                       "--keep_start_if_better false turns off; drop one of them")
    from st_infocse.evaluation import STSB_DEV_METRIC

    metric = training_args.metric_for_best_model
    if metric and not (metric.removeprefix("eval_") == STSB_DEV_METRIC.removeprefix("eval_")
                       or metric.endswith("ndcg@10")):
        raise CLIError(f"--keep_trained_if reliable needs per-query scores for --metric_for_best_model {metric}: "
                       f"only retrieval nDCG@10 and {STSB_DEV_METRIC} keep them")


def _train_idc(loaded, documents, flags: TrainingFlags, measured, start: float) -> int:
    from sentence_transformers.sentence_transformer.losses import MultipleNegativesRankingLoss

    from st_infocse.mining import train_idc_rounds

    model, own_length = loaded.model, loaded.own_length
    idc, training_args = flags.idc, flags.trainer
    round_args = idc_round_arguments(flags.given, training_args)
    if idc.idc_loss == "mnrl":
        temperature = flags.loss.temperature  # MultipleNegativesRankingLoss's scale is its inverse
        scale = {} if temperature is None else {"scale": 1 / temperature}  # None: the loss's own scale, 20
        factory: Callable = lambda m: MultipleNegativesRankingLoss(m, **scale)  # noqa: E731
    else:
        factory = lambda m: build_loss(m, "infocse", flags.loss)  # noqa: E731
        if "learning_rate_mapping" not in round_args:  # the auxiliary modules' own rate, named as one loss names them
            mapping = learning_rate_mapping(factory(model), flags.aux_learning_rate)
            if mapping:
                round_args["learning_rate_mapping"] = mapping
    documents, sampled = idc_documents(documents, idc.idc_max_docs, training_args.seed)
    annotator = None
    if idc.idc_annotator is not None:  # mines at its own length, with its own modules
        from st_infocse.training.builder import load_model

        try:
            annotator = load_model(idc.idc_annotator, trust_remote_code=flags.model.trust_remote_code).model
        except OSError as exc:
            raise CLIError(f"--idc_annotator: cannot load {idc.idc_annotator}: {exc}") from None
    summary(
        "IDC training",
        {
            "documents": len(documents) if not sampled else sampled,
            **({"round 1 mined by": idc.idc_annotator} if annotator is not None else {}),
            "rounds": f"up to {idc.rounds} (mine -> train)",
            "model": loaded.how,
            **measured.notes,
            "each round trains with": ", ".join(f"{name}={value}" for name, value in round_args.items()),
            "rounds folder": Path(training_args.output_dir) / "rounds",
            "max length": lengths(model.max_seq_length, own_length),
        },
    )
    result = train_idc_rounds(
        model,
        documents,
        factory,
        rounds=idc.rounds,
        initial_annotation=idc.initial_annotation,
        evaluator=measured.evaluator,
        training_args=round_args,
        mining_kwargs={"k": idc.idc_k, "similarity": idc.idc_similarity},
        output_dir=Path(training_args.output_dir) / "rounds",
        seed=training_args.seed,
        annotator=annotator,
        keep_trained_if=flags.run.keep_trained_if,
    )
    out = Path(training_args.output_dir)
    training_length = model.max_seq_length
    save_model(model, out, own_length)
    print(result)
    rows: dict = {"documents": len(documents), "time": f"{time.time() - start:.0f} s"}
    record: dict = {"objective": "idc", "model": loaded.how, "round_arguments": round_args, "rounds": result.to_dict()}
    warnings: list[str] = []
    if result.initial_metrics is not None:
        initial = {f"eval_{key}": value for key, value in result.initial_metrics.items()}
        # the trained candidate (best round, else the last) against the start; "saved" says which was kept
        final = {f"eval_{key}": value for key, value in (result.trained_metrics or {}).items()}
        changes = {f"eval_{key}": change for key, change in result.changes.items()}
        from st_infocse.training.start_end import start_end_rows

        rows.update(start_end_rows(measured.labels, initial, final, changes))
        if result.keep_trained_if == "reliable" and result.best_round == 0:
            rows["saved"] = ("the starting model: no round's gain was reliable over your queries "
                             "(--keep_trained_if reliable)")
        else:
            rows["saved"] = ("the starting model: no round beat it" if result.best_round == 0
                             else f"the weights of round {result.best_round}")
        warnings = worse_at_end(measured.labels, initial, final)
    else:
        rows["start -> end"] = NOT_MEASURED
    rows["max length"] = lengths(training_length, own_length)
    rows["model"] = out
    rows["run summary"] = write_run_summary(out, record)
    summary("IDC training done", rows)
    for line in warnings:
        print(line)
    return 0
