"""IDC graph and pair mining on hand-built embeddings (exact answers) and on a tiny real model."""

from __future__ import annotations

import math
from collections import Counter

import numpy as np
import pytest
from datasets import Dataset
from sentence_transformers.sentence_transformer.losses import MultipleNegativesRankingLoss

from st_infocse.mining import (
    adjacent_pairs,
    cluster_documents,
    cluster_sentences,
    context_pairs,
    mine_pairs,
    train_idc_rounds,
)


def unit(degrees: float) -> list[float]:
    return [math.cos(math.radians(degrees)), math.sin(math.radians(degrees))]


# s0..s5 on the unit circle. Nearest neighbours: s0<->s1, s2->s1, s3<->s4, s5->s4 (85 deg away),
# so K=1 gives {s0,s1,s2} and {s3,s4,s5}.
ANGLES = {"s0": 0, "s1": 10, "s2": 30, "s3": 100, "s4": 115, "s5": 200}
TABLE = {text: unit(angle) for text, angle in ANGLES.items()}


def pair_set(pairs: Dataset) -> set[tuple[str, str, str, int]]:
    return set(zip(pairs["doc_id"], pairs["anchor"], pairs["positive"], pairs["cluster_id"], strict=True))


def test_top1_clusters_on_hand_built_vectors():
    emb = np.array([TABLE[f"s{i}"] for i in range(6)])
    assert cluster_sentences(emb).tolist() == [0, 0, 0, 1, 1, 1]
    # The floor cuts s5's only edge (cos 85 deg = 0.087): it becomes its own cluster.
    assert cluster_sentences(emb, threshold=0.5).tolist() == [0, 0, 0, 1, 1, 2]
    # K=2 adds s3 -> s2 (70 deg, s3's second nearest), joining everything.
    assert cluster_sentences(emb, k=2).tolist() == [0, 0, 0, 0, 0, 0]
    # K larger than the document is the same as "everyone".
    assert cluster_sentences(emb, k=50).tolist() == [0] * 6
    # Scale does not matter (cosine), a single sentence is its own cluster, no sentence no cluster.
    assert cluster_sentences(emb * 7.5).tolist() == [0, 0, 0, 1, 1, 1]
    assert cluster_sentences(emb[:1]).tolist() == [0]
    assert cluster_sentences(np.zeros((0, 2))).tolist() == []
    assert cluster_sentences([]).tolist() == cluster_sentences(np.array([])).tolist() == []  # as encode([]) gives
    with pytest.raises(ValueError, match="similarity"):  # the arguments are checked all the same
        cluster_sentences([], similarity="euclid")


def test_ties_are_all_kept_and_order_does_not_matter():
    # a is exactly as close to b as to c (cos 0.6 both); b and c have closer partners b2, c2.
    # Index-based tie breaking would link a to b only and split {a, b, b2} from {c, c2}.
    vectors = {"a": [1, 0], "b": [0.6, 0.8], "c": [0.6, -0.8], "b2": unit(60), "c2": unit(-60)}
    order = ["a", "b", "b2", "c", "c2"]
    assert cluster_sentences(np.array([vectors[t] for t in order])).tolist() == [0, 0, 0, 0, 0]
    reordered = ["c2", "c", "a", "b2", "b"]
    assert cluster_sentences(np.array([vectors[t] for t in reordered])).tolist() == [0, 0, 0, 0, 0]
    # Without a, the two halves are separate clusters.
    assert cluster_sentences(np.array([vectors[t] for t in ["b", "b2", "c", "c2"]])).tolist() == [0, 0, 1, 1]


def test_block_diagonal_batch_matches_one_document_at_a_time():
    rng = np.random.default_rng(0)
    lengths = rng.integers(1, 12, size=40)
    emb = rng.normal(size=(lengths.sum(), 8))
    labels, first = cluster_documents(emb, lengths, k=2, threshold=0.1)
    start = 0
    for n in lengths:
        expected = cluster_sentences(emb[start : start + n], k=2, threshold=0.1)
        assert labels[start : start + n].tolist() == expected.tolist()
        # The cluster key is the global index of the cluster's first sentence.
        assert all(first[start + i] == start + np.flatnonzero(expected == expected[i])[0] for i in range(n))
        start += n


def test_graph_input_errors_are_clear():
    with pytest.raises(ValueError, match="NaN or inf"):
        cluster_sentences(np.array([[1.0, 0.0], [np.nan, 1.0]]))
    with pytest.raises(ValueError, match="k must be at least 1, got 0"):
        cluster_sentences(np.eye(3), k=0)
    with pytest.raises(ValueError, match="totalling"):
        cluster_documents(np.eye(3), [2, 2])


def test_exact_pairs_and_counted_skips(lookup_encoder):
    encoder = lookup_encoder(TABLE)
    docs = [
        {"id": "good", "sentences": ["s0", "s1", "s2", "s3", "s4", "s5"]},
        {"id": "dups", "sentences": ["s0", "s3", "s0", "  ", "s3", "s1"]},
        {"id": "one", "sentences": ["s0"]},
        {"id": "same", "sentences": ["s2", "s2", "s2"]},
        {"id": "empty-list", "sentences": []},
        {"id": "blank", "text": "   \n  "},
        {"id": "no-fields"},
        {"id": "numbers", "sentences": [1, 2]},
        42,
        None,
        {"id": "huge", "sentences": [f"h{i}" for i in range(20)]},
    ]
    pairs, report = mine_pairs(docs, encoder, max_sentences=10, show_progress_bar=False)
    assert list(pairs.column_names) == ["anchor", "positive", "doc_id", "cluster_id"]
    assert pair_set(pairs) == {
        ("good", "s0", "s1", 0),
        ("good", "s0", "s2", 0),
        ("good", "s1", "s2", 0),
        ("good", "s3", "s4", 1),
        ("good", "s3", "s5", 1),
        ("good", "s4", "s5", 1),
        # "dups" deduplicates to [s0, s3, s1]: s3's nearest is s1 (90 deg) -> one cluster.
        ("dups", "s0", "s3", 0),
        ("dups", "s0", "s1", 0),
        ("dups", "s3", "s1", 0),
    }
    assert len(pairs) == 9 == report.pairs
    assert report.documents_seen == 11
    assert report.documents_used == 2
    assert report.skipped == {"not_text": 4, "empty": 2, "too_few_sentences": 2, "too_many_sentences": 1}
    assert report.documents_seen == report.documents_used + report.documents_skipped
    assert ("8", "document of type int") in report.skipped_examples["not_text"]
    assert report.duplicate_sentences_removed == 2
    assert report.empty_sentences_removed == 1
    assert report.sentences == 9
    assert report.clusters == 3 and report.singleton_clusters == 0
    assert report.pairs_per_document == 4.5
    # One encode call, each distinct text once, longest first; skipped documents never encoded.
    assert len(encoder.calls) == 1 == report.shards
    assert sorted(encoder.calls[0]) == ["s0", "s1", "s2", "s3", "s4", "s5"]


def test_default_cap_skips_a_document_of_thousands_of_sentences(lookup_encoder):
    encoder = lookup_encoder(TABLE)
    huge = [f"line {i}" for i in range(5000)]
    pairs, report = mine_pairs([huge, ["s0", "s1"]], encoder, show_progress_bar=False)
    assert report.skipped["too_many_sentences"] == 1 and len(pairs) == 1
    assert encoder.calls == [["s0", "s1"]]  # the huge document was never encoded


def test_without_deduplication_identical_sentences_pair_up(lookup_encoder):
    docs = [{"id": "dups", "sentences": ["s0", "s3", "s0", "s3", "s1"]}]
    pairs, report = mine_pairs(docs, lookup_encoder(TABLE), deduplicate=False, show_progress_bar=False)
    # Copies are each other's nearest (cos 1); s1 is tied between both copies of s0 and keeps both edges.
    assert pair_set(pairs) == {
        ("dups", "s0", "s0", 0),
        ("dups", "s0", "s1", 0),
        ("dups", "s0", "s1", 0),
        ("dups", "s3", "s3", 1),
    }
    assert len(pairs) == 4 and report.duplicate_sentences_removed == 0


def test_threshold_can_leave_a_document_without_pairs(lookup_encoder):
    docs = [["s0", "s3"], ["s0", "s1"]]  # 100 deg apart; 10 deg apart
    pairs, report = mine_pairs(docs, lookup_encoder(TABLE), threshold=0.5, show_progress_bar=False)
    assert pair_set(pairs) == {("1", "s0", "s1", 0)}
    assert report.documents_without_pairs == 1
    assert report.singleton_clusters == 2 and report.clusters == 3


def test_cap_is_seeded_and_independent_of_shards(lookup_encoder):
    rng = np.random.default_rng(1)
    docs = [[f"d{d}s{i}" + "x" * int(rng.integers(0, 5)) for i in range(int(rng.integers(2, 10)))] for d in range(30)]
    encoder = lookup_encoder({s: rng.normal(size=4).tolist() for doc in docs for s in doc})
    kwargs = {"k": 3, "max_pairs_per_cluster": 4, "show_progress_bar": False}
    one_shard, report = mine_pairs(docs, encoder, seed=5, **kwargs)
    assert report.pairs_dropped_by_cap > 0
    per_cluster = Counter(zip(one_shard["doc_id"], one_shard["cluster_id"], strict=True))
    assert max(per_cluster.values()) == 4
    encoder.calls.clear()
    many_shards, report_many = mine_pairs(docs, encoder, seed=5, shard_sentences=7, **kwargs)
    assert report_many.shards == len(encoder.calls) > 3
    for call in encoder.calls:
        assert [len(t) for t in call] == sorted((len(t) for t in call), reverse=True)
    assert one_shard.to_dict() == many_shards.to_dict()
    again, _ = mine_pairs(docs, encoder, seed=5, **kwargs)
    assert again.to_dict() == one_shard.to_dict()
    other, _ = mine_pairs(docs, encoder, seed=6, **kwargs)
    assert other.to_dict() != one_shard.to_dict()
    assert len(other) == len(one_shard)


def test_streaming_input_and_on_disk_output(lookup_encoder, tmp_path):
    docs = [["s0", "s1", "s2"], ["s3", "s4", "s5"], ["s0", "s5"]] * 5
    in_memory, _ = mine_pairs(docs, lookup_encoder(TABLE), show_progress_bar=False)
    stream = (d for d in docs)  # a one-shot iterator, read lazily
    on_disk, report = mine_pairs(
        stream, lookup_encoder(TABLE), shard_sentences=4, output_dir=tmp_path / "pairs", show_progress_bar=False
    )
    assert report.shards == 8
    assert on_disk.cache_files and all(str(tmp_path) in f["filename"] for f in on_disk.cache_files)
    assert on_disk.to_dict() == in_memory.to_dict()
    with pytest.raises(FileExistsError):
        mine_pairs(docs, lookup_encoder(TABLE), output_dir=tmp_path / "pairs")


def test_mined_pairs_save_writes_the_dataset_and_the_report(lookup_encoder, tmp_path):
    import json

    from datasets import load_from_disk

    mined = mine_pairs([["s0", "s1", "s2"], ["s3"]], lookup_encoder(TABLE), show_progress_bar=False)
    written = mined.save(tmp_path / "out")
    assert written == {"dataset": tmp_path / "out" / "pairs", "report": tmp_path / "out" / "report.json"}
    assert load_from_disk(str(written["dataset"])).to_dict() == mined.pairs.to_dict()
    assert json.loads(written["report"].read_text()) == json.loads(json.dumps(mined.report.to_dict(), default=str))


def test_dataset_inputs_with_raw_text_and_ids(lookup_encoder):
    table = {"Cats purr.": unit(0), "Cats nap.": unit(5), "Kings rule.": unit(90), "Queens rule.": unit(95)}
    rows = {
        "id": ["w1", "w2"],
        "title": ["ignored", "ignored"],
        "text": ["Cats purr. Kings rule.\nCats nap. Queens rule.", "Cats nap."],
    }
    for documents in (Dataset.from_dict(rows), Dataset.from_dict(rows).to_iterable_dataset()):
        pairs, report = mine_pairs(documents, lookup_encoder(table), show_progress_bar=False)
        assert pair_set(pairs) == {("w1", "Cats purr.", "Cats nap.", 0), ("w1", "Kings rule.", "Queens rule.", 1)}
        assert report.skipped["too_few_sentences"] == 1
    with pytest.raises(ValueError, match=r"need a 'sentences' \(list\) or 'text' column; found \['body'\]"):
        mine_pairs(Dataset.from_dict({"body": ["x"]}), lookup_encoder(table))


def test_broken_model_output_is_a_clear_error(lookup_encoder):
    with pytest.raises(ValueError, match="NaN or inf"):
        mine_pairs([["s0", "s1"]], lookup_encoder({"s0": [1.0, 0.0], "s1": [float("nan"), 0.0]}))


def test_arguments_that_would_be_dropped_are_refused_before_anything_is_encoded(lookup_encoder, tmp_path):
    table = {"s0": [1.0, 0.0], "s1": [0.0, 1.0]}
    # encode_kwargs overriding what mining sets itself (before, batch_size=8 here silently beat batch_size=64).
    for key in ("batch_size", "normalize_embeddings", "convert_to_numpy", "pool"):
        with pytest.raises(ValueError, match=f"encode_kwargs sets {key}, which mining sets itself"):
            mine_pairs([["s0", "s1"]], lookup_encoder(table), encode_kwargs={key: 8}, batch_size=64)
    # min_sentences below 2 (before, raised to 2 in silence); refused before the output folder is made.
    with pytest.raises(ValueError, match="min_sentences must be at least 2"):
        mine_pairs([["s0", "s1"]], lookup_encoder(table), min_sentences=1, output_dir=tmp_path / "out")
    with pytest.raises(ValueError, match="min_sentences must be at least 2"):
        adjacent_pairs([["s0", "s1"]], min_sentences=0)
    assert not (tmp_path / "out").exists()


def test_the_pair_builders_read_documents_with_one_set_of_arguments():
    import inspect

    from st_infocse.mining.idc import READING_ARGUMENTS
    from st_infocse.mining.sentences import prepare_documents

    reading = {}
    for builder in (mine_pairs, adjacent_pairs, context_pairs):
        parameters = inspect.signature(builder).parameters
        shared = {name: parameters[name].default for name in READING_ARGUMENTS}
        assert reading in ({}, shared)  # the same names and defaults in each
        reading = shared
        with pytest.raises(TypeError, match=rf"{builder.__name__}\(\) got an unexpected keyword argument 'min_sentence'"):
            builder([["a", "b"]], *([None] if builder is mine_pairs else []), min_sentence=3)
    # the defaults are prepare_documents' own, not a copy
    for name, parameter in inspect.signature(prepare_documents).parameters.items():
        if name in reading:
            assert reading[name] == parameter.default
    pairs, report = adjacent_pairs([["a", "b", "c"]], min_sentences=4, show_progress_bar=False)  # applied, not dropped
    assert len(pairs) == 0 and report.skipped["too_few_sentences"] == 1


def test_adjacent_pairs():
    pairs, report = adjacent_pairs([["a", "b", "c"], ["d"], ["e", "f", "e"], 3.5], show_progress_bar=False)
    assert pair_set(pairs) == {("0", "a", "b", 0), ("0", "b", "c", 1), ("2", "e", "f", 0)}
    assert report.skipped["too_few_sentences"] == 1 and report.skipped["not_text"] == 1
    assert report.duplicate_sentences_removed == 1


def test_context_pairs_take_each_sentence_and_the_rest_of_its_document(tmp_path):
    docs = [["a", "b", "c"], ["d"], ["e", "f", "e"], 3.5, {"id": "x", "sentences": ["g", "h"]}]
    pairs, report = context_pairs(docs, show_progress_bar=False, shard_sentences=2, output_dir=tmp_path / "pairs")
    assert pair_set(pairs) == {("0", "a", "b c", 0), ("0", "b", "a c", 1), ("0", "c", "a b", 2),
                               ("2", "e", "f", 0), ("2", "f", "e", 1), ("x", "g", "h", 0), ("x", "h", "g", 1)}
    assert report.method == "context" and report.pairs == 7 and report.sentences_encoded == 0
    assert report.skipped["too_few_sentences"] == 1 and report.skipped["not_text"] == 1
    assert report.duplicate_sentences_removed == 1 and report.shards > 1  # shards never split a document
    assert report.pairs_summary("ICT pairs") == ("3 documents -> 7 ICT pairs; skipped 2 documents "
                                                 "(not_text=1, too_few_sentences=1)")
    assert context_pairs([["a", "b"]], show_progress_bar=False).report.pairs_summary() == "1 documents -> 2 pairs"
    with pytest.raises(ValueError, match="at least 2"):
        context_pairs(docs, min_sentences=1)


def _find(parent: list[int], x: int) -> int:
    while parent[x] != x:
        x = parent[x]
    return x


def _reference_pairs(docs: list[list[str]], vectors: dict[str, np.ndarray]) -> set[tuple[str, str, str]]:
    """Brute force, one document at a time: every nearest neighbour, union-find, all pairs per component."""
    out = set()
    for d, doc in enumerate(docs):
        emb = np.array([vectors[s] for s in doc], dtype=np.float32)
        sims = emb @ emb.T
        np.fill_diagonal(sims, -np.inf)
        parent = list(range(len(doc)))
        for i in range(len(doc)):
            for j in np.flatnonzero(sims[i] == sims[i].max()):
                parent[_find(parent, i)] = _find(parent, int(j))
        for i in range(len(doc)):
            for j in range(i + 1, len(doc)):
                if _find(parent, i) == _find(parent, j):
                    out.add((str(d), doc[i], doc[j]))
    return out


class Recording:
    """Wraps a model and keeps the vector it returned for each text, for the brute-force reference."""

    def __init__(self, model) -> None:
        self.model = model
        self.vectors: dict[str, np.ndarray] = {}

    def encode(self, texts, **kwargs):
        out = self.model.encode(texts, **kwargs)
        self.vectors.update(zip(texts, out, strict=True))
        return out


def test_tiny_model_mining_matches_brute_force(make_model, topic_docs):
    model = Recording(make_model())
    # A random tiny BERT puts all sentences within ~1e-5 cosine of each other, so compare with
    # exact ties only (real models are far from this; see the tie tests above for tolerance).
    pairs, report = mine_pairs(topic_docs, model, batch_size=16, tie_tolerance=0.0, show_progress_bar=False)
    assert set(zip(pairs["doc_id"], pairs["anchor"], pairs["positive"], strict=True)) == _reference_pairs(
        topic_docs, model.vectors
    )
    # With K=1 and no floor every sentence has a neighbour: no singletons, every sentence is in a pair.
    assert report.singleton_clusters == 0
    assert {s for doc in topic_docs for s in doc} == set(pairs["anchor"]) | set(pairs["positive"])


def test_multi_process_pool(make_model, topic_docs):
    model = make_model()
    recording = Recording(model)
    pool = model.start_multi_process_pool(["cpu"])
    try:
        pairs, report = mine_pairs(
            topic_docs,
            recording,
            pool=pool,
            encode_kwargs={"chunk_size": 16},
            tie_tolerance=0.0,
            show_progress_bar=False,
        )
    finally:
        model.stop_multi_process_pool(pool)
    assert report.sentences_encoded > 16  # several chunks went through the pool
    assert set(zip(pairs["doc_id"], pairs["anchor"], pairs["positive"], strict=True)) == _reference_pairs(
        topic_docs, recording.vectors
    )


# Norms differ: m is closer in angle to a1 (30 deg) than to b0 (40 deg), but b0 is twice as long.
# Cosine: a0<->a1, m->a1, b0<->b1 -> {a0, a1, m}, {b0, b1}.
# Dot: m.b0 = 2 cos 40 = 1.53 beats m.a1 = cos 30 = 0.87, so m joins b -> {a0, a1}, {m, b0, b1}.
NORMED = {"a0": unit(0), "a1": unit(10), "m": unit(40), "b0": [2 * x for x in unit(80)], "b1": unit(90)}
NORMED_ORDER = ["a0", "a1", "m", "b0", "b1"]


def test_dot_and_cosine_choose_different_neighbours_when_norms_differ():
    emb = np.array([NORMED[t] for t in NORMED_ORDER])
    assert cluster_sentences(emb).tolist() == [0, 0, 0, 1, 1]
    assert cluster_sentences(emb, similarity="cosine").tolist() == [0, 0, 0, 1, 1]
    assert cluster_sentences(emb, similarity="dot").tolist() == [0, 0, 1, 1, 1]
    # The floor is on the score in use: a0.a1 = 0.985 < 1 is cut, b0's edges (>= 1.53) stay.
    assert cluster_sentences(emb, threshold=1.0, similarity="dot").tolist() == [0, 1, 2, 2, 2]
    # A long vector becomes everyone's top-1 under dot (hubness); cosine ignores its length.
    hub = np.array([unit(0), unit(10), [5 * x for x in unit(50)], unit(80), unit(90)])
    assert cluster_sentences(hub, similarity="dot").tolist() == [0, 0, 0, 0, 0]
    assert cluster_sentences(hub, similarity="cosine").tolist() == [0, 0, 1, 1, 1]


def test_dot_and_cosine_agree_on_unit_norm_embeddings(lookup_encoder):
    rng = np.random.default_rng(3)
    lengths = rng.integers(1, 10, size=30)
    emb = rng.normal(size=(lengths.sum(), 6))
    emb /= np.linalg.norm(emb, axis=1, keepdims=True)
    cosine = cluster_documents(emb, lengths, k=2, similarity="cosine")
    dot = cluster_documents(emb, lengths, k=2, similarity="dot")
    assert cosine[0].tolist() == dot[0].tolist() and cosine[1].tolist() == dot[1].tolist()
    docs = [{"id": "a", "sentences": ["s0", "s1", "s2", "s3", "s4", "s5"]}, ["s5", "s0", "s3"]]
    by_cosine, _ = mine_pairs(docs, lookup_encoder(TABLE), show_progress_bar=False)
    by_dot, report = mine_pairs(docs, lookup_encoder(TABLE), similarity="dot", show_progress_bar=False)
    assert len(by_dot) == 9 and by_dot.to_dict() == by_cosine.to_dict()
    assert (report.similarity, report.k, report.threshold) == ("dot", 1, None)


class KwargsRecorder:
    """A lookup encoder that also keeps the keyword arguments of each encode call."""

    def __init__(self, table: dict[str, list[float]]) -> None:
        self.table = table
        self.kwargs: list[dict] = []

    def encode(self, texts: list[str], **kwargs) -> np.ndarray:
        self.kwargs.append(kwargs)
        return np.array([self.table[t] for t in texts], dtype=np.float32)


def test_dot_mining_keeps_the_model_norms_and_is_recorded():
    encoder = KwargsRecorder(NORMED)
    pairs, report = mine_pairs([NORMED_ORDER], encoder, similarity="dot", threshold=0.5, show_progress_bar=False)
    assert set(zip(pairs["anchor"], pairs["positive"], strict=True)) == {
        ("a0", "a1"),
        ("m", "b0"),
        ("m", "b1"),
        ("b0", "b1"),
    }
    assert encoder.kwargs[0]["normalize_embeddings"] is False
    assert report.to_dict()["similarity"] == "dot" and report.to_dict()["threshold"] == 0.5
    assert "dot" in report.summary()
    _, cosine_report = mine_pairs([NORMED_ORDER], encoder, show_progress_bar=False)
    assert encoder.kwargs[1]["normalize_embeddings"] is True and cosine_report.similarity == "cosine"
    _, adjacent = adjacent_pairs([NORMED_ORDER], show_progress_bar=False)
    assert adjacent.similarity is None and adjacent.k is None


def test_unknown_similarity_is_a_clear_error(lookup_encoder):
    for call in (
        lambda: cluster_sentences(np.eye(3), similarity="inner"),
        lambda: cluster_documents(np.eye(3), [3], similarity="Cosine"),
        lambda: mine_pairs([["s0", "s1"]], lookup_encoder(TABLE), similarity="euclidean"),
    ):
        with pytest.raises(ValueError, match="similarity must be one of cosine, dot, got"):
            call()


def test_rounds_pass_the_similarity_on_and_check_it_before_training(make_model, topic_docs, small_training_args):
    model = make_model()
    with pytest.raises(ValueError, match="similarity must be"):
        # An adjacent first round mines nothing: the value must be refused before it trains.
        train_idc_rounds(
            model,
            topic_docs,
            MultipleNegativesRankingLoss,
            initial_annotation="adjacent",
            mining_kwargs={"similarity": "dotproduct"},
            training_args=small_training_args,
        )
    result = train_idc_rounds(
        model,
        topic_docs[:8],
        MultipleNegativesRankingLoss,
        rounds=1,
        mining_kwargs={"similarity": "dot", "k": 2},
        training_args=small_training_args,
    )
    assert result.rounds[0].mining["similarity"] == "dot" and result.rounds[0].mining["k"] == 2
