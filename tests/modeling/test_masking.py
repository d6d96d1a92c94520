import pytest
import torch
from transformers import AutoTokenizer

from st_infocse.modeling import TokenMasker

from ..conftest import random_sentences


@pytest.fixture
def tokenizer(tiny_bert_dir):
    return AutoTokenizer.from_pretrained(str(tiny_bert_dir))


def test_masking_rate_and_protected_tokens(tokenizer):
    torch.manual_seed(0)
    batch = tokenizer(random_sentences(400, seed=1, min_words=2, max_words=20), padding=True, return_tensors="pt")
    ids, mask = batch["input_ids"], batch["attention_mask"]
    masked, labels = TokenMasker(tokenizer, mask_rate=0.4)(ids, mask)

    chosen = labels != -100
    special = torch.isin(ids, torch.tensor(tokenizer.all_special_ids)) | (mask == 0)
    assert not chosen[special].any(), "special or padding tokens were chosen"
    # Unchosen positions are untouched, and labels hold the original ids.
    assert torch.equal(masked[~chosen], ids[~chosen])
    assert torch.equal(labels[chosen], ids[chosen])

    real = (~special).sum().item()
    rate = chosen.sum().item() / real
    assert abs(rate - 0.4) < 0.02, rate
    # 80% [MASK], 10% random, 10% unchanged among chosen positions.
    as_mask = (masked[chosen] == tokenizer.mask_token_id).float().mean().item()
    unchanged = (masked[chosen] == ids[chosen]).float().mean().item()
    assert abs(as_mask - 0.8) < 0.03, as_mask
    assert 0.07 < unchanged < 0.15, unchanged


def test_views_get_independent_masks(tokenizer):
    batch = tokenizer(random_sentences(32, seed=2), padding=True, return_tensors="pt")
    masker = TokenMasker(tokenizer, mask_rate=0.4)
    _, first = masker(batch["input_ids"], batch["attention_mask"])
    _, second = masker(batch["input_ids"], batch["attention_mask"])
    assert not torch.equal(first, second)


def test_tokenizer_without_mask_token_is_refused(tiny_bert_nomask_dir):
    tokenizer = AutoTokenizer.from_pretrained(str(tiny_bert_nomask_dir))
    assert tokenizer.mask_token is None
    with pytest.raises(ValueError, match="no mask token"):
        TokenMasker(tokenizer)


@pytest.mark.parametrize("rate", [0.0, 1.0, -0.1])
def test_mask_rate_out_of_range(tokenizer, rate):
    with pytest.raises(ValueError, match="mask_rate"):
        TokenMasker(tokenizer, mask_rate=rate)
