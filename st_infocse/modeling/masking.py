"""BERT-style masking for tokenized batches: per-token (:class:`TokenMasker`, on the batch's device) and whole-word
with a fixed budget per sequence (:class:`WholeWordMasker`, Condenser's procedure, on the CPU). Both follow the
80/10/10 replacement of ``transformers.DataCollatorForLanguageModeling``."""

from __future__ import annotations

import warnings

import torch
from transformers import DataCollatorForLanguageModeling, PreTrainedTokenizerBase

# WordPiece marks the pieces that continue a word; byte-level BPE (GPT-2, RoBERTa, ModernBERT) and SentencePiece
# (XLM-R, ALBERT, T5) mark the pieces that start one.
CONTINUATION_PREFIX = "##"
WORD_START_PREFIXES = ("\u0120", "\u2581")  # "Ġ", "▁"


def _require_mask_token(tokenizer: PreTrainedTokenizerBase) -> None:
    if getattr(tokenizer, "mask_token", None) is None:
        raise ValueError(
            f"The tokenizer {type(tokenizer).__name__} has no mask token, which masked language modelling needs. "
            "Use a model whose tokenizer defines one (BERT-style encoders do) or set tokenizer.mask_token."
        )


def _check_mask_rate(mask_rate: float) -> None:
    if not 0.0 < mask_rate < 1.0:
        raise ValueError(f"mask_rate must be in (0, 1), got {mask_rate}")


class TokenMasker:
    """Masks an already tokenized batch: ``mask_rate`` of the real tokens are chosen, of which 80% become
    the mask token, 10% a random token and 10% stay unchanged. Special and padding tokens are never chosen.

    The draws run on the ids' own device, so masking a GPU batch reads nothing back to the host. They are the
    ``bernoulli`` / ``randint`` calls of ``transformers.DataCollatorForLanguageModeling.torch_mask_tokens``, with
    the same shapes and in the same order, so on the CPU a given random state gives the collator's masks exactly.

    Args:
        tokenizer: the encoder's tokenizer; it must have a mask token.
        mask_rate: probability that a real (non-special, non-padding) token is chosen for prediction.
        mask_replace_prob: share of chosen tokens replaced by the mask token.
        random_replace_prob: share of chosen tokens replaced by a random token.
        seed: seeds a ``torch.Generator`` of the masker's own on each device it meets; by default the device's
            global generator is used, so ``torch.manual_seed`` makes the masks reproducible.

    Example:
        ::

            masker = TokenMasker(model[0].tokenizer, mask_rate=0.4)
            features = model.preprocess(["A man is playing a guitar."])
            masked_ids, labels = masker(features["input_ids"], features["attention_mask"])
    """

    def __init__(
        self,
        tokenizer: PreTrainedTokenizerBase,
        mask_rate: float = 0.4,
        mask_replace_prob: float = 0.8,
        random_replace_prob: float = 0.1,
        seed: int | None = None,
    ) -> None:
        _require_mask_token(tokenizer)
        _check_mask_rate(mask_rate)
        if mask_replace_prob + random_replace_prob > 1:
            raise ValueError("mask_replace_prob + random_replace_prob must not exceed 1")
        self.tokenizer = tokenizer
        self.mask_rate = mask_rate
        self.mask_replace_prob = mask_replace_prob
        self.random_replace_prob = random_replace_prob
        self.seed = seed
        self.mask_token_id = tokenizer.convert_tokens_to_ids(tokenizer.mask_token)
        self.vocab_size = len(tokenizer)
        self._special_ids = torch.tensor(sorted(set(tokenizer.all_special_ids)), dtype=torch.long)
        # Per device: building them each call would cost a host-to-device copy per step.
        self._special_on: dict[torch.device, torch.Tensor] = {}
        self._generators: dict[torch.device, torch.Generator] = {}

    def _specials(self, device: torch.device) -> torch.Tensor:
        if device not in self._special_on:
            self._special_on[device] = self._special_ids.to(device)
        return self._special_on[device]

    def _generator(self, device: torch.device) -> torch.Generator | None:
        if self.seed is None:
            return None
        if device not in self._generators:
            self._generators[device] = torch.Generator(device=device).manual_seed(self.seed)
        return self._generators[device]

    def __call__(self, input_ids: torch.Tensor, attention_mask: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Return ``(masked_input_ids, labels)``; ``labels`` is -100 wherever no prediction is asked."""
        ids = input_ids.detach()
        device, shape = ids.device, ids.shape
        generator = self._generator(device)
        protected = torch.isin(ids, self._specials(device)) | (attention_mask.detach() == 0)

        def coin(probability: float) -> torch.Tensor:
            # torch.full's default dtype, as the collator's, keeps the CPU stream identical to it.
            return torch.bernoulli(torch.full(shape, probability, device=device), generator=generator).bool()

        chosen_prob = torch.full(shape, self.mask_rate, device=device).masked_fill_(protected, 0.0)
        chosen = torch.bernoulli(chosen_prob, generator=generator).bool()
        labels = ids.masked_fill(~chosen, -100)
        # torch.where, not boolean-index assignment, which would count the positions on the host.
        as_mask = coin(self.mask_replace_prob) & chosen
        masked = torch.where(as_mask, self.mask_token_id, ids)
        if self.mask_replace_prob == 1 or self.random_replace_prob == 0:
            return masked, labels
        as_random = coin(self.random_replace_prob / (1 - self.mask_replace_prob)) & chosen & ~as_mask
        random_ids = torch.randint(self.vocab_size, shape, dtype=torch.long, device=device, generator=generator)
        return torch.where(as_random, random_ids, masked), labels


def word_boundary_rule(tokenizer: PreTrainedTokenizerBase) -> tuple[str, bool] | None:
    """How the tokenizer's pieces show word boundaries: ``(prefix, prefix_marks_continuation)``, or ``None`` when
    its vocabulary follows none of WordPiece (``##``), byte-level BPE (``Ġ``) or SentencePiece (``▁``).

    A WordPiece backend names its continuation prefix itself (even a vocabulary without any ``##`` piece has it);
    otherwise the prefix that starts the most vocabulary entries decides, if it starts at least 1% of them.
    """
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


class WholeWordMasker:
    """Whole-word masking with a fixed budget per sequence, as Condenser's pre-training collator does it.

    For each sequence: the words (a token plus the pieces that continue it; special and padding tokens are never
    candidates) are shuffled; the budget is ``max(1, round(mask_rate * n))`` with ``n`` the sequence's tokens other
    than padding and the ones the tokenizer adds around the text ([CLS], [SEP], <s>, </s>); words are taken in
    the shuffled order while they fit, and a word that would overshoot the budget is skipped. Of the chosen tokens
    80% become the mask token, 10% a random token and 10% stay unchanged, decided per token.

    Word boundaries come from the vocabulary (:func:`word_boundary_rule`): a WordPiece ``##`` piece continues the
    previous word; with byte-level BPE (``Ġ``) or SentencePiece (``▁``) a piece without the prefix continues it.
    A tokenizer that follows none of these falls back to one word per token (with a warning): the budget and the
    replacement stay Condenser's, only the grouping of pieces is lost.

    Random numbers come from ``generator`` or, by default, torch's global generator, so ``torch.manual_seed``
    makes the masks reproducible.

    Args:
        tokenizer: the encoder's tokenizer; it must have a mask token.
        mask_rate: share of each sequence's tokens to predict (Condenser: 0.15).
        mask_replace_prob: share of chosen tokens replaced by the mask token.
        random_replace_prob: share of chosen tokens replaced by a random token.
        generator: optional ``torch.Generator`` (on the CPU) for the shuffles and replacements.

    Example:
        ::

            masker = WholeWordMasker(model[0].tokenizer, mask_rate=0.15)
            features = model.preprocess(["A man is playing a guitar."])
            masked_ids, labels = masker(features["input_ids"], features["attention_mask"])
    """

    def __init__(
        self,
        tokenizer: PreTrainedTokenizerBase,
        mask_rate: float = 0.15,
        mask_replace_prob: float = 0.8,
        random_replace_prob: float = 0.1,
        generator: torch.Generator | None = None,
    ) -> None:
        _require_mask_token(tokenizer)
        _check_mask_rate(mask_rate)
        self.tokenizer = tokenizer
        self.mask_rate = mask_rate
        self.generator = generator
        # transformers' own whole_word_mask=True is not used: it needs the offset mappings of the original text
        # (an already tokenized batch has none) and forces every chosen token to the mask token (no 10% random /
        # 10% kept). With mlm_probability=1 and every unchosen token marked special, the collator applies only
        # its 80/10/10 replacement to the words chosen here.
        self.collator = DataCollatorForLanguageModeling(
            tokenizer=tokenizer,
            mlm=True,
            mlm_probability=1.0,
            mask_replace_prob=mask_replace_prob,
            random_replace_prob=random_replace_prob,
            return_tensors="pt",
        )
        self.collator.generator = generator
        self._special_ids = torch.tensor(sorted(set(tokenizer.all_special_ids)), dtype=torch.long)
        added = (tokenizer.cls_token_id, tokenizer.sep_token_id, tokenizer.bos_token_id, tokenizer.eos_token_id)
        added += (tokenizer.pad_token_id,)
        self._added_ids = torch.tensor(sorted({i for i in added if i is not None}), dtype=torch.long)

        vocab = tokenizer.get_vocab()
        self.boundary_rule = word_boundary_rule(tokenizer)
        self._continues = torch.zeros(max(len(tokenizer), max(vocab.values(), default=-1) + 1), dtype=torch.bool)
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
                self._continues[index] = token.startswith(prefix) == marks_continuation

    def word_ids(self, input_ids: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
        """``(batch, seq)`` index of the word each token belongs to, counted from 0 within its row; -1 for special
        and padding tokens, which belong to no word."""
        ids = input_ids.detach().cpu()
        candidate = (attention_mask.detach().cpu() != 0) & ~torch.isin(ids, self._special_ids)
        continues = self._continues[ids] & candidate
        # A piece continues a word only right after a piece of it; at a row start or after a special token
        # (a BPE first word without its prefix, a second segment) it starts one.
        after_candidate = torch.zeros_like(candidate)
        after_candidate[:, 1:] = candidate[:, :-1]
        starts = candidate & ~(continues & after_candidate)
        words = starts.long().cumsum(dim=1) - 1
        return words.masked_fill(~candidate, -1)

    def budget(self, input_ids: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
        """``(batch,)`` number of tokens to predict per row: ``max(1, round(mask_rate * n))`` as in Condenser
        (Python's round, half to even, which ``torch.round`` shares)."""
        ids = input_ids.detach().cpu()
        text = (attention_mask.detach().cpu() != 0) & ~torch.isin(ids, self._added_ids)
        return torch.round(text.sum(dim=1).double() * self.mask_rate).long().clamp(min=1)

    def select(self, input_ids: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
        """``(batch, seq)`` boolean mask of the tokens chosen for prediction (before replacement)."""
        words = self.word_ids(input_ids, attention_mask)
        budget = self.budget(input_ids, attention_mask)
        if words.numel() == 0:
            return torch.zeros(words.shape, dtype=torch.bool)
        is_word = words >= 0
        counts = words.max(dim=1).values + 1
        width = max(int(counts.max()), 1)
        slot = words.clamp(min=0)
        sizes = torch.zeros(words.shape[0], width, dtype=torch.long).scatter_add_(1, slot, is_word.long())
        # A uniform shuffle of each row's words: sort random keys, with absent words (keys above 1) last.
        keys = torch.rand(words.shape[0], width, generator=self.generator)
        keys.masked_fill_(torch.arange(width) >= counts.unsqueeze(1), 2.0)
        order = keys.argsort(dim=1)
        sizes = sizes.gather(1, order)
        taken = torch.zeros_like(sizes, dtype=torch.bool)
        total = torch.zeros_like(budget)
        # Greedy over the shuffled words, all rows at once; a word that would overshoot is skipped, not cut (absent
        # words have size 0 and change nothing).
        for position in range(width):
            size = sizes[:, position]
            fits = total + size <= budget
            taken[:, position] = fits & (size > 0)
            total += size * fits
            if bool(((total >= budget) | (position + 1 >= counts)).all()):
                break
        chosen = torch.zeros_like(taken).scatter_(1, order, taken)
        return chosen.gather(1, slot) & is_word

    # Word budgets size the work from the data and the collator draws on the CPU: under torch.compile this runs
    # eagerly, one declared graph break, instead of dynamo failing on each host read inside it.
    @torch.compiler.disable
    def __call__(self, input_ids: torch.Tensor, attention_mask: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Return ``(masked_input_ids, labels)``; ``labels`` is -100 wherever no prediction is asked."""
        device = input_ids.device
        selected = self.select(input_ids, attention_mask)
        ids = input_ids.detach().to("cpu", copy=True)
        masked, labels = self.collator.torch_mask_tokens(ids, special_tokens_mask=~selected)
        return masked.to(device), labels.to(device)
