"""The command line's own flags: one dataclass per ``--help`` section (``_argument_group_name`` titles it) of the
model, the data, the run's measurement, the output folder, mining and evaluation. The objectives' flags are in
:mod:`~st_infocse.cli.objective_flags`, and :mod:`~st_infocse.cli.parsing` reads them all.

A field is declared with :func:`flag` (its default and help), or read by :func:`derived` from the signature and
docstring of the library function it reaches; a section's ``bounds`` (field -> (low, high, low included, high
included), why) are refused by :class:`Checked` under the flag's name when the section is built.
"""

# No ``from __future__ import annotations``: HfArgumentParser resolves these annotations (the Literal choices).
import ast
import contextlib
import functools
import re
from dataclasses import Field, dataclass, field, fields, make_dataclass
from typing import Any, Literal

import griffe

from st_infocse.cli.errors import CLIError
from st_infocse.evaluation.bm25_language import check_language
from st_infocse.files import out_of_range
from st_infocse.mining.documents import DOCUMENT_FORMATS
from st_infocse.training.texts import TEXT_FORMATS

WIKI1M = "hf://datasets/princeton-nlp/datasets-for-simcse/wiki1m_for_simcse.txt"
BUNDLED = "demo"  # --train_data demo / --stsb_dev demo: the data shipped in st_infocse/data
AT_LEAST_1, POSITIVE = (1, None, True, False), (0, None, False, False)  # the commonest bounds
DOCUMENTS = "st_infocse.mining.documents:load_documents"  # --docs (and mine's --max_docs) of every command
DOCS_HELP = f"Documents: {DOCUMENT_FORMATS}."


def flag(default: Any, help: str, **metadata: Any) -> Any:
    """A flag's field: ``default`` (a list is copied for each instance) and its ``--help`` text; ``metadata`` goes to
    argparse as HfArgumentParser passes it (``metavar``, ``aliases``)."""
    metadata = {"help": help, **metadata}
    if isinstance(default, list):
        return field(default_factory=lambda: list(default), metadata=metadata)
    return field(default=default, metadata=metadata)


def flag_name(item: Any) -> str:
    """The flag a field is given by: its alias where it has one (``lambda_`` is ``--lambda``)."""
    return (item.metadata.get("aliases") or [f"--{item.name}"])[0]


def flag_error(exc: ValueError, *sections: Any) -> CLIError:
    """The library's ``exc``, whose message starts with its argument's name, under that argument's flag: the field
    of ``sections`` of that name, else the one ending in ``_name`` (``language`` is ``--bm25_language``)."""
    name, rest = re.match(r"(\w*)(.*)", str(exc), re.DOTALL).groups()
    items = [item for section in sections for item in fields(section)]
    found = [i for i in items if i.name == name] + [i for i in items if name and i.name.endswith(f"_{name}")]
    return CLIError(f"{flag_name(found[0])}{rest}" if found else str(exc))


class Checked:
    """A section whose values are checked against its ``bounds`` when it is built, each refused in one line that
    names its flag."""

    bounds: dict[str, tuple[tuple, str]] = {}

    def __post_init__(self) -> None:
        for item in fields(self):
            bounds, note = self.bounds.get(item.name, (None, ""))
            why = out_of_range(getattr(self, item.name), bounds)
            if why:
                raise CLIError(f"{flag_name(item)} {why}{' ' + note if note else ''}, got {getattr(self, item.name):g}")


@functools.cache  # one static load per package, however many sections read it
def _package(top: str) -> griffe.Module:
    """Package ``top`` read from its source by griffe, never imported (the losses and miners import torch and
    datasets); its names are followed across its modules, not into other packages."""
    with griffe.logger.disable():  # what griffe notes about the source is for the package's authors, not users
        return griffe.load(top, resolve_aliases=True, resolve_external=False, allow_inspection=False,
                           docstring_parser="google", docstring_options={"warnings": False})


def _object(path: str) -> griffe.Object:
    top, _, rest = path.partition(".")
    return _package(top)[rest] if rest else _package(top)


def declared(module: str, name: str) -> Any:
    """The literal value ``module`` assigns to ``name``, read from its source without importing it."""
    return ast.literal_eval(str(_object(f"{module}.{name}").value))


def _choices(annotation: Any) -> tuple | None:
    """The values of ``Literal[...]`` written in place, or of the ``Literal`` alias it names where that is defined."""
    if isinstance(annotation, griffe.ExprBinOp):  # A | B: the first that has choices
        return _choices(annotation.left) or _choices(annotation.right)
    if isinstance(annotation, griffe.ExprSubscript) and annotation.canonical_path == "typing.Literal":
        return ast.literal_eval(f"({annotation.slice},)")
    if isinstance(annotation, griffe.ExprName):
        with contextlib.suppress(KeyError):  # a builtin or another package's name: not a choice
            return _choices(getattr(annotation.parent.modules_collection[annotation.canonical_path], "value", None))
    return None


@functools.cache
def _arguments(path: str) -> dict[str, tuple[Any, str, str]]:
    """Keyword argument -> (annotation, default, docstring text) of the function at ``path``, of a class's
    ``__init__`` (its bases' for what it passes on through ``**kwargs``; help from the ``Args:``, the class's where
    ``__init__`` has no docstring) or of a dataclass's fields (help from its ``Attributes:``)."""
    item = _object(path)
    docstring = getattr(item.members.get("__init__"), "docstring", None) or item.docstring
    helps = {entry.name: " ".join(entry.description.split()) for section in (docstring.parsed if docstring else [])
             if section.kind.value in ("parameters", "attributes") for entry in section.value}
    found = {}
    if item.is_class and any(p.kind is griffe.ParameterKind.var_keyword for p in item.parameters):
        for base in item.resolved_bases:  # the base's arguments, passed on
            found.update(_arguments(base.path))
    return found | {p.name: (p.annotation, "" if p.default is None else str(p.default), helps.get(p.name, ""))
                    for p in item.parameters}


def derived(title: str, flags: dict[str, Any], bounds: dict | None = None, check: Any = None, unset: bool = False,
            name: str = "Flags", owner: str = __name__, base: type = Checked) -> type:
    """A ``--help`` section whose flags are read from the library: each of ``flags`` maps a flag to
    ``"module:function.argument"`` (``"module:Class.argument"`` for ``__init__``'s, ``"module:Class.method.argument"``
    for a method's; ``.argument`` left out: the flag's own name), optionally with ``{"help": ...}`` where the section
    words it itself, ``{"default": ...}`` where the command line's default differs from the library's, and argparse's
    ``metavar``; or to ``(type, flag(...))`` for a flag of the command line's own. Read by griffe from the source, not
    imported: the type and choices from the annotation (a ``Literal`` alias followed to where it is defined; a
    sequence of one type is a flag of several values), the default from the signature and the help from the
    docstring's ``Args:`` entry. ``unset``: every flag defaults to None, "the library's own" (``loss_defaults`` keeps
    each default as written), and ``lambda_`` is also ``--lambda``; ``check`` runs after ``bounds`` (a library
    check's ValueError refused under the flag it names, :func:`flag_error`); ``owner``: the module that declares the
    section; ``base``: a section whose flags come first."""
    specs, own_defaults = [], {}
    for flag_, source in flags.items():
        if isinstance(source, tuple) and isinstance(source[1], Field):
            specs.append((flag_, *source))
            continue
        source, given = (source, {}) if isinstance(source, str) else source
        where, _, function = source.partition(":")
        function, _, argument = function.rpartition(".") if "." in function else (function, "", "")
        annotation, default, help_text = _arguments(f"{where}.{function}")[argument or flag_]
        if not help_text and "help" not in given:  # a flag with no help would reach --help and the docs silently
            raise TypeError(f"--{flag_}: {source} has no docstring entry for {argument or flag_}; word its help")
        own_defaults[flag_] = default
        parts = [part.strip() for part in str(annotation or "").split("|")]
        many = re.fullmatch(r"(?:Sequence|list|tuple)\[(\w+)(?:, \.\.\.)?]", parts[-1])  # --flag a b c
        choices = _choices(annotation)
        kind: Any = next((k for k in (float, int, bool) if k.__name__ in ([many[1]] if many else parts)), str)
        if choices is not None:
            # None as a choice of its own where it is not the default (no projection head): the flag's "none"
            kind = Literal[(*choices, *(("none",) if unset and "None" in parts and default != "None" else ()))]
        help_text = re.sub(r":\w+:`~?([\w.]+)`", lambda m: m[1].rsplit(".", 1)[-1], help_text)
        help_text = help_text.replace("``", "").replace("%", "%%")  # argparse formats help with %
        help_text = help_text[:1].upper() + help_text[1:]  # a sentence, whichever way the docstring starts
        metadata = {"help": help_text, **({"aliases": [f"--{flag_[:-1]}"]} if flag_.endswith("_") else {}), **given}
        value = (metadata.pop("default") if "default" in given else None if unset or not default
                 else ast.literal_eval(default))
        kind = list[kind] if many else kind
        made = {"default_factory": lambda v=list(value): list(v)} if many and value is not None else {"default": value}
        specs.append((flag_, kind | None if unset or "None" in parts or value is None else kind,
                      field(**made, metadata=metadata)))
    namespace = {"_argument_group_name": title, "bounds": bounds or {}, **({"loss_defaults": own_defaults} if unset else {})}
    if check is not None:
        def __post_init__(self) -> None:
            Checked.__post_init__(self)
            try:
                check(self)
            except ValueError as exc:  # a library check's message starts with its argument's name
                raise flag_error(exc, self) from None

        namespace["__post_init__"] = __post_init__
    section = make_dataclass(name, specs, bases=(base,), namespace=namespace)
    section.__module__ = owner  # make_dataclass would name the types module
    return section


_LOAD = "st_infocse.training.builder:load_model"
_MODEL = {"model": (f"{_LOAD}.source", {"default": "bert-base-uncased"}), "pooling": _LOAD, "max_seq_length": _LOAD,
          "trust_remote_code": _LOAD}

#: The model's flags, :func:`~st_infocse.training.load_model`'s own arguments; trained at the papers' length.
ModelArguments = derived("model", {**_MODEL, "max_seq_length": (int, flag(
    32, "Maximum tokens per sentence while training (the papers' 32); the saved model keeps the base model's own "
    "maximum length."))}, {"max_seq_length": (AT_LEAST_1, "")}, name="ModelArguments")
#: For commands that use a trained model as it is: its own modules and length unless told otherwise.
SavedModelArguments = derived("model", _MODEL, name="SavedModelArguments")


_TEXTS = "st_infocse.training.texts:load_texts"


class DataArguments(derived("training data", {
    "train_data": (f"{_TEXTS}.source", {"default": WIKI1M, "help": f"Training texts: {TEXT_FORMATS}; or '{BUNDLED}', "
                                        "the 4,096 Wikipedia sentences shipped with the package."}),
    "text_column": _TEXTS, "max_train_samples": f"{_TEXTS}.max_samples", "split_sentences": _TEXTS,
}, name="DataArguments")):
    def __post_init__(self) -> None:
        super().__post_init__()
        if self.train_data == BUNDLED:  # the 4,096 Wikipedia sentences shipped with the package
            from st_infocse.data import sentences_file

            self.train_data = str(sentences_file())


def _check_run(run: Any) -> None:  # the folder and the file: run_evaluation; --confirm_share: check_keep_rule
    if run.keep_trained_if == "reliable" and not run.measured:
        raise CLIError("--keep_trained_if reliable judges the gain on your queries: give --eval_retrieval (or "
                       "--stsb_dev)")


_RUN, _ENDS = "st_infocse.evaluation.run_evaluators:run_evaluation", "st_infocse.training.start_end:StartEndCallback"

class RunEvaluationArguments(derived("measuring the run (start -> end)", {
    # 'demo' and 'none' are the command line's own values, read in st_infocse.cli.train
    "stsb_dev": (_RUN, {"default": "hub", "help": "STS-B dev for checkpoint selection: 'hub', 'demo' (the 1,500 pairs "
                        "shipped with the package), a SentEval data/downstream folder, a sentence1/sentence2/score "
                        "file, or 'none'."}),
    "eval_retrieval": (_RUN, {"metavar": "DIR"}), "eval_retrieval_split": f"{_RUN}.split",
    # a flag cannot be given None: 0 stands for the library's None (no cap)
    "eval_retrieval_max_corpus": (f"{_RUN}.max_corpus", {"help": "Larger corpora are sub-sampled to every judged "
                                  "document plus a --seed sample of the rest, up to this many documents (0: the whole "
                                  "corpus)."}),
    "keep_trained_if": _ENDS, "confirm_share": (_ENDS, {"metavar": "SHARE"}),
}, {"eval_retrieval_max_corpus": ((0, None, True, False), "(0: the whole corpus)")},
    _check_run, name="RunEvaluationArguments")):
    """What a run is measured with (:func:`~st_infocse.evaluation.run_evaluators.run_evaluation`) and the rule that
    chooses the model handed back (:class:`~st_infocse.training.StartEndCallback`)."""

    @property
    def measured(self) -> bool:
        """Whether the run has an evaluator: STS-B dev, or the user's own retrieval set."""
        return self.stsb_dev.lower() != "none" or bool(self.eval_retrieval)


#: What a run hands back: the trained model or the start, and the share of the change kept (IDC: per round).
KeepArguments = derived("the model handed back", {
    "keep_start_if_better": _ENDS,
    # the library's callback is asked for when an anchor is wanted (0.5: halfway); the flag's default is no anchor
    "weight_anchor": ("st_infocse.training.anchor:WeightAnchorCallback.share", {"default": 1.0, "metavar": "SHARE"}),
}, {"weight_anchor": ((0, 1, False, True), "(the share of the trained change kept)")}, name="KeepArguments")


@dataclass
class OutputArguments:
    _argument_group_name = "the output folder"

    overwrite_output_dir: bool = flag(
        False, "Replace an earlier run in --output_dir (its checkpoints, saved model and run summary are removed "
        "first). Without it, a folder holding a run is refused unless --resume_from_checkpoint resumes it.")


_MINE, _DOCUMENTS = "st_infocse.mining.idc:mine_pairs", "st_infocse.mining.sentences:prepare_documents"

#: ``st-infocse mine``'s flags: the documents read, where the pairs are saved, and the miner's own arguments.
MineArguments = derived("mining", {
    "docs": (f"{DOCUMENTS}.source", {"help": f"{DOCS_HELP} Each line of a text is split into sentences."}),
    "output_dir": ("st_infocse.mining.idc:MinedPairs.save.folder", {"default": "pairs"}),
    **dict.fromkeys(("k", "threshold", "similarity"), _MINE), "min_sentences": _DOCUMENTS,
    "max_sentences": (_DOCUMENTS, {"help": "Skip documents with more sentences."}),  # a flag cannot give its None
    **dict.fromkeys(("max_pairs_per_cluster", "batch_size", "seed"), _MINE),
    "max_docs": (DOCUMENTS, {"help": "Mine only the first N documents."}),
}, bounds={"min_sentences": ((2, None, True, False), "(a pair needs two sentences)")}, name="MineArguments")


_LEXICAL = "st_infocse.evaluation.lexical:LexicalSettings"


def _check_bm25(lexical: Any) -> None:
    if lexical.bm25:  # LexicalSettings' own check of the language, which needs no torch
        check_language(lexical.bm25_language, lexical.bm25_stem, lexical.bm25_stopwords)


class LexicalArguments(derived("BM25 beside your retrieval scores", {
    "bm25": (bool, flag(True, "Also score BM25 (bm25s) and the hybrid of BM25 with the model as given on the same "
                              "queries, with the model's change against each and its interval over the queries.")),
    **{f"bm25_{name}": f"{_LEXICAL}.{name}" for name in ("language", "stem", "stopwords")},
    **{f"hybrid_{name}": f"{_LEXICAL}.{name}" for name in ("fusion", "weight")},
}, {"hybrid_weight": ((0, 1, True, True), "(BM25's share of the minmax hybrid)")}, _check_bm25,
    name="LexicalArguments")):
    """BM25 and its hybrid with the model (:class:`~st_infocse.evaluation.LexicalSettings`), scored beside the model
    on the same queries (--beir, --eval_retrieval)."""

    def settings(self):
        """The :class:`~st_infocse.evaluation.LexicalSettings` these flags ask for, or None (``--bm25 false``)."""
        if not self.bm25:
            return None
        from st_infocse.evaluation.lexical import LexicalSettings

        return LexicalSettings(self.bm25_language, self.bm25_stem, self.bm25_stopwords, self.hybrid_fusion,
                               self.hybrid_weight)


_BEIR = "st_infocse.evaluation.beir:evaluate_beir"

#: ``st-infocse evaluate``'s sets and report; BEIR's flags are :func:`~st_infocse.evaluation.evaluate_beir`'s.
EvaluateArguments = derived("what is evaluated, and the report", {
    "sts": (str | None, flag(None, "STS suite source: 'mteb' (online) or a SentEval data/downstream folder.")),
    "beir": (f"{_BEIR}.datasets", {"default": None}), "beir_source": f"{_BEIR}.source", "split": _BEIR,
    "transfer": (str | None, flag(None, "SentEval data/downstream folder for the transfer tasks.")),
    "output_dir": (str, flag("evaluation", "Where evaluation.json, evaluation.md and plots go.")),
    "batch_size": _BEIR, "plots": "st_infocse.evaluation.report:save_report",
    "verbose": (bool, flag(False, "Also show beir's INFO log (every metric at every k).")),
    "compare": (list[str] | None, flag(
        None, "One or more models scored on the same sets: each STS task's and BEIR dataset's change from each "
        "--compare model to --model, with its 95 percent interval from the paired test over the queries / pairs and "
        "a verdict (comparison.json, comparison.md); with several rows, the verdicts read p adjusted by Holm's rule "
        "over every row of every model compared. Loaded as --model is.", metavar="MODEL")),
}, name="EvaluateArguments")


def training_arguments_class():
    from st_infocse.training.arguments import PaperTrainingArguments

    return PaperTrainingArguments
