from __future__ import annotations

from st_infocse.losses.infocse import InfoCSELoss


class CMLMCSELoss(InfoCSELoss):
    """
    CMLM-CSE: SimCSE plus a conditional MLM through an auxiliary network (paper 003), the sibling of InfoCSE with
    a deeper frozen part and one more fusion layer: ``k`` = two thirds of the encoder depth (8 of 12), ``n=3``,
    mask rate 0.40, ``lambda_=0.005`` (paper 003, Tables 5/6). Every argument of :class:`InfoCSELoss` applies;
    unset ones take these defaults.

    References:
        - Zhang and Chen 2023. CMLM-CSE: Based on Conditional MLM Contrastive Learning for Sentence Embeddings.
          https://arxiv.org/abs/2306.09594

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
            from st_infocse import losses

            model = SentenceTransformer("bert-base-uncased")
            train_dataset = Dataset.from_dict({"text": ["It's nice weather outside today.", "He drove to work."]})
            loss = losses.CMLMCSELoss(model)
            SentenceTransformerTrainer(model=model, train_dataset=train_dataset, loss=loss).train()
    """

    preset_name = "cmlm-cse"

    @property
    def citation(self) -> str:
        return CMLM_CSE_CITATION


CMLM_CSE_CITATION = """
@article{zhang2023cmlmcse,
    title={{CMLM-CSE}: Based on Conditional {MLM} Contrastive Learning for Sentence Embeddings},
    author={Zhang, Wei and Chen, Xu},
    journal={arXiv preprint arXiv:2306.09594},
    year={2023}
}
"""
