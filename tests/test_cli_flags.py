"""Every flag of every command, generated from the commands' own dataclasses: each is given a value other than its
default, and that value is looked for where the flag must arrive (the loss, the trainer's arguments, the evaluator,
the miner's and the evaluators' arguments, the model), not in what the command line parsed. A flag declared is
covered at once: its value is derived from its type, unless :data:`VALUES` names one; where it arrives is found by
its name, unless :data:`WHERE` says where to look.
"""

import dataclasses
import json
import math
import typing
from pathlib import Path
from typing import Any

import pytest

from st_infocse.cli import main

from .conftest import random_sentences
from .test_cli import workspace  # noqa: F401 F811 - the fixture of tiny files every command reads

_STOP = "stop here: the command has built what it trains or scores with"

# Values that must name something real, or that the type alone cannot give (paths are relative to the workspace).
VALUES = {
    "model": "{model}", "train_data": "sentences-in-a-column.jsonl", "docs": "docs.jsonl", "text_column": "body",
    "stsb_dev": "downstream", "eval_retrieval": "beir/scifact", "eval_retrieval_split": "dev",
    "eval_retrieval_max_corpus": "15", "output_dir": "out-flags", "decoder": "stage1-decoder", "idc_annotator": "{model}",
    "k": "1", "n": "1", "rounds": "1", "max_seq_length": "24", "lora_target_modules": "query", "lora_r": "2",
    "max_train_samples": "30", "idc_max_docs": "5", "distill_max_queries": "6", "distill_candidates": "3",
    "decoder_warmup_steps": "1", "bm25_language": "german", "max_docs": "7", "max_sentences": "6",
    "max_pairs_per_cluster": "2", "min_sentences": "3", "sts": "downstream", "transfer": "downstream",
    "beir": "scifact", "beir_source": "beir", "split": "dev", "compare": "{model}", "eval_pairs": "5", "batch_size": "8",
    "initial_annotation": "adjacent", "pooling": "mean", "threshold": "-1", "weight_anchor": "0.5",
}
# Flags given together with another flag, which they need to be seen (or allowed).
NEEDS = {"idc_annotator": {"initial_annotation": "model"}, "text_column": {"train_data": "two-columns.jsonl"},
         "keep_start_if_better": {"stsb_dev": "downstream"}, "keep_trained_if": {"stsb_dev": "downstream"}, "decoder": {"decoder_warmup_steps": None},
         "eval_retrieval_split": {"eval_retrieval": "beir/scifact"}, "eval_retrieval_max_corpus": {"eval_retrieval": "beir/scifact"},
         **{name: {"eval_retrieval": "beir/scifact"} for name in ("bm25", "bm25_language", "bm25_stem", "bm25_stopwords",
                                                                  "hybrid_fusion", "hybrid_weight")},
         "bm25_stopwords": {"eval_retrieval": "beir/scifact", "bm25_language": "english"},
         "bm25_stem": {"eval_retrieval": "beir/scifact", "bm25_language": "english"}}
# Flags run on their own: they change what the others of their section would be seen in.
SEPARATE = {"bm25", "decoder", "idc_annotator", "overwrite_output_dir", "split_sentences", "max_train_samples",
            "compare", "text_column", "trust_remote_code"}
# Where a flag's value arrives under another name than its own: captured -> the value that arrived.
WHERE = {
    "model": lambda c: c["load_model"]["source"] if "load_model" in c else c["model"][0].auto_model.config._name_or_path,
    "bm25": lambda c: c["beir"]["lexical"] is None if "beir" in c else
    not any(type(callback).__name__ == "LexicalReferenceCallback" for callback in c["callbacks"]),
    "idc_max_docs": lambda c: len(c["documents"]),
    "weight_anchor": lambda c: c["rounds"]["weight_anchor"] if "rounds" in c else
    next(callback.share for callback in c["callbacks"] if hasattr(callback, "share")),
    "decoder_warmup_learning_rate": lambda c: c["train_probe_decoder"]["learning_rate"],
    "eval_retrieval": lambda c: c["retrieval_evaluator"]["folder"],
    "stsb_dev": lambda c: str(next(iter(c["stsb_dev_evaluator"].values()))),
    "temperature": lambda c: c["loss"].get_config_dict().get("temperature") or 1 / c["loss"].scale,
    "compare": lambda c: c["compared"],
    "train_data": lambda c: c["dataset"]["text"][0] == "line from the given file",
    "text_column": lambda c: c["dataset"]["text"][0] == "line from the given file",
    "output_dir": lambda c: c["args"].output_dir if "args" in c else c["report"]["output_dir"] if "report" in c
    else Path("out-flags/report.json").is_file(),
    "eval_pairs": lambda c: len(getattr(c["evaluator"], "inner", c["evaluator"]).scores),  # the evaluator trained with
    "sts": lambda c: c["sts"]["datasets"], "transfer": lambda c: c["transfer"]["datasets"],
    "beir": lambda c: c["beir"]["datasets"], "verbose": lambda c: c["beir_log_level"] == 20,
    "objective": lambda c: type(c["loss"]).__name__.lower().startswith(c["objective"].replace("-", "")),
    "max_train_samples": lambda c: len(c["dataset"]),
    "split_sentences": lambda c: len(c["dataset"]) > 30,
    "docs": lambda c: c["load_documents"]["source"],
    "max_docs": lambda c: len(c["documents"]),
    "overwrite_output_dir": lambda c: not Path("trained/run_summary.json").exists(),
    "aux_learning_rate": lambda c: list((c["args"].learning_rate_mapping if "args" in c else
                                          c["rounds"]["training_args"]["learning_rate_mapping"]).values())[0],
    "decoder_warmup_steps": lambda c: c["train_probe_decoder"]["steps"],
    "decoder": lambda c: c["loss"].decoder.config.n == 1,  # the saved decoder's, not the preset's
    "lora_r": lambda c: next(iter(c["model"][0].auto_model.peft_config.values())).r,
    "lora_alpha": lambda c: next(iter(c["model"][0].auto_model.peft_config.values())).lora_alpha,
    "lora_dropout": lambda c: next(iter(c["model"][0].auto_model.peft_config.values())).lora_dropout,
    "lora_target_modules": lambda c: sorted(next(iter(c["model"][0].auto_model.peft_config.values())).target_modules),
    "distill_loss": lambda c: type(c["loss"]).__name__ == "MarginMSELoss",
    "distill_queries": lambda c: c["pseudo_queries"]["query_kind"],
    "idc_loss": lambda c: type(c["factory"](c["model"])).__name__ == "InfoCSELoss",
}


def _default(item: dataclasses.Field) -> Any:
    return item.default_factory() if item.default is dataclasses.MISSING else item.default


def value_for(item: dataclasses.Field, kind: type, own_defaults: dict[str, str]) -> str:
    """A value other than the flag's default, as typed on a command line."""
    if item.name in VALUES:
        return VALUES[item.name]
    kind = next((arg for arg in typing.get_args(kind) if arg is not type(None)), kind) if typing.get_origin(kind) in (
        typing.Union, getattr(__import__("types"), "UnionType", None)) else kind
    default = _default(item)
    own = own_defaults.get(item.name)  # a loss flag's None is "the loss's own": differ from that
    if kind is bool:
        return "true" if (own == "False" if own is not None else not default) else "false"
    if typing.get_origin(kind) is typing.Literal:
        return next(str(c) for c in typing.get_args(kind) if c != default and repr(c) != own and c != "none")
    if kind is int:
        return str((default or 0) + 2)
    if kind is float:
        return "0.37" if default != 0.37 else "0.41"
    raise AssertionError(f"--{item.name}: give it a value in VALUES (type {kind})")


def sections_of(command: str, objective: str | None = None, idc_loss: str = "mnrl") -> list[type]:
    """The dataclasses a command reads, as the command itself names them."""
    if command in ("train", "pretrain-aux"):
        from st_infocse.cli.training_flags import command_sections

        return command_sections(command, objective or "pretrain-aux", idc_loss)
    module = __import__(f"st_infocse.cli.{command}", fromlist=["SECTIONS"])
    return list(module.SECTIONS)


def every_flag(sections: list[type]) -> dict[str, str]:
    flags: dict[str, str] = {}
    for dtype in sections:
        hints = typing.get_type_hints(dtype)
        for item in dataclasses.fields(dtype):
            flags.setdefault(item.name, value_for(item, hints[item.name], getattr(dtype, "loss_defaults", {})))
    return flags


def _walk(obj: Any, key: str, depth: int, seen: set[int]):
    """(name, value) of every attribute, key and list item under ``obj``, a few levels deep."""
    yield key, obj
    if depth > 4 or id(obj) in seen or isinstance(obj, (str, bytes, int, float, bool, type(None), Path)):
        return
    seen.add(id(obj))
    if isinstance(obj, dict):
        items = list(obj.items())
    elif isinstance(obj, (list, tuple, set, frozenset)):
        items = [(key, item) for item in list(obj)[:20]]
    elif hasattr(obj, "get_config_dict"):
        items = list(obj.get_config_dict().items()) + [(k, v) for k, v in vars(obj).items() if not k.startswith("_")]
        items += list(getattr(obj, "_modules", {}).items())
    elif hasattr(obj, "__dict__") and not isinstance(obj, type) and type(obj).__module__.split(".")[0] in (
            "st_infocse", "sentence_transformers", "transformers", "tests", "functools"):
        items = [(k.lstrip("_"), v) for k, v in vars(obj).items() if k not in ("_parameters", "_buffers")]
    else:
        return
    for name, value in items:
        yield from _walk(value, str(name), depth + 1, seen)


def _find(captured: dict, flag: str, given: str) -> bool:
    """Whether ``given`` arrived under the flag's name (or the name it ends with: ``--bm25_stem`` -> ``stem``)."""
    parts = flag.rstrip("_").split("_")
    names = {flag, *("_".join(parts[i:]) for i in range(len(parts)))}
    return any(name in names and _matches(value, given) for name, value in _walk(captured, "", 0, set()))


def _matches(found: Any, given: str) -> bool:
    if isinstance(found, (list, tuple, set)):
        return any(_matches(item, given) for item in found) or ",".join(map(str, found)) == given.replace(" ", ",")
    if isinstance(found, bool) or given in ("true", "false"):
        return str(found).lower() == given
    try:
        return math.isclose(float(found), float(given), rel_tol=1e-6)
    except (TypeError, ValueError):
        return str(found) == given or (given not in ("", ".") and Path(str(found)).name == Path(given).name)


class _Stop(Exception):
    """Raised where the command hands its objects to the library: nothing is trained."""


def _capture(monkeypatch) -> dict:
    """Spies where each command hands over what it built; the command stops there (train, pretrain-aux, mine, demo)
    or runs on with stand-in results (evaluate)."""
    import logging

    import st_infocse.cli.train as cli_train
    import st_infocse.evaluation as evaluation
    import st_infocse.mining as mining
    import st_infocse.training as training

    captured: dict = {"evaluated": []}

    def trainer(model, loss, dataset, training_args, evaluator=None, callbacks=()):
        captured.update(model=model, loss=loss, dataset=dataset, args=training_args, evaluator=evaluator,
                        callbacks=list(callbacks))
        raise _Stop

    def rounds(model, documents, factory, **kwargs):
        captured.update(model=model, documents=documents, factory=factory, rounds=kwargs, loss=factory(model))
        raise _Stop

    real_mine = mining.mine_pairs

    def mine(documents, model, **kwargs):
        captured.update(documents=list(documents), model=model, mining=kwargs)
        return real_mine(documents, model, **kwargs)

    def scored(kind):
        def run(model, what, **kwargs):
            captured["evaluated"].append(model)
            captured[kind] = {"datasets": what, **kwargs}
            captured["beir_log_level"] = logging.getLogger("beir").level
            return kind
        return run

    def report(results, out_dir, plots=True, settings=None, **kwargs):
        captured["report"] = {"output_dir": out_dir, "plots": plots, "settings": settings}
        return {"json": Path(out_dir) / "evaluation.json"}

    def compare(other, results):
        captured["compared"] = captured["evaluated"][-1][0].auto_model.config._name_or_path
        raise _Stop

    def spy(module, name):
        import inspect

        real = getattr(module, name)

        def call(*args, **kwargs):
            bound = inspect.signature(real).bind(*args, **kwargs)
            captured[name] = dict(bound.arguments)
            return real(*args, **kwargs)

        monkeypatch.setattr(module, name, call)

    import st_infocse.cli.mine as cli_mine
    import st_infocse.cli.objectives as cli_objectives
    import st_infocse.evaluation.run_evaluators as run_evaluators
    import st_infocse.training.builder as builder
    import st_infocse.training.probe_decoder as probe_decoder

    spy(builder, "load_model")
    spy(cli_objectives, "load_documents")
    spy(cli_mine, "load_documents")
    for name in ("pseudo_queries", "hybrid_teacher_dataset", "distillation_loss"):
        spy(mining, name)
    spy(probe_decoder, "train_probe_decoder")  # as the decoder warm-up calls it
    spy(run_evaluators, "retrieval_evaluator")
    spy(run_evaluators, "stsb_dev_evaluator")
    monkeypatch.setattr(cli_train, "run_trainer", trainer)
    monkeypatch.setattr(mining, "train_idc_rounds", rounds)
    monkeypatch.setattr(mining, "mine_pairs", mine)
    monkeypatch.setattr(training, "build_trainer", lambda m, loss, d, args, ev: trainer(m, loss, d, args, ev))
    for kind, name in (("sts", "evaluate_sts_suite"), ("beir", "evaluate_beir"), ("transfer", "evaluate_transfer")):
        monkeypatch.setattr(evaluation, name, scored(kind))
    monkeypatch.setattr(evaluation, "save_report", report)
    monkeypatch.setattr(evaluation, "compare_results", compare)
    return captured


@pytest.fixture
def flag_workspace(workspace, monkeypatch):  # noqa: F811 - the fixture imported above
    root = workspace["root"]
    (root / "sentences-in-a-column.jsonl").write_text(
        "".join(json.dumps({"body": "line from the given file", "other": 1}) + "\n" for _ in range(40)))
    (root / "two-columns.jsonl").write_text(
        "".join(json.dumps({"body": "line from the given file", "text": "another line"}) + "\n" for _ in range(40)))
    (root / "long.txt").write_text("".join(f"{s}. {s}. {s}.\n" for s in random_sentences(40)))
    beir = root / "beir" / "scifact"
    (beir / "qrels" / "dev.tsv").write_text((beir / "qrels" / "test.tsv").read_text())
    (root / "docs.jsonl").write_text("".join(
        json.dumps({"id": f"d{i}", "title": f"title {i}", "sentences": random_sentences(5, seed=i)}) + "\n"
        for i in range(12)))
    from sentence_transformers import SentenceTransformer

    from st_infocse.losses import InfoCSELoss

    # a trained decoder's stand-in, of a shape the presets never give (n=1)
    InfoCSELoss(SentenceTransformer(str(workspace["model"]), device="cpu"), k=1, n=1).decoder.save_pretrained(
        root / "stage1-decoder")
    monkeypatch.chdir(root)
    return workspace


_ONE_STEP = ["--max_steps", "1", "--per_device_train_batch_size", "4", "--use_cpu", "true"]


def _base(command: str, objective: str | None, model: Path) -> list[str]:
    if command == "mine":
        return ["mine", "--model", str(model), "--docs", "docs.jsonl", "--output_dir", "mined"]
    if command == "evaluate":
        return ["evaluate", "--model", str(model), "--sts", "downstream", "--beir", "scifact", "--beir_source", "beir",
                "--output_dir", "scored"]
    if command == "demo":
        return ["demo", "--model", str(model), "--eval_pairs", "4", "--output_dir", "demo-out"]
    common = ["--model", str(model), "--output_dir", "trained", *_ONE_STEP]
    if command == "pretrain-aux":
        return ["pretrain-aux", "--train_data", "sentences.txt", *common]
    name, _, idc_loss = objective.partition(" ")
    data = ["--docs", "docs.jsonl"] if name in ("idc", "ict", "distill") else ["--train_data", "sentences.txt"]
    return ["train", "--objective", name, *(["--idc_loss", idc_loss] if idc_loss else []), "--stsb_dev", "none",
            *data, *common]


def _cases():
    """(command, objective, section): one run per section of each command, the shared sections of train once per
    code path that reads them (a sentence objective, IDC's rounds, distillation)."""
    from st_infocse.cli.objectives import ENTRIES

    shared_by = {"simcse", "idc", "distill"}
    for objective in [*ENTRIES, "idc infocse"]:
        name, _, idc_loss = objective.partition(" ")
        command = "pretrain-aux" if name == "pretrain-aux" else "train"
        for dtype in sections_of(command, name, idc_loss or "mnrl"):
            own = dtype.__module__.endswith("objective_flags") or name in shared_by or command == "pretrain-aux"
            if own and not (dtype.__name__ == "ObjectiveArguments" and name != "simcse"):
                yield command, objective, dtype
    for command in ("mine", "evaluate", "demo"):
        for dtype in sections_of(command):
            yield command, None, dtype


def _argv(base: list[str], flags: dict[str, str]) -> list[str]:
    argv = list(base)
    for flag, value in flags.items():
        if f"--{flag}" in argv:  # the base's value replaced by the one under test
            index = argv.index(f"--{flag}")
            del argv[index:index + 2]
        if value is not None:
            argv += [f"--{flag}", *value.split(" ")]
    return argv


@pytest.mark.parametrize(("command", "objective", "section"), list(_cases()),
                         ids=lambda v: getattr(v, "__name__", v))
def test_every_flag_arrives_where_it_is_used(flag_workspace, command, objective, section, monkeypatch, capsys):
    """Each of the section's flags, at a value other than its default, is found in what the command built."""
    model = flag_workspace["model"]
    flags = every_flag([section])
    values = {flag: value.replace("{model}", str(model)) for flag, value in flags.items()}
    base = _base(command, objective, model)
    if objective == "distill":
        values.pop("bm25", None)  # refused: the teacher is BM25 (a test of its own)
    if (objective or "").startswith("idc"):
        values.pop("confirm_share", None)  # refused: IDC's rounds decide on all the queries (a test of its own)
    groups = [{flag: value} for flag, value in values.items() if flag in SEPARATE] + [
        {flag: value for flag, value in values.items() if flag not in SEPARATE}]
    missing = []
    captured = _capture(monkeypatch)
    for group in [g for g in groups if g]:
        takes = set(every_flag(sections_of(command, *(objective.split(" ") if objective else ()))))
        extra = {k: v for flag in group for k, v in NEEDS.get(flag, {}).items() if k in takes}
        captured.clear()
        captured.update(evaluated=[], objective=(objective or "").split(" ")[0])
        captured["objective"] = (objective or "").split(" ")[0]
        code = None
        if "overwrite_output_dir" in group:  # an earlier run, which the flag removes
            (flag_workspace["root"] / "trained").mkdir(exist_ok=True)
            (flag_workspace["root"] / "trained" / "run_summary.json").write_text("{}")
        try:
            code = main(_argv(base, {**extra, **group}))
        except _Stop:
            pass
        assert code in (None, 0), (group, capsys.readouterr().err)
        for flag, given in group.items():
            where = WHERE.get(flag)
            try:
                ok = where(captured) if where is not None else None
                ok = _find(captured, flag, given) if ok is None else ok
            except (KeyError, AttributeError, TypeError, IndexError, StopIteration) as error:
                ok = False
                print(flag, repr(error), sorted(captured))  # the reason, in the failure's output
            if not (ok is True or (ok is not False and _matches(ok, given))):
                missing.append(f"--{flag} {given}")
    assert not missing, f"{command} {objective or ''}: not found where they are used: {missing}"
