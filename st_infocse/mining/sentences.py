"""Document normalisation for mining: any document form to its usable sentences, split by
:func:`~st_infocse.training.texts.split_sentences` (training text's splitter, one splitter for both)."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from st_infocse.training.texts import split_sentences

# Reasons a document is skipped; the report counts each one.
SKIP_REASONS = ("not_text", "empty", "too_few_sentences", "too_many_sentences")


@dataclass
class PreparedDocument:
    """A document reduced to its usable sentences (stripped, non-empty, unique when deduplicating); ``doc_id`` is
    the input's id, or its position in the input."""

    doc_id: str
    sentences: list[str]
    duplicates_removed: int = 0
    empty_removed: int = 0


@dataclass
class Skipped:
    """A document that cannot be used, with the reason (one of ``SKIP_REASONS``)."""

    doc_id: str
    reason: str
    detail: str = ""


def raw_sentences(
    doc: Any, sentences_key: str = "sentences", text_key: str = "text", id_key: str = "id", language: str = "en"
) -> tuple[str | None, list[Any] | None, str]:
    """(id, raw sentence list or None, why not) for one input item, splitting text when needed: how mining reads
    a document, and so how :func:`~st_infocse.mining.check_documents` finds a usable one."""
    doc_id = None
    if isinstance(doc, Mapping):
        raw_id = doc.get(id_key)
        doc_id = None if raw_id is None else str(raw_id)
        if doc.get(sentences_key) is not None:
            doc = doc[sentences_key]
        elif doc.get(text_key) is not None:
            doc = doc[text_key]
        else:
            return doc_id, None, f"no {sentences_key!r} or {text_key!r} field"
    if isinstance(doc, str):
        return doc_id, split_sentences(doc, language), ""
    if isinstance(doc, (list, tuple)):
        bad = next((type(s).__name__ for s in doc if not isinstance(s, str)), None)
        return (doc_id, None, f"sentence of type {bad}") if bad else (doc_id, list(doc), "")
    return doc_id, None, f"document of type {type(doc).__name__}"


def prepare_documents(
    documents: Iterable[Any], *, min_sentences: int = 2, max_sentences: int | None = 1000, deduplicate: bool = True,
    language: str = "en", sentences_key: str = "sentences", text_key: str = "text", id_key: str = "id",
) -> Iterator[PreparedDocument | Skipped]:
    """Turn any supported document form into sentence lists, lazily, flagging unusable ones.

    A document may be a list of sentences, a raw text (split with :func:`split_sentences`), or a
    mapping (e.g. a ``datasets.Dataset`` row) with a ``sentences`` list or a ``text`` string and
    an optional ``id``. Each input item yields exactly one :class:`PreparedDocument` or one
    :class:`Skipped`, so counts always add up. The arguments are checked at the call, before any
    document is read.

    Args:
        documents: Any iterable of documents, consumed once and lazily.
        min_sentences: Fewer usable sentences than this skips the document (``too_few_sentences``);
            at least 2 (a pair needs two sentences; a smaller value is refused with a ``ValueError``).
        max_sentences: More sentences than this skips the document (``too_many_sentences``);
            the graph step is quadratic in a document's length. ``None`` disables the cap.
        deduplicate: Keep only the first of identical sentences within a document.
        language: Language code for splitting raw text.
        sentences_key: Mapping key holding a sentence list.
        text_key: Mapping key holding raw text.
        id_key: Mapping key holding the document id.

    Yields:
        One :class:`PreparedDocument` or :class:`Skipped` per input item.

    Example:
        >>> docs = [["A cat sat.", "A dog ran.", "A cat sat."], "One sentence only.", None]
        >>> [getattr(d, "reason", None) or d.sentences for d in prepare_documents(docs)]
        [['A cat sat.', 'A dog ran.'], 'too_few_sentences', 'not_text']
    """
    if min_sentences < 2:
        raise ValueError(f"min_sentences must be at least 2 (a pair needs two sentences), got {min_sentences}")
    if max_sentences is not None and max_sentences < min_sentences:
        raise ValueError(f"max_sentences ({max_sentences}) must be >= min_sentences ({min_sentences})")

    def prepared() -> Iterator[PreparedDocument | Skipped]:
        for position, doc in enumerate(documents):
            doc_id, raw, detail = raw_sentences(doc, sentences_key, text_key, id_key, language)
            doc_id = str(position) if doc_id is None else doc_id
            if raw is None:
                yield Skipped(doc_id, "not_text", detail)
                continue
            kept = [s.strip() for s in raw if s.strip()]
            unique = list(dict.fromkeys(kept)) if deduplicate else kept
            if not kept:
                yield Skipped(doc_id, "empty")
            elif len(unique) < min_sentences:
                yield Skipped(doc_id, "too_few_sentences", f"{len(unique)} sentence(s)")
            elif max_sentences is not None and len(unique) > max_sentences:
                yield Skipped(doc_id, "too_many_sentences", f"{len(unique)} sentences")
            else:
                yield PreparedDocument(doc_id, unique, len(kept) - len(unique), len(raw) - len(kept))

    return prepared()
