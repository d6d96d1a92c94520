"""What BM25 needs installed (:data:`BM25_NEEDS`) and the one check of the language it tokenises in
(:class:`~st_infocse.evaluation.LexicalSettings` runs it when built), kept apart from the BM25 code so that the
command line can run it before torch and the model are imported."""

from __future__ import annotations

import difflib
import importlib.util

#: What BM25 needs beyond the core install, and how to install it.
BM25_NEEDS = "bm25s and PyStemmer: pip install 'st-infocse[eval]'"


def check_language(language: str, stem: bool = True, stopwords: bool = True) -> None:
    """Refuse a language BM25 cannot tokenise in, in one line, before any corpus is read.

    Args:
        language: Checked against the stemmer's own languages (PyStemmer's ``algorithms()``), the closest one named.
        stem: Whether the stemmer is used; without PyStemmer installed only ``"english"`` passes unchecked.
        stopwords: Whether ``bm25s``' stop-word list is used: checked by its own lookup, which raises for a language
            it has no list of.

    Raises:
        ValueError: Starting with ``language <name>``, so that a caller can put its own name for the setting first.
    """
    if stem and importlib.util.find_spec("Stemmer") is None:
        if language != "english":
            raise ValueError(f"language {language} cannot be checked without {BM25_NEEDS}")
        return
    if stem:
        import Stemmer

        if language not in (known := sorted(Stemmer.algorithms())):
            close = difflib.get_close_matches(language, known, n=1)
            raise ValueError(f"language {language} is not a language of the stemmer"
                             f"{f' (did you mean {close[0]}?)' if close else ''}; it knows {', '.join(known)}")
    if stopwords and importlib.util.find_spec("bm25s") is not None:
        from bm25s.tokenization import _infer_stopwords  # what bm25s.tokenize(stopwords=language) looks up

        try:
            _infer_stopwords(language)
        except ValueError:
            raise ValueError(f"language {language}: bm25s has no stop-word list for it (without stop words, "
                             "every token is kept)") from None
