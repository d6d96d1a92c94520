"""What a mining pass did: documents seen and used, skips by reason with examples, pairs, clusters and timings."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from st_infocse.mining.sentences import Skipped


@dataclass
class MiningReport:
    """What one mining pass did. ``documents_seen == documents_used + sum(skipped.values())``.

    Attributes:
        method: ``"idc"`` or ``"adjacent"``.
        similarity: Edge score used (``"cosine"`` or ``"dot"``); ``None`` for adjacent pairs.
        k: Top-K of eq. 3; ``None`` for adjacent pairs.
        threshold: Floor on the edge score (in the units of ``similarity``), or ``None``.
        documents_seen: Input items read.
        documents_used: Documents that entered the graph step.
        skipped: Skipped documents by reason (``not_text``, ``empty``, ``too_few_sentences``,
            ``too_many_sentences``).
        skipped_examples: Up to five ``(doc_id, reason, detail)`` per reason, for debugging.
        sentences: Sentences of the used documents (after cleaning and deduplication).
        sentences_encoded: Distinct sentence texts encoded (identical texts are encoded once).
        duplicate_sentences_removed: Repeated sentences dropped inside documents.
        empty_sentences_removed: Empty sentences dropped inside used documents.
        clusters: Clusters found, including single-sentence ones.
        singleton_clusters: Clusters of one sentence (they give no pair).
        documents_without_pairs: Used documents that gave no pair (only possible with a threshold).
        pairs: Pairs in the output.
        pairs_dropped_by_cap: Pairs not emitted because of ``max_pairs_per_cluster``.
        shards: Encode calls made.
        prepare_seconds / encode_seconds / graph_seconds / output_seconds / total_seconds:
            Wall-clock split: reading and splitting, ``model.encode``, clustering and pair
            enumeration, building the Arrow dataset, everything.
    """

    method: str = "idc"
    similarity: str | None = None
    k: int | None = None
    threshold: float | None = None
    documents_seen: int = 0
    documents_used: int = 0
    skipped: dict[str, int] = field(default_factory=dict)
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
        out = asdict(self)
        out["documents_skipped"] = self.documents_skipped
        out["pairs_per_document"] = self.pairs_per_document
        return out

    def summary(self) -> str:
        """One line for logs."""
        skipped = ", ".join(f"{k}={v}" for k, v in sorted(self.skipped.items()) if v) or "none"
        setting = f" ({self.similarity}, k={self.k}, threshold={self.threshold})" if self.method == "idc" else ""
        return (
            f"{self.method}{setting}: {self.documents_seen} documents read, {self.documents_used} used, skipped: {skipped}; "
            f"{self.sentences} sentences, {self.clusters} clusters, {self.pairs} pairs "
            f"({self.pairs_per_document:.2f}/document, {self.pairs_dropped_by_cap} over the cap); "
            f"encode {self.encode_seconds:.1f}s, graph {self.graph_seconds:.2f}s, total {self.total_seconds:.1f}s"
        )

    def _skip(self, item: Skipped) -> None:
        self.skipped[item.reason] = self.skipped.get(item.reason, 0) + 1
        examples = self.skipped_examples.setdefault(item.reason, [])
        if len(examples) < 5:
            examples.append((item.doc_id, item.detail))
