import pytest
import torch
from transformers import AutoTokenizer, DataCollatorForLanguageModeling

from st_infocse.modeling import TokenMasker
from st_infocse.modeling.masking import WholeWordMasker

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


def _collator_masks(tokenizer, ids, mask, rate):
    collator = DataCollatorForLanguageModeling(tokenizer=tokenizer, mlm=True, mlm_probability=rate, return_tensors="pt")
    protected = torch.isin(ids, torch.tensor(tokenizer.all_special_ids)) | (mask == 0)
    return collator.torch_mask_tokens(ids.clone(), special_tokens_mask=protected)


@pytest.mark.parametrize("rate", [0.15, 0.4])
def test_cpu_masks_are_the_collators_draw_for_draw(tokenizer, rate):
    # The same random calls in the same order: a seed gives what the collator gives, bit for bit.
    batch = tokenizer(random_sentences(64, seed=3), padding=True, return_tensors="pt")
    ids, mask = batch["input_ids"], batch["attention_mask"]
    masker = TokenMasker(tokenizer, mask_rate=rate)
    for seed in range(3):
        torch.manual_seed(seed)
        expected = _collator_masks(tokenizer, ids, mask, rate)
        torch.manual_seed(seed)
        got = masker(ids, mask)
        assert torch.equal(got[0], expected[0]) and torch.equal(got[1], expected[1])


def test_masking_statistics_match_the_collators(tokenizer):
    batch = tokenizer(random_sentences(2000, seed=4, min_words=2, max_words=20), padding=True, return_tensors="pt")
    ids, mask = batch["input_ids"], batch["attention_mask"]
    special = torch.isin(ids, torch.tensor(tokenizer.all_special_ids)) | (mask == 0)

    def rates(masked, labels):
        chosen = labels != -100
        assert not chosen[special].any(), "special or padding tokens were chosen"
        as_mask = chosen & (masked == tokenizer.mask_token_id)
        kept = chosen & (masked == ids)
        # A random draw can hit the original token or [MASK]; those count as kept / masked in both.
        as_random = chosen & ~as_mask & ~kept
        real = (~special).sum()
        return torch.stack([chosen.sum() / real, *(x.sum() / chosen.sum() for x in (as_mask, as_random, kept))])

    # Different seeds: the rates agree as statistics, not draw for draw.
    torch.manual_seed(10)
    ours = rates(*TokenMasker(tokenizer, mask_rate=0.3, seed=11)(ids, mask))
    torch.manual_seed(12)
    theirs = rates(*_collator_masks(tokenizer, ids, mask, 0.3))
    assert torch.allclose(ours, theirs, atol=0.015), (ours, theirs)
    assert torch.allclose(ours, torch.tensor([0.3, 0.8, 0.1, 0.1]), atol=0.02), ours


def test_seeded_masker_has_its_own_stream(tokenizer):
    batch = tokenizer(random_sentences(16, seed=5), padding=True, return_tensors="pt")
    ids, mask = batch["input_ids"], batch["attention_mask"]
    first = TokenMasker(tokenizer, seed=3)
    second = TokenMasker(tokenizer, seed=3)
    state = torch.get_rng_state()
    a = [first(ids, mask) for _ in range(2)]
    assert torch.equal(torch.get_rng_state(), state), "a seeded masker drew from the global generator"
    b = [second(ids, mask) for _ in range(2)]
    assert all(torch.equal(x[1], y[1]) for x, y in zip(a, b, strict=True))
    assert not torch.equal(a[0][1], a[1][1])


def test_tokenizer_without_mask_token_is_refused(tiny_bert_nomask_dir):
    tokenizer = AutoTokenizer.from_pretrained(str(tiny_bert_nomask_dir))
    assert tokenizer.mask_token is None
    with pytest.raises(ValueError, match="no mask token"):
        TokenMasker(tokenizer)


@pytest.mark.parametrize("rate", [0.0, 1.0, -0.1])
def test_mask_rate_out_of_range(tokenizer, rate):
    with pytest.raises(ValueError, match="mask_rate"):
        TokenMasker(tokenizer, mask_rate=rate)


# ------------------------------------------------------------------------------------------- whole-word masking

STEMS = ("walk", "talk", "jump", "paint", "read", "sing")
SUFFIXES = ("##er", "##s", "##ing", "##ed")


@pytest.fixture
def wordpiece_tokenizer():
    """A WordPiece vocabulary in which inflected stems split into two or three pieces (walk ##er ##s)."""
    from transformers import BertTokenizerFast

    from ..conftest import SPECIAL, WORDS

    vocab = [*SPECIAL, *WORDS, *STEMS, *SUFFIXES]
    return BertTokenizerFast(vocab={token: i for i, token in enumerate(vocab)})


def _pieced_sentences(n: int, seed: int) -> list[str]:
    import random

    from ..conftest import WORDS

    rng = random.Random(seed)
    inflected = [stem + ending for stem in STEMS for ending in ("", "s", "er", "ers", "ing", "ed")]
    return [" ".join(rng.choices([*WORDS, *inflected], k=rng.randint(1, 24))) for _ in range(n)]


def _words(tokens: list[str]) -> list[list[int]]:
    """Positions of each word, from the token strings alone: a ## piece joins the word before it."""
    words: list[list[int]] = []
    for i, token in enumerate(tokens):
        if token in ("[CLS]", "[SEP]", "[PAD]"):
            continue
        if token.startswith("##") and words:
            words[-1].append(i)
        else:
            words.append([i])
    return words


def _batch(tokenizer, n: int = 600, seed: int = 3):
    batch = tokenizer(_pieced_sentences(n, seed), padding=True, return_tensors="pt")
    return batch["input_ids"], batch["attention_mask"]


def test_whole_words_are_masked_together_within_the_budget(wordpiece_tokenizer):
    ids, mask = _batch(wordpiece_tokenizer)
    torch.manual_seed(0)
    masked, labels = WholeWordMasker(wordpiece_tokenizer, mask_rate=0.15)(ids, mask)
    chosen = labels != -100
    assert torch.equal(masked[~chosen], ids[~chosen]) and torch.equal(labels[chosen], ids[chosen])

    pieced = reached = 0
    for row in range(ids.shape[0]):
        tokens = wordpiece_tokenizer.convert_ids_to_tokens(ids[row].tolist())
        words = _words([t for t, m in zip(tokens, mask[row].tolist(), strict=True) if m])
        picked = [w for w in words if chosen[row, w].all()]
        # A word is chosen whole or not at all: never a ## piece without its start, never a start without its pieces.
        assert all(chosen[row, w].all() or not chosen[row, w].any() for w in words), tokens
        pieced += sum(len(w) > 1 for w in picked)
        # Condenser's budget over the text tokens ([CLS] and [SEP] are added by the tokenizer).
        budget = max(1, round((int(mask[row].sum()) - 2) * 0.15))
        count = int(chosen[row].sum())
        assert count <= budget, (tokens, count, budget)
        # Short of the budget only when every word left over is longer than the room that remains.
        left = [len(w) for w in words if w not in picked]
        assert count == budget or all(size > budget - count for size in left), (tokens, count, budget)
        reached += count == budget
    assert pieced > 50, "too few multi-piece words were chosen to test anything"
    assert reached > 0.9 * ids.shape[0]


def test_whole_word_special_and_padding_tokens_are_never_chosen(wordpiece_tokenizer):
    ids, mask = _batch(wordpiece_tokenizer, n=200)
    # Text that holds special tokens of its own ([UNK], [MASK]) as well.
    ids[:, 1] = wordpiece_tokenizer.unk_token_id
    ids[:, 2] = wordpiece_tokenizer.mask_token_id
    torch.manual_seed(1)
    _, labels = WholeWordMasker(wordpiece_tokenizer, mask_rate=0.5)(ids, mask)
    special = torch.isin(ids, torch.tensor(wordpiece_tokenizer.all_special_ids)) | (mask == 0)
    assert not (labels != -100)[special].any()


def test_whole_word_replacement_is_80_10_10(wordpiece_tokenizer):
    ids, mask = _batch(wordpiece_tokenizer, n=3000, seed=4)
    torch.manual_seed(2)
    masked, labels = WholeWordMasker(wordpiece_tokenizer, mask_rate=0.3)(ids, mask)
    chosen = labels != -100
    assert chosen.sum() > 10_000
    as_mask = (masked[chosen] == wordpiece_tokenizer.mask_token_id).float().mean().item()
    unchanged = (masked[chosen] == ids[chosen]).float().mean().item()
    # Random replacements draw from the whole vocabulary, so ~1/len(vocab) of them land on the original token.
    assert abs(as_mask - 0.8) < 0.015, as_mask
    assert abs(unchanged - 0.1) < 0.012, unchanged
    assert abs(1 - as_mask - unchanged - 0.1) < 0.012


def test_whole_word_budget_rounds_as_condenser(wordpiece_tokenizer):
    masker = WholeWordMasker(wordpiece_tokenizer, mask_rate=0.15)
    lengths = [0, 1, 3, 10, 30, 70]
    ids = torch.full((len(lengths), 74), wordpiece_tokenizer.pad_token_id)
    mask = torch.zeros_like(ids)
    word = wordpiece_tokenizer.convert_tokens_to_ids("cat")
    for row, n in enumerate(lengths):
        text = [wordpiece_tokenizer.cls_token_id, *[word] * n, wordpiece_tokenizer.sep_token_id]
        ids[row, : n + 2] = torch.tensor(text)
        mask[row, : n + 2] = 1
    # Python's round (half to even): 1.5 -> 2, 4.5 -> 4, 10.5 -> 10.
    assert masker.budget(ids, mask).tolist() == [max(1, round(n * 0.15)) for n in lengths] == [1, 1, 1, 2, 4, 10]


def test_whole_word_choice_is_uniform_over_positions(wordpiece_tokenizer):
    """Every word of a row is equally likely to be chosen (the words are shuffled, not taken in order)."""
    word = wordpiece_tokenizer.convert_tokens_to_ids("dog")
    row = [wordpiece_tokenizer.cls_token_id, *[word] * 20, wordpiece_tokenizer.sep_token_id]
    ids = torch.tensor([row] * 4000)
    torch.manual_seed(3)
    chosen = WholeWordMasker(wordpiece_tokenizer, mask_rate=0.15).select(ids, torch.ones_like(ids))
    assert (chosen.sum(dim=1) == 3).all()
    share = chosen[:, 1:-1].float().mean(dim=0)
    assert ((share - 0.15).abs() < 0.025).all(), share


def test_whole_word_masks_are_reproducible(wordpiece_tokenizer):
    ids, mask = _batch(wordpiece_tokenizer, n=64)
    masker = WholeWordMasker(wordpiece_tokenizer)
    torch.manual_seed(5)
    first = masker(ids, mask)
    torch.manual_seed(5)
    second = masker(ids, mask)
    third = masker(ids, mask)
    assert all(torch.equal(a, b) for a, b in zip(first, second, strict=True))
    assert not torch.equal(first[1], third[1])
    # A generator of its own leaves the global one alone.
    own = [WholeWordMasker(wordpiece_tokenizer, generator=torch.Generator().manual_seed(s))(ids, mask) for s in (7, 7)]
    assert all(torch.equal(a, b) for a, b in zip(*own, strict=True))


def _word_level_tokenizer(tokens: list[str]):
    from tokenizers import Tokenizer, models
    from transformers import PreTrainedTokenizerFast

    special = ["<pad>", "<unk>", "<s>", "</s>", "<mask>"]
    vocab = {token: i for i, token in enumerate(special + tokens)}
    return PreTrainedTokenizerFast(
        tokenizer_object=Tokenizer(models.WordLevel(vocab, unk_token="<unk>")),
        pad_token="<pad>",
        unk_token="<unk>",
        bos_token="<s>",
        eos_token="</s>",
        mask_token="<mask>",
    )


@pytest.mark.parametrize("marker", ["\u0120", "\u2581"])
def test_word_start_prefixes_of_bpe_and_sentencepiece(marker):
    from st_infocse.modeling.masking import word_boundary_rule

    stems = ["cat", "walk", "play"]
    tokenizer = _word_level_tokenizer([*stems, *(marker + s for s in stems), "er", "s"])
    assert word_boundary_rule(tokenizer) == (marker, False)
    masker = WholeWordMasker(tokenizer)
    # <s> walk er s [marker]cat [marker]play s </s> <pad>: the first word has no prefix and still starts a word.
    tokens = ["<s>", "walk", "er", "s", marker + "cat", marker + "play", "s", "</s>", "<pad>"]
    ids = torch.tensor([tokenizer.convert_tokens_to_ids(tokens)])
    mask = torch.tensor([[1] * 8 + [0]])
    assert masker.word_ids(ids, mask).tolist() == [[-1, 0, 0, 0, 1, 2, 2, -1, -1]]


def test_vocabulary_without_word_markers_falls_back_to_one_word_per_token():
    tokenizer = _word_level_tokenizer(["cat", "walk", "er", "s"])
    with pytest.warns(UserWarning, match="every token as a word"):
        masker = WholeWordMasker(tokenizer)
    ids = torch.tensor([tokenizer.convert_tokens_to_ids(["<s>", "walk", "er", "s", "cat", "</s>"])])
    mask = torch.ones_like(ids)
    assert masker.word_ids(ids, mask).tolist() == [[-1, 0, 1, 2, 3, -1]]


def test_whole_word_masker_checks_its_arguments(tokenizer, tiny_bert_nomask_dir):
    with pytest.raises(ValueError, match="no mask token"):
        WholeWordMasker(AutoTokenizer.from_pretrained(str(tiny_bert_nomask_dir)))
    with pytest.raises(ValueError, match="mask_rate"):
        WholeWordMasker(tokenizer, mask_rate=1.0)
