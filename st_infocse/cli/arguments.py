"""The command line's own flags: one dataclass per ``--help`` section (``_argument_group_name`` titles it) of the
model, the data, the run's measurement, the output folder, mining and evaluation. The objectives' flags are in
:mod:`~st_infocse.cli.objective_flags`, and :mod:`~st_infocse.cli.parsing` reads them all.

A field is declared with :func:`flag` (its default and help); a section's ``bounds`` (field -> (low, high, low
included, high included), why) are refused by :class:`Checked` under the flag's name when the section is built.
"""

# No ``from __future__ import annotations``: HfArgumentParser resolves these annotations (the Literal choices).
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any, Literal

from st_infocse.cli.errors import CLIError
from st_infocse.losses.registry import out_of_bounds

WIKI1M = "hf://datasets/princeton-nlp/datasets-for-simcse/wiki1m_for_simcse.txt"
BUNDLED = "demo"  # --train_data demo / --stsb_dev demo: the data shipped in st_infocse/data
AT_LEAST_1, POSITIVE = (1, None, True, False), (0, None, False, False)  # the commonest bounds


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


class Checked:
    """A section whose values are checked against its ``bounds`` when it is built, each refused in one line that
    names its flag."""

    bounds: dict[str, tuple[tuple, str]] = {}

    def __post_init__(self) -> None:
        for item in fields(self):
            bounds, note = self.bounds.get(item.name, (None, ""))
            why = out_of_bounds(item.name, getattr(self, item.name), bounds) if bounds else None
            if why:
                raise CLIError(f"{flag_name(item)} {why}{' ' + note if note else ''}, got {getattr(self, item.name):g}")


@dataclass
class ModelArguments:
    _argument_group_name = "model"

    model: str = flag("bert-base-uncased", "Hub id or local folder of a Hugging Face or Sentence Transformer model.")
    pooling: Literal["cls", "mean", "max", "model"] | None = flag(
        None, "Default: a saved Sentence Transformer keeps its own modules (Pooling, Dense, Normalize, ...); a plain "
        "Hugging Face encoder is pooled with cls (the papers' setting, SimCSE's cls_before_pooler). cls, mean or max "
        "replaces only the Pooling module of a saved Sentence Transformer; 'model' keeps the modules "
        "sentence-transformers loads.")
    max_seq_length: int = flag(32, "Maximum tokens per sentence while training (the papers' 32); the saved model "
                               "keeps the base model's own maximum length.")
    trust_remote_code: bool = flag(False, "Allow custom model code from the hub.")


@dataclass
class SavedModelArguments(ModelArguments):
    """For commands that use a trained model as it is: its own modules and length unless told otherwise."""

    max_seq_length: int | None = flag(None, "Maximum tokens per sentence (default: the model's).")


@dataclass
class DataArguments:
    _argument_group_name = "training data"

    train_data: str = flag(
        WIKI1M, "Training text: a .txt(.gz) file (one sentence per line), .jsonl(.gz)/.json/.csv/.tsv/.parquet, a "
        "save_to_disk folder, an hf:// file, a hub dataset id, or 'demo' (4,096 Wikipedia sentences shipped with the "
        "package). Missing, non-string and blank rows are dropped and counted.")
    text_column: str | None = flag(None, "Column holding the text (default: 'text' or the only string column).")
    max_train_samples: int | None = flag(None, "Use only the first N training texts.")
    split_sentences: bool = flag(False, "Split each training text into sentences first (the splitter IDC mining "
                                 "uses), so that long texts such as whole abstracts are not cut at --max_seq_length.")

    def __post_init__(self) -> None:
        if self.train_data == BUNDLED:  # the 4,096 Wikipedia sentences shipped with the package
            from st_infocse.data import sentences_file

            self.train_data = str(sentences_file())


@dataclass
class RunEvaluationArguments(Checked):
    _argument_group_name = "measuring the run (start -> end)"
    bounds = {"eval_retrieval_max_corpus": ((0, None, True, False), "(0: the whole corpus)"),
              "confirm_share": ((0, 1, False, False), "(the share of the queries held out of the keep rule)")}

    stsb_dev: str = flag("hub", "STS-B dev for checkpoint selection: 'hub', 'demo' (the 1,500 pairs shipped with the "
                         "package), a SentEval data/downstream folder, a sentence1/sentence2/score file, or 'none'.")
    eval_retrieval: str | None = flag(
        None, "Your own retrieval set, a BEIR-layout folder (corpus.jsonl, queries.jsonl, qrels/<split>.tsv): nDCG@10 "
        "and Recall@100 before, during and after training; it chooses the checkpoint unless --metric_for_best_model "
        "says otherwise.", metavar="DIR")
    eval_retrieval_split: str | None = flag(None, "Its qrels split (default: dev, else test).")
    eval_retrieval_max_corpus: int | None = flag(
        10_000, "Larger corpora are sub-sampled to every judged document plus a --seed sample of the rest, up to this "
        "many documents (0: the whole corpus).")
    keep_trained_if: Literal["better", "reliable"] = flag(
        "better", "Which model the run hands back, with an evaluator: 'better' keeps the trained model when its "
        "checkpoint metric is not below the start's; 'reliable' only when its gain is reliable over your queries (STS "
        "pairs): the 95 percent interval of the paired test over them (sign flips over queries, swaps of the two "
        "models' similarities over STS pairs) lies above zero; the gain printed is then the one that decided, which "
        "reads high on those queries (--confirm_share). The adapt-* recipes set 'reliable'.")
    confirm_share: float | None = flag(
        None, "With --keep_trained_if reliable: hold this share of the checkpoint metric's queries (STS pairs) out of "
        "the rule, drawn with --seed; the rule decides on the rest, and the change printed for the metric is the one "
        "on the held-out part. Costs power: both parts are smaller (docs/your-own-model.md).", metavar="SHARE")

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.eval_retrieval and not Path(self.eval_retrieval).expanduser().is_dir():
            raise CLIError(f"--eval_retrieval: no folder at {self.eval_retrieval} (a BEIR-layout folder: "
                           "corpus.jsonl, queries.jsonl, qrels/)")
        if self.stsb_dev.lower() not in ("hub", "none", BUNDLED) and not Path(self.stsb_dev).expanduser().exists():
            raise CLIError(f"STS-B dev data not found: {self.stsb_dev}")
        if self.confirm_share is not None and self.keep_trained_if != "reliable":
            raise CLIError("--confirm_share holds queries out of --keep_trained_if reliable's decision: give "
                           "--keep_trained_if reliable")
        if self.confirm_share is not None and self.stsb_dev.lower() == "none" and not self.eval_retrieval:
            raise CLIError("--confirm_share splits the queries the run is measured on: give --eval_retrieval (or "
                           "--stsb_dev)")


@dataclass
class KeepArguments(Checked):
    """What a run hands back: the trained model or the start, and the share of the change kept (IDC: per round)."""

    _argument_group_name = "the model handed back"
    bounds = {"weight_anchor": ((0, 1, False, True), "(the share of the trained change kept)")}

    keep_start_if_better: bool = flag(True, "With an evaluator, hand back the model as given when no checkpoint and "
                                      "not the end beat it on the checkpoint metric.")
    weight_anchor: float = flag(
        1.0, "Keep this share of the trained change: after the last step the model becomes start + share x (trained - "
        "start) (WiSE-FT), and that is what is scored against the start and saved. 1: the trained model; 0.5: halfway "
        "back (docs/adapting-your-model.md). Below 1 the last step is the model kept, so load_best_model_at_end is "
        "off unless given.", metavar="SHARE")


@dataclass
class OutputArguments:
    _argument_group_name = "the output folder"

    overwrite_output_dir: bool = flag(
        False, "Replace an earlier run in --output_dir (its checkpoints, saved model and run summary are removed "
        "first). Without it, a folder holding a run is refused unless --resume_from_checkpoint resumes it.")


@dataclass
class MineArguments(Checked):
    _argument_group_name = "mining"
    bounds = {"min_sentences": ((2, None, True, False), "(a pair needs two sentences)")}

    docs: str = flag(None, "Documents: a .txt(.gz) file with documents separated by blank lines (each line is split "
                     "into sentences), .jsonl(.gz)/.json objects with 'sentences' (list) or 'text' (and 'id'), a "
                     "save_to_disk folder, or a hub dataset id.")
    output_dir: str = flag("pairs", "Folder for the mined pairs (datasets save_to_disk) and report.json.")
    k: int = flag(1, "Top-K neighbours per sentence.")
    threshold: float | None = flag(None, "Floor on the edge score: a cosine, or the raw inner product with "
                                   "--similarity dot.")
    similarity: Literal["cosine", "dot"] = flag("cosine", "Edge score: cosine, or dot (inner product, paper 002 eq. "
                                                "2; the same as cosine for models ending in Normalize).")
    min_sentences: int = flag(2, "Skip documents with fewer sentences.")  # the miner would raise it to 2 silently
    max_sentences: int | None = flag(1000, "Skip documents with more sentences.")
    max_pairs_per_cluster: int | None = flag(None, "Cap on pairs per cluster.")
    batch_size: int = flag(64, "Encoding batch size.")
    max_docs: int | None = flag(None, "Mine only the first N documents.")
    seed: int = flag(0, "Seed for the pair cap's sample.")


@dataclass
class LexicalArguments(Checked):
    """BM25 and its hybrid with the model, scored beside the model on the same queries (--beir, --eval_retrieval)."""

    _argument_group_name = "BM25 beside your retrieval scores"
    bounds = {"hybrid_weight": ((0, 1, True, True), "(BM25's share of the minmax hybrid)")}

    bm25: bool = flag(True, "Also score BM25 (bm25s) and the hybrid of BM25 with the model as given on the same "
                      "queries, with the model's change against each and its interval over the queries.")
    bm25_language: str = flag("english", "BM25's stemmer (Snowball) and stop-word language.")
    bm25_stem: bool = flag(True, "Stem BM25's tokens.")
    bm25_stopwords: bool = flag(True, "Drop the language's stop words from BM25's tokens.")
    hybrid_fusion: Literal["minmax", "rrf"] = flag(
        "minmax", "How the hybrid fuses the two runs per query: minmax (each run's scores min-max normalised, then "
        "summed with --hybrid_weight) or rrf (reciprocal rank fusion).")
    hybrid_weight: float = flag(0.5, "BM25's weight in the minmax hybrid.")

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.bm25:
            check_bm25_language(self.bm25_language, self.bm25_stem, self.bm25_stopwords)

    def settings(self):
        """The :class:`~st_infocse.evaluation.LexicalSettings` these flags ask for, or None (``--bm25 false``)."""
        if not self.bm25:
            return None
        from st_infocse.evaluation.lexical import LexicalSettings

        return LexicalSettings(self.bm25_language, self.bm25_stem, self.bm25_stopwords, self.hybrid_fusion,
                               self.hybrid_weight)


@dataclass
class EvaluateArguments:
    sts: str | None = flag(None, "STS suite source: 'mteb' (online) or a SentEval data/downstream folder.")
    beir: list[str] | None = flag(None, "BEIR datasets, e.g. scifact nfcorpus, or paths of BEIR-layout folders "
                                  "(corpus.jsonl, queries.jsonl, qrels/<split>.tsv), read by their layout whatever "
                                  "their name.")
    beir_source: str = flag("mteb", "'mteb' (online) or a folder with one BEIR folder per dataset.")
    split: str | None = flag(None, "The qrels split --beir reads (qrels/<split>.tsv). Default: test; in a local "
                             "folder without qrels/test.tsv, dev (the file the guide has you write for your own "
                             "queries).")
    transfer: str | None = flag(None, "SentEval data/downstream folder for the transfer tasks.")
    output_dir: str = flag("evaluation", "Where evaluation.json, evaluation.md and plots go.")
    batch_size: int = flag(64, "Encoding batch size.")
    plots: bool = flag(True, "Draw bar charts (needs matplotlib).")
    verbose: bool = flag(False, "Also show beir's INFO log (every metric at every k).")
    compare: str | None = flag(
        None, "A second model scored on the same sets: each STS task's and BEIR dataset's change from --compare to "
        "--model, with its 95 percent interval from the paired test over the queries / pairs and a verdict "
        "(comparison.json, comparison.md). Loaded as --model is.", metavar="MODEL")


def check_bm25_language(language: str, stem: bool, stopwords: bool) -> None:
    """``--bm25_language`` against the stemmer's own languages (PyStemmer's ``algorithms()``) and the stop-word
    lists of ``bm25s`` (its own lookup, which raises for a language it has no list of)."""
    import difflib
    import importlib.util

    if stem:
        if importlib.util.find_spec("Stemmer") is None:
            if language != "english":
                raise CLIError(f"--bm25_language {language} cannot be checked: PyStemmer is not installed (pip "
                               "install 'st-infocse[eval]')")
            return
        import Stemmer

        known = sorted(Stemmer.algorithms())
        if language not in known:
            close = difflib.get_close_matches(language, known, n=1)
            raise CLIError(f"--bm25_language {language} is not a language of the stemmer"
                           f"{f' (did you mean {close[0]}?)' if close else ''}; it knows {', '.join(known)}")
    if stopwords and importlib.util.find_spec("bm25s") is not None:
        from bm25s.tokenization import _infer_stopwords  # what bm25s.tokenize(stopwords=language) looks up

        try:
            _infer_stopwords(language)
        except ValueError:
            raise CLIError(f"--bm25_language {language}: bm25s has no stop-word list for it (--bm25_stopwords false "
                           "keeps every token)") from None


def training_arguments_class():
    from st_infocse.training.arguments import PaperTrainingArguments

    return PaperTrainingArguments
