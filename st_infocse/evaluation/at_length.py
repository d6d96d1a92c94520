"""An evaluator that scores the model at its own maximum length while it trains at a shorter one."""

from __future__ import annotations

from typing import Any

from sentence_transformers.base.evaluation import BaseEvaluator

from st_infocse.files import check_at_least


class AtLengthEvaluator(BaseEvaluator):
    """Run ``inner`` (any evaluator) at ``max_seq_length``, then put the training length back: training truncates to
    a short length (the papers' 32 tokens) while the saved model keeps its own, and documents are far longer, so
    scores, the checkpoint choice and the start -> end comparison are of the model as it is saved
    (:meth:`~st_infocse.evaluation.RunEvaluation.for_model` wraps a run's evaluator in it).
    """

    def __init__(self, inner: Any, max_seq_length: int) -> None:
        super().__init__()
        check_at_least("max_seq_length", max_seq_length)
        self.inner = inner
        self.max_seq_length = max_seq_length
        self.greater_is_better = getattr(inner, "greater_is_better", True)
        self.primary_metric = getattr(inner, "primary_metric", None)

    def __call__(self, model: Any, output_path: str | None = None, epoch: int = -1, steps: int = -1) -> Any:
        training_length = model.max_seq_length
        model.max_seq_length = self.max_seq_length
        try:
            result = self.inner(model, output_path, epoch, steps)
        finally:
            model.max_seq_length = training_length
        # SequentialEvaluator and InformationRetrievalEvaluator name their primary metric only when called.
        self.primary_metric = getattr(self.inner, "primary_metric", self.primary_metric)
        return result

    @property
    def description(self) -> str:
        return self.inner.description

    def get_config_dict(self) -> dict[str, Any]:
        return {**self.inner.get_config_dict(), "max_seq_length": self.max_seq_length}
