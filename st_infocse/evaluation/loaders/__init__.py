"""Loaders for evaluation data, one module per family, all reading files through the package's one line reader and
JSON-lines reader (:mod:`st_infocse.files`): STS pairs (:mod:`.sts`), retrieval data (:mod:`.retrieval`) and
SentEval's transfer tasks (:mod:`.transfer`); :mod:`.common` holds the task tables, the containers they return and
:class:`DataFormatError`.
"""

from .common import (
    MTEB_STS_NAMES,
    SENTEVAL_STS_SUBSETS,
    STS_TASKS,
    TRANSFER_TASKS,
    DataFormatError,
    PathLike,
    RetrievalData,
    STSPairs,
    TransferData,
    canonical_sts_name,
)
from .retrieval import load_beir_folder, load_mteb_retrieval
from .sts import find_senteval_root, load_mteb_sts, load_senteval_sts, load_sts, load_sts_file, load_sts_hf
from .transfer import canonical_transfer_name, load_senteval_transfer

__all__ = [
    "MTEB_STS_NAMES",
    "SENTEVAL_STS_SUBSETS",
    "STS_TASKS",
    "TRANSFER_TASKS",
    "DataFormatError",
    "PathLike",
    "RetrievalData",
    "STSPairs",
    "TransferData",
    "canonical_sts_name",
    "canonical_transfer_name",
    "find_senteval_root",
    "load_beir_folder",
    "load_mteb_retrieval",
    "load_mteb_sts",
    "load_senteval_sts",
    "load_senteval_transfer",
    "load_sts",
    "load_sts_file",
    "load_sts_hf",
]
