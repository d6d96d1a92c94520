"""Loaders for evaluation data, one module per family: STS pairs (:mod:`.sts`), retrieval data (:mod:`.retrieval`)
and SentEval's transfer tasks (:mod:`.transfer`); :mod:`.common` holds the task tables, the containers they return and
:class:`DataFormatError`. SentEval and BEIR files go through the package's one line reader and JSON-lines reader
(:mod:`st_infocse.files`); a user's STS pairs file or Hugging Face folder through ``datasets.load_dataset``.
"""

from __future__ import annotations

from st_infocse.lazy import lazy_exports

_WHERE = {
    "MTEB_STS_NAMES": "common",
    "SENTEVAL_STS_SUBSETS": "common",
    "STS_TASKS": "common",
    "TRANSFER_TASKS": "common",
    "DataFormatError": "common",
    "PathLike": "common",
    "RetrievalData": "common",
    "STSPairs": "common",
    "TransferData": "common",
    "canonical_sts_name": "common",
    "load_beir_folder": "retrieval",
    "load_mteb_retrieval": "retrieval",
    "find_senteval_root": "sts",
    "load_mteb_sts": "sts",
    "load_senteval_sts": "sts",
    "load_sts": "sts",
    "load_sts_file": "sts",
    "load_sts_hf": "sts",
    "canonical_transfer_name": "transfer",
    "load_senteval_transfer": "transfer",
}

__all__ = sorted(_WHERE)  # every exported name, listed once above

__getattr__, __dir__ = lazy_exports(__name__, _WHERE, __all__, globals())
