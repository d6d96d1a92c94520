"""What a mining pass did: documents seen and used, skips by reason with examples, pairs, clusters and timings."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from st_infocse.mining.sentences import SKIP_REASONS, PreparedDocument, Skipped


def skip_counts(skipped: dict[str, int]) -> str:
    """The documents skipped, by reason: ``"empty=2, too_few_sentences=1,203"`` ("" when none was)."""
    return ", ".join(f"{reason}={n:,}" for reason, n in sorted(skipped.items()) if n)


@dataclass
class MiningReport:
    """What one mining pass did. ``documents_seen == documents_used + sum(skipped.values())``.

    ``method`` is ``"idc"``, ``"adjacent"`` or ``"context"`` (``similarity``, ``k``, ``threshold`` and the
    encoding's ``precision`` are IDC's);
    ``skipped`` holds every reason of ``SKIP_REASONS``, with up to five ``(doc_id, detail)`` examples each;
    ``sentences_encoded`` counts distinct texts; ``pairs_dropped_by_cap``, pairs over ``max_pairs_per_cluster``;
    ``shards``, encode calls; the ``*_seconds`` split the wall time.
    """

    method: str = "idc"
    similarity: str | None = None
    k: int | None = None
    threshold: float | None = None
    precision: str | None = None
    documents_seen: int = 0
    documents_used: int = 0
    skipped: dict[str, int] = field(default_factory=lambda: dict.fromkeys(SKIP_REASONS, 0))
    skipped_examples: dict[str, list[tuple[str, str]]] = field(default_factory=dict)
    sentences: int = 0
    sentences_encoded: int = 0
    duplicate_sentences_removed: int = 0
    empty_sentences_removed: int = 0
    clusters: int = 0
    singleton_clusters: int = 0
    documents_without_pairs: int = 0
    pairs: int = 0
    pairs_dropped_by_cap: int = 0
    shards: int = 0
    prepare_seconds: float = 0.0
    encode_seconds: float = 0.0
    graph_seconds: float = 0.0
    output_seconds: float = 0.0
    total_seconds: float = 0.0

    @property
    def documents_skipped(self) -> int:
        return sum(self.skipped.values())

    @property
    def pairs_per_document(self) -> float:
        return self.pairs / self.documents_used if self.documents_used else 0.0

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready dict of every field plus the derived counts."""
        return {**asdict(self), "documents_skipped": self.documents_skipped,
                "pairs_per_document": self.pairs_per_document}

    def summary(self) -> str:
        """One line for logs."""
        skipped = skip_counts(self.skipped) or "none"
        encoded = f", {self.precision}" if self.precision not in (None, "fp32") else ""
        setting = (f" ({self.similarity}, k={self.k}, threshold={self.threshold}{encoded})" if self.method == "idc"
                   else "")
        return (
            f"{self.method}{setting}: {self.documents_seen} documents read, {self.documents_used} used, skipped: {skipped}; "
            f"{self.sentences} sentences, {self.clusters} clusters, {self.pairs} pairs "
            f"({self.pairs_per_document:.2f}/document, {self.pairs_dropped_by_cap} over the cap); "
            f"encode {self.encode_seconds:.1f}s, graph {self.graph_seconds:.2f}s, total {self.total_seconds:.1f}s"
        )

    def pairs_summary(self, pairs: str = "pairs") -> str:
        """One line of the documents used, the ``pairs`` (what they are) and the documents skipped by reason:
        ``"12 documents -> 60 pairs; skipped 1 documents (too_few_sentences=1)"``."""
        skipped = skip_counts(self.skipped)
        return (f"{self.documents_used:,} documents -> {self.pairs:,} {pairs}"
                + (f"; skipped {self.documents_skipped:,} documents ({skipped})" if skipped else ""))

    def add(self, item: PreparedDocument | Skipped) -> None:
        """Count one document as :func:`~st_infocse.mining.prepare_documents` gave it."""
        self.documents_seen += 1
        if isinstance(item, Skipped):
            self.skipped[item.reason] = self.skipped.get(item.reason, 0) + 1
            examples = self.skipped_examples.setdefault(item.reason, [])
            if len(examples) < 5:
                examples.append((item.doc_id, item.detail))
            return
        self.documents_used += 1
        self.sentences += len(item.sentences)
        self.duplicate_sentences_removed += item.duplicates_removed
        self.empty_sentences_removed += item.empty_removed
