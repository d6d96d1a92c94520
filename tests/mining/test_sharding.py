"""Mining split across processes: each process mines one shard of the documents, the union is the whole."""

from datasets import Dataset, concatenate_datasets

from st_infocse.mining import mine_pairs

from ..conftest import random_sentences


def _as_set(pairs: Dataset) -> set[tuple[str, str, str]]:
    return set(zip(pairs["doc_id"], pairs["anchor"], pairs["positive"], strict=True))


def test_shards_mined_separately_add_up_to_the_whole(make_model):
    model = make_model()
    model.eval()
    documents = Dataset.from_dict(
        {"id": [f"doc-{i}" for i in range(9)], "sentences": [random_sentences(6, seed=i) for i in range(9)]}
    )
    whole = mine_pairs(documents, model, show_progress_bar=False)
    shards = [mine_pairs(documents.shard(num_shards=3, index=i), model, show_progress_bar=False) for i in range(3)]

    assert sum(s.report.documents_seen for s in shards) == whole.report.documents_seen == 9
    combined = concatenate_datasets([s.pairs for s in shards])
    assert len(combined) == len(whole.pairs) > 0
    assert _as_set(combined) == _as_set(whole.pairs)
