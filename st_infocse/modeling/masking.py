"""BERT-style token masking for tokenized batches, through ``transformers.DataCollatorForLanguageModeling``."""

from __future__ import annotations

import torch
from transformers import DataCollatorForLanguageModeling, PreTrainedTokenizerBase


class TokenMasker:
    """Masks an already tokenized batch: ``mask_rate`` of the real tokens are chosen, of which 80% become
    the mask token, 10% a random token and 10% stay unchanged. Special and padding tokens are never chosen.

    Args:
        tokenizer: the encoder's tokenizer; it must have a mask token.
        mask_rate: probability that a real (non-special, non-padding) token is chosen for prediction.
        mask_replace_prob: share of chosen tokens replaced by the mask token.
        random_replace_prob: share of chosen tokens replaced by a random token.

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
    ) -> None:
        if getattr(tokenizer, "mask_token", None) is None:
            raise ValueError(
                f"The tokenizer {type(tokenizer).__name__} has no mask token, which masked language modelling needs. "
                "Use a model whose tokenizer defines one (BERT-style encoders do) or set tokenizer.mask_token."
            )
        if not 0.0 < mask_rate < 1.0:
            raise ValueError(f"mask_rate must be in (0, 1), got {mask_rate}")
        self.tokenizer = tokenizer
        self.mask_rate = mask_rate
        self.collator = DataCollatorForLanguageModeling(
            tokenizer=tokenizer,
            mlm=True,
            mlm_probability=mask_rate,
            mask_replace_prob=mask_replace_prob,
            random_replace_prob=random_replace_prob,
            return_tensors="pt",
        )
        self._special_ids = torch.tensor(sorted(set(tokenizer.all_special_ids)), dtype=torch.long)

    def __call__(self, input_ids: torch.Tensor, attention_mask: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Return ``(masked_input_ids, labels)``; ``labels`` is -100 wherever no prediction is asked."""
        device = input_ids.device
        # The collator draws its random numbers on the CPU, so the masking runs there.
        ids = input_ids.detach().to("cpu", copy=True)
        protected = torch.isin(ids, self._special_ids) | (attention_mask.detach().cpu() == 0)
        masked, labels = self.collator.torch_mask_tokens(ids, special_tokens_mask=protected)
        return masked.to(device), labels.to(device)
