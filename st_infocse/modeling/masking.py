"""BERT-style masking for tokenized batches: per-token (:class:`TokenMasker`) and whole-word with a fixed budget per
sequence (:class:`WholeWordMasker`, Condenser's procedure). Both run on the batch's device with shapes fixed by the
batch's, so masking a GPU batch reads nothing back to the host, and both follow the 80/10/10 replacement of
``transformers.DataCollatorForLanguageModeling``."""

from __future__ import annotations

import warnings
from typing import Any

import torch
from transformers import PreTrainedTokenizerBase

from st_infocse.files import check_range

# WordPiece marks the pieces that continue a word; byte-level BPE (GPT-2, RoBERTa, ModernBERT) and SentencePiece
# (XLM-R, ALBERT, T5) mark the pieces that start one.
CONTINUATION_PREFIX = "##"
WORD_START_PREFIXES = ("\u0120", "\u2581")  # "Ġ", "▁"


def with_ids(features: dict[str, Any], input_ids: torch.Tensor) -> dict[str, Any]:
    """A copy of tokenized ``features`` for another pass of the model: ``input_ids`` replaced, and the outputs of an
    earlier pass (token and sentence embeddings) left out."""
    kept = {key: value for key, value in features.items() if key not in ("token_embeddings", "sentence_embedding")}
    return {**kept, "input_ids": input_ids}


class OnDevice:
    """Per-device copies of constant tensors: building them at each call would cost a host-to-device copy a step."""

    def __init__(self, **tensors: torch.Tensor) -> None:
        self._cpu = tensors
        self._copies: dict[tuple[str, torch.device], torch.Tensor] = {}

    def __call__(self, name: str, device: torch.device) -> torch.Tensor:
        if (name, device) not in self._copies:
            self._copies[name, device] = self._cpu[name].to(device)
        return self._copies[name, device]


class _Masker:
    """What both maskers check and keep: a tokenizer with a mask token, the rate and the replacement shares."""

    def __init__(self, tokenizer: PreTrainedTokenizerBase, mask_rate: float, mask_replace_prob: float,
                 random_replace_prob: float) -> None:
        if getattr(tokenizer, "mask_token", None) is None:
            raise ValueError(
                f"The tokenizer {type(tokenizer).__name__} has no mask token, which masked language modelling needs. "
                "Use a model whose tokenizer defines one (BERT-style encoders do) or set tokenizer.mask_token."
            )
        check_range("mask_rate", mask_rate, (0, 1, False, False))
        if mask_replace_prob + random_replace_prob > 1:
            raise ValueError("mask_replace_prob + random_replace_prob must not exceed 1")
        self.mask_rate = mask_rate
        self.mask_replace_prob = mask_replace_prob
        self.random_replace_prob = random_replace_prob
        self.mask_token_id = tokenizer.convert_tokens_to_ids(tokenizer.mask_token)
        self.vocab_size = len(tokenizer)

    def replace(self, ids: torch.Tensor, chosen: torch.Tensor, generator: torch.Generator | None
                ) -> tuple[torch.Tensor, torch.Tensor]:
        """``(masked_ids, labels)`` for the ``chosen`` positions of ``ids``: ``mask_replace_prob`` of them become the
        mask token, ``random_replace_prob`` a random token, the rest stay; ``labels`` is -100 elsewhere.

        The draws are ``DataCollatorForLanguageModeling.torch_mask_tokens``'s replacement draws, with the same shapes
        and in the same order, on ``ids``' device; ``torch.where`` takes the place of its boolean-index assignments,
        which would count the positions on the host.
        """
        device, shape = ids.device, ids.shape

        def coin(probability: float) -> torch.Tensor:
            # torch.full's default dtype, as the collator's, keeps the CPU stream identical to it.
            return torch.bernoulli(torch.full(shape, probability, device=device), generator=generator).bool()

        labels = ids.masked_fill(~chosen, -100)
        as_mask = coin(self.mask_replace_prob) & chosen
        masked = torch.where(as_mask, self.mask_token_id, ids)
        if self.mask_replace_prob == 1 or self.random_replace_prob == 0:
            return masked, labels
        as_random = coin(self.random_replace_prob / (1 - self.mask_replace_prob)) & chosen & ~as_mask
        random_ids = torch.randint(self.vocab_size, shape, dtype=torch.long, device=device, generator=generator)
        return torch.where(as_random, random_ids, masked), labels


class TokenMasker(_Masker):
    """Masks an already tokenized batch: each real token (never a special or padding one) is chosen with
    probability ``mask_rate``; ``mask_replace_prob`` of the chosen become the mask token, ``random_replace_prob`` a
    random token, the rest stay. The draws are ``DataCollatorForLanguageModeling.torch_mask_tokens``' own, in the
    same order, on the ids' device: on the CPU a given random state gives the collator's masks exactly, and a GPU
    batch reads nothing back to the host. ``seed`` seeds a generator of the masker's own on each device it meets;
    by default the device's global generator draws, so ``torch.manual_seed`` makes the masks reproducible.

    Example:
        ::

            masker = TokenMasker(model[0].tokenizer, mask_rate=0.4)
            features = model.preprocess(["A man is playing a guitar."])
            masked_ids, labels = masker(features["input_ids"], features["attention_mask"])
    """

    def __init__(self, tokenizer: PreTrainedTokenizerBase, mask_rate: float = 0.4, mask_replace_prob: float = 0.8,
                 random_replace_prob: float = 0.1, seed: int | None = None) -> None:
        super().__init__(tokenizer, mask_rate, mask_replace_prob, random_replace_prob)
        self.seed = seed
        self._constants = OnDevice(specials=torch.tensor(sorted(set(tokenizer.all_special_ids)), dtype=torch.long))
        self._generators: dict[torch.device, torch.Generator] = {}

    def _generator(self, device: torch.device) -> torch.Generator | None:
        if self.seed is None:
            return None
        if device not in self._generators:
            self._generators[device] = torch.Generator(device=device).manual_seed(self.seed)
        return self._generators[device]

    def __call__(self, input_ids: torch.Tensor, attention_mask: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Return ``(masked_input_ids, labels)``; ``labels`` is -100 wherever no prediction is asked."""
        ids = input_ids.detach()
        device = ids.device
        generator = self._generator(device)
        protected = torch.isin(ids, self._constants("specials", device)) | (attention_mask.detach() == 0)
        chosen_prob = torch.full(ids.shape, self.mask_rate, device=device).masked_fill_(protected, 0.0)
        chosen = torch.bernoulli(chosen_prob, generator=generator).bool()
        return self.replace(ids, chosen, generator)


def word_boundary_rule(tokenizer: PreTrainedTokenizerBase) -> tuple[str, bool] | None:
    """How the tokenizer's pieces show word boundaries: ``(prefix, prefix_marks_continuation)``, or ``None`` when
    its vocabulary follows none of WordPiece (``##`` continues a word), byte-level BPE (``Ġ``) or SentencePiece
    (``▁``, which start one). A WordPiece backend names its prefix itself; otherwise the prefix that starts the most
    vocabulary entries decides, if it starts at least 1% of them."""
    model = getattr(getattr(tokenizer, "backend_tokenizer", None), "model", None)
    prefix = getattr(model, "continuing_subword_prefix", None)
    if isinstance(prefix, str) and prefix:
        return prefix, True
    vocab = tokenizer.get_vocab()
    counts = {p: sum(token.startswith(p) for token in vocab) for p in (CONTINUATION_PREFIX, *WORD_START_PREFIXES)}
    best = max(counts, key=counts.__getitem__)
    if counts[best] == 0 or counts[best] < 0.01 * len(vocab):
        return None
    return best, best == CONTINUATION_PREFIX


class WholeWordMasker(_Masker):
    """Whole-word masking with a fixed budget per sequence, as Condenser's pre-training collator does it.

    For each sequence: the words (a token plus the pieces that continue it; special and padding tokens are never
    candidates) are shuffled; the budget is ``max(1, round(mask_rate * n))`` with ``n`` the sequence's tokens other
    than padding and the ones the tokenizer adds around the text ([CLS], [SEP], <s>, </s>); words are taken in
    the shuffled order while they fit, and a word that would overshoot the budget is skipped. Of the chosen tokens
    80% become the mask token, 10% a random token and 10% stay unchanged, decided per token, as :class:`TokenMasker` does.

    Word boundaries come from the vocabulary (:func:`word_boundary_rule`); a tokenizer that follows no known rule
    falls back to one word per token (with a warning), keeping Condenser's budget and replacement. Everything runs on
    the batch's device with shapes fixed by the batch's (the shuffle and the greedy pass span the row's width):
    a GPU batch reads nothing back to the host, and ``torch.compile`` traces the masker with the step. Random numbers
    come from ``generator`` (the draws then run on its device) or the batch device's global generator.

    Example:
        ::

            masker = WholeWordMasker(model[0].tokenizer, mask_rate=0.15)
            features = model.preprocess(["A man is playing a guitar."])
            masked_ids, labels = masker(features["input_ids"], features["attention_mask"])
    """

    def __init__(self, tokenizer: PreTrainedTokenizerBase, mask_rate: float = 0.15, mask_replace_prob: float = 0.8,
                 random_replace_prob: float = 0.1, generator: torch.Generator | None = None) -> None:
        super().__init__(tokenizer, mask_rate, mask_replace_prob, random_replace_prob)
        self.generator = generator
        # transformers' own whole_word_mask=True is not used: it needs the offset mappings of the original text
        # (an already tokenized batch has none) and forces every chosen token to the mask token (no 10% random /
        # 10% kept).
        added = (tokenizer.cls_token_id, tokenizer.sep_token_id, tokenizer.bos_token_id, tokenizer.eos_token_id)
        added += (tokenizer.pad_token_id,)

        vocab = tokenizer.get_vocab()
        self.boundary_rule = word_boundary_rule(tokenizer)
        continues = torch.zeros(max(len(tokenizer), max(vocab.values(), default=-1) + 1), dtype=torch.bool)
        if self.boundary_rule is None:
            warnings.warn(
                f"{type(tokenizer).__name__}: its vocabulary marks word pieces with none of '##' (WordPiece), "
                "'\u0120' (byte-level BPE) or '\u2581' (SentencePiece), so whole-word masking treats every token as a "
                "word (the per-sequence budget is kept). Token-level masking (masking='token' in the losses) avoids this.",
                UserWarning,
                stacklevel=2,
            )
        else:
            prefix, marks_continuation = self.boundary_rule
            for token, index in vocab.items():
                continues[index] = token.startswith(prefix) == marks_continuation
        self._constants = OnDevice(
            specials=torch.tensor(sorted(set(tokenizer.all_special_ids)), dtype=torch.long),
            added=torch.tensor(sorted({i for i in added if i is not None}), dtype=torch.long),
            continues=continues,
        )

    def word_ids(self, input_ids: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
        """``(batch, seq)`` index of the word each token belongs to, counted from 0 within its row; -1 for special
        and padding tokens, which belong to no word."""
        ids = input_ids.detach()
        device = ids.device
        candidate = (attention_mask.detach() != 0) & ~torch.isin(ids, self._constants("specials", device))
        continues = self._constants("continues", device)[ids] & candidate
        # A piece continues a word only right after a piece of it; at a row start or after a special token
        # (a BPE first word without its prefix, a second segment) it starts one.
        after_candidate = torch.nn.functional.pad(candidate[:, :-1], (1, 0), value=False)
        starts = candidate & ~(continues & after_candidate)
        words = starts.long().cumsum(dim=1) - 1
        return words.masked_fill(~candidate, -1)

    def budget(self, input_ids: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
        """``(batch,)`` number of tokens to predict per row: ``max(1, round(mask_rate * n))`` as in Condenser
        (Python's round, half to even, which ``torch.round`` shares)."""
        ids = input_ids.detach()
        text = (attention_mask.detach() != 0) & ~torch.isin(ids, self._constants("added", ids.device))
        return torch.round(text.sum(dim=1).double() * self.mask_rate).long().clamp(min=1)

    def select(self, input_ids: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
        """``(batch, seq)`` boolean mask of the tokens chosen for prediction (before replacement)."""
        words = self.word_ids(input_ids, attention_mask)
        budget = self.budget(input_ids, attention_mask)
        rows, width = words.shape
        device = words.device
        if words.numel() == 0:
            return torch.zeros(words.shape, dtype=torch.bool, device=device)
        is_word = words >= 0
        counts = words.max(dim=1).values + 1
        slot = words.clamp(min=0)
        sizes = torch.zeros(rows, width, dtype=torch.long, device=device).scatter_add_(1, slot, is_word.long())
        # A uniform shuffle of each row's words: sort random keys, with absent words (keys above 1) last.
        keys = torch.rand(rows, width, generator=self.generator, device=device)
        keys.masked_fill_(torch.arange(width, device=device) >= counts.unsqueeze(1), 2.0)
        order = keys.argsort(dim=1)
        sizes = sizes.gather(1, order)
        taken = torch.zeros_like(sizes, dtype=torch.bool)
        total = torch.zeros_like(budget)
        # Greedy over the shuffled words, all rows at once; a word that would overshoot is skipped, not cut (absent
        # words have size 0 and change nothing). The pass spans the whole width: stopping once every row is done
        # would read the device's state back to the host.
        for position in range(width):
            size = sizes[:, position]
            fits = total + size <= budget
            taken[:, position] = fits & (size > 0)
            total += size * fits
        chosen = torch.zeros_like(taken).scatter_(1, order, taken)
        return chosen.gather(1, slot) & is_word

    def __call__(self, input_ids: torch.Tensor, attention_mask: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Return ``(masked_input_ids, labels)``; ``labels`` is -100 wherever no prediction is asked."""
        device = input_ids.device
        draws_on = self.generator.device if self.generator is not None else device
        ids, mask = input_ids.detach().to(draws_on), attention_mask.detach().to(draws_on)
        masked, labels = self.replace(ids, self.select(ids, mask), self.generator)
        return masked.to(device), labels.to(device)
