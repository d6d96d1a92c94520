from __future__ import annotations

from typing import Any

from sentence_transformers import SentenceTransformer

from st_infocse.losses.infocse import InfoCSELoss
from st_infocse.losses.registry import PRESETS
from st_infocse.modeling.heads import ProjectionKind


class CMLMCSELoss(InfoCSELoss):
    preset_name = "cmlm-cse"

    def __init__(
        self,
        model: SentenceTransformer,
        lambda_: float | None = None,
        temperature: float = 0.05,
        projection: ProjectionKind | None = PRESETS["cmlm-cse"].projection,  # SimCSE's mlp
        **kwargs: Any,
    ) -> None:
        """
        CMLM-CSE: SimCSE plus a conditional MLM through an auxiliary network (paper 003), InfoCSE's sibling with a
        deeper frozen part and one more fusion layer. The defaults are the paper's headline configuration: ``k`` = two
        thirds of the depth (8 of 12, Table 6 row 8-3), ``n=3``, mask rate 0.15 (Table 3), ``lambda_=0.005`` (Table
        5), fresh fusion layers and unsupervised SimCSE's settings (section 4.1), hence its training-only MLP head.
        Every argument of :class:`InfoCSELoss` applies; unset ones take these defaults.

        Args:
            model: the SentenceTransformer to train (its first module a Hugging Face encoder).
            lambda_: weight of the conditional MLM (default: the registry's, paper 003 Table 5).
            temperature: contrastive temperature.
            projection: training-only projection head (SimCSE's ``mlp`` by default; None for none).
            **kwargs: any other argument of :class:`InfoCSELoss` (``k``, ``n``, ``mask_rate``, ...).

        References:
            - Zhang and Chen 2023. CMLM-CSE: Based on Conditional MLM Contrastive Learning for Sentence Embeddings.
              https://arxiv.org/abs/2306.09594

        Wrappers:
            As :class:`InfoCSELoss`.

        Requirements:
            1. Unlabelled sentences; a tokenizer with a mask token; a BERT-like encoder of at least 2 layers.

        Inputs:
            +-------------------------------+--------+
            | Texts                         | Labels |
            +===============================+========+
            | (sentence) single column      | none   |
            +-------------------------------+--------+
            | (anchor, positive) pairs      | none   |
            +-------------------------------+--------+

        Example:
            ::

                from datasets import Dataset
                from sentence_transformers import SentenceTransformer, SentenceTransformerTrainer
                from sentence_transformers.base.modules import Transformer
                from sentence_transformers.sentence_transformer.modules import Pooling
                from st_infocse import losses
                from st_infocse.training import check_training_dataset

                encoder = Transformer("bert-base-uncased", max_seq_length=32)
                model = SentenceTransformer(modules=[encoder, Pooling(encoder.get_embedding_dimension(), "cls")])
                train_dataset = Dataset.from_dict({"text": ["It's nice weather outside today.", "He drove to work."]})
                train_dataset = check_training_dataset(train_dataset)  # a clear error for empty, None or blank text
                loss = losses.CMLMCSELoss(model)
                SentenceTransformerTrainer(model=model, train_dataset=train_dataset, loss=loss).train()
        """
        super().__init__(model, lambda_=lambda_, temperature=temperature, projection=projection, **kwargs)
