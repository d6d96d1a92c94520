"""BEIR datasets by name or folder: read online through mteb or from local BEIR folders, evaluated one by one with
:func:`~st_infocse.evaluation.evaluate_retrieval` (CQADupStack per forum, then averaged), and downloaded from the
BEIR authors' server.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np

from st_infocse.files import beir_parts, check_sources

from ._deps import require
from .beir_tasks import CQADUPSTACK_FORUMS, beir_task_info
from .encoding import model_name
from .lexical import LexicalSettings
from .loaders import PathLike, RetrievalData, load_beir_folder, load_mteb_retrieval
from .retrieval import DEFAULT_K_VALUES, BEIRResult, RetrievalResult, evaluate_retrieval, quiet_logs


def _average(name: str, parts: dict[str, RetrievalResult], source: str) -> RetrievalResult:
    results = list(parts.values())
    metrics = {k: float(np.mean([p.metrics[k] for p in results])) for k in results[0].metrics}
    return RetrievalResult(name, metrics, sum(p.n_queries for p in results), sum(p.n_documents for p in results),
                           source, results[0].split, sum(p.seconds for p in results), parts)


def evaluate_beir(model: Any, datasets: str | Sequence[str] = ("scifact",), source: PathLike = "mteb",
                  k_values: Sequence[int] = DEFAULT_K_VALUES, split: str | None = None, batch_size: int = 64,
                  show_progress_bar: bool | None = None, model_label: str | None = None, per_query: Sequence[str] = (),
                  lexical: LexicalSettings | None = None) -> BEIRResult:
    """BEIR zero-shot retrieval on one or more datasets, each by :func:`evaluate_retrieval` (CQADupStack per forum,
    then averaged, as BEIR and the papers do), and their average nDCG@10. A local dataset or qrels split that is not
    there is one FileNotFoundError before any is scored (:func:`~st_infocse.files.check_sources`).

    Args:
        datasets: BEIR datasets by name, e.g. scifact nfcorpus (:data:`BEIR_PAPER_DATASETS`, mteb's names), or paths
            of BEIR-layout folders (corpus.jsonl, queries.jsonl, qrels/<split>.tsv), read from disk by their layout
            whatever ``source`` says, named by the folder.
        source: ``"mteb"`` (Hugging Face hub), a folder holding one subfolder per dataset, or one dataset's folder.
        split: The qrels split read (qrels/<split>.tsv; default: ``test``, ``dev`` for MS MARCO; in a local folder
            without that file, the other).
        batch_size: Encoding batch size.
        lexical: Also score BM25 and its hybrid with the model on each dataset's queries. Not for CQADupStack.
    """
    out: dict[str, RetrievalResult] = {}
    for name, where in check_sources(beir=datasets, beir_source=source, split=split).values():
        # a dataset of several parts (CQADupStack) is averaged over them, without the lexical references
        parts = {part: evaluate_retrieval(model, data, k_values, None, batch_size, show_progress_bar, per_query,
                                          None if part else lexical)
                 for part, data in _load_retrieval(name, where, split)}
        out[name] = parts[""] if "" in parts else _average(name, parts, source=str(source))
    return BEIRResult(model_label or model_name(model), out)


def _load_retrieval(name: str, source: PathLike, split: str | None) -> list[tuple[str, RetrievalData]]:
    """[("", data)] for a plain dataset, [(part, data), ...] for one made of several (CQADupStack); ``split`` None:
    the dataset's own, or in a local folder without that file, the other (:func:`~st_infocse.files.beir_parts`)."""
    info = beir_task_info(name)
    if isinstance(source, str) and source == "mteb":
        if info.name == "cqadupstack":
            return [(f, load_mteb_retrieval(f"cqadupstack/{f}", split or info.split)) for f in CQADUPSTACK_FORUMS]
        return [("", replace(load_mteb_retrieval(name, split or info.split), name=info.name))]  # mapped to mteb's
    parts, split = beir_parts(name, source, split, info.split)
    return [(part, load_beir_folder(folder, split, name=f"{info.name}/{part}" if part else info.name))
            for part, folder in parts.items()]


def download_beir(name: str, out_dir: PathLike) -> Path:
    """Download and unzip a BEIR dataset (``"scifact"``) from the BEIR authors' server (not the Hugging Face hub)
    into ``out_dir/name``, the folder returned."""
    util = require("beir.util", "Downloading BEIR datasets")
    url = f"https://public.ukp.informatik.tu-darmstadt.de/thakur/BEIR/datasets/{name}.zip"
    with quiet_logs():
        return Path(util.download_and_unzip(url, str(out_dir)))
