"""The BEIR datasets: their folder names, the mteb task behind each, and how each is evaluated (read by the loaders
and by the evaluation)."""

from __future__ import annotations

from dataclasses import dataclass

CQADUPSTACK_FORUMS: tuple[str, ...] = (
    "android", "english", "gaming", "gis", "mathematica", "physics", "programmers", "stats", "tex", "unix",
    "webmasters", "wordpress",
)


@dataclass(frozen=True)
class BEIRTaskInfo:
    """How a BEIR dataset (by its folder name) is evaluated: its mteb task (``None`` when mteb has no single task for
    it), whether a retrieved document whose id is the query's is dropped (mteb's per-task setting), its split."""

    name: str
    mteb_name: str | None
    ignore_identical_ids: bool = False
    split: str = "test"


# mteb's per-task settings (checked against mteb's task classes in tests/evaluation/test_retrieval.py); the public
# datasets in the row order of paper 000's Table 3, then MS MARCO and CQADupStack's forums
_BEIR_TASKS: dict[str, BEIRTaskInfo] = {
    info.name: info
    for info in (
        BEIRTaskInfo("trec-covid", "TRECCOVID"),
        BEIRTaskInfo("nfcorpus", "NFCorpus"),
        BEIRTaskInfo("nq", "NQ"),
        BEIRTaskInfo("fiqa", "FiQA2018", ignore_identical_ids=True),
        BEIRTaskInfo("arguana", "ArguAna", ignore_identical_ids=True),
        BEIRTaskInfo("webis-touche2020", "Touche2020"),
        BEIRTaskInfo("quora", "QuoraRetrieval", ignore_identical_ids=True),
        BEIRTaskInfo("cqadupstack", None),
        BEIRTaskInfo("dbpedia-entity", "DBPedia"),
        BEIRTaskInfo("scidocs", "SCIDOCS"),
        BEIRTaskInfo("climate-fever", "ClimateFEVER"),
        BEIRTaskInfo("scifact", "SciFact"),
        BEIRTaskInfo("hotpotqa", "HotpotQA"),
        BEIRTaskInfo("fever", "FEVER", ignore_identical_ids=True),
        BEIRTaskInfo("msmarco", "MSMARCO", ignore_identical_ids=True, split="dev"),
        *(
            BEIRTaskInfo(f"cqadupstack/{forum}", f"CQADupstack{forum.capitalize()}Retrieval")
            for forum in CQADUPSTACK_FORUMS
        ),
    )
}


#: The 14 public BEIR datasets of paper 000's Table 3, in its row order (BEIR folder names).
BEIR_PAPER_DATASETS: tuple[str, ...] = tuple(name for name in _BEIR_TASKS if name != "msmarco" and "/" not in name)


def beir_task_info(name: str) -> BEIRTaskInfo:
    """Settings for a BEIR dataset by its BEIR folder or mteb task name (``"fiqa"``, ``"FiQA2018"``, any case);
    unknown names get mteb's defaults (no mteb task, identical ids kept, ``test`` split).

    Example:
        >>> beir_task_info("FiQA2018").ignore_identical_ids, beir_task_info("scifact").mteb_name
        (True, 'SciFact')
    """
    key = name.lower().strip("/")
    for info in _BEIR_TASKS.values():
        if key in (info.name, (info.mteb_name or "").lower()):
            return info
    return BEIRTaskInfo(name, None)
