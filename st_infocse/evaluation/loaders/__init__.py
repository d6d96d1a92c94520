"""Loaders for evaluation data: STS pairs (:mod:`.sts`), retrieval data (:mod:`.retrieval`) and SentEval's transfer
tasks (:mod:`.transfer`); :mod:`.common` holds the task tables, the containers and :class:`DataFormatError`. SentEval
and BEIR files go through the package's line readers, a user's STS file or Hugging Face folder through ``datasets``.
"""

from __future__ import annotations

from st_infocse.lazy import lazy_exports

_WHERE = {
    **dict.fromkeys(("MTEB_STS_NAMES", "SENTEVAL_STS_SUBSETS", "STS_TASKS", "TRANSFER_TASKS", "DataFormatError",
                     "PathLike", "RetrievalData", "STSPairs", "TransferData", "canonical_sts_name"), "common"),
    **dict.fromkeys(("load_beir_folder", "load_mteb_retrieval"), "retrieval"),
    **dict.fromkeys(("find_senteval_root", "load_mteb_sts", "load_senteval_sts", "load_sts", "load_sts_file",
                     "load_sts_hf"), "sts"),
    **dict.fromkeys(("canonical_transfer_name", "load_senteval_transfer"), "transfer"),
}

__all__ = sorted(_WHERE)  # every exported name, listed once above

__getattr__, __dir__ = lazy_exports(__name__, _WHERE, __all__, globals())
