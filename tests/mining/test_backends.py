"""Mining with an annotator that is not a plain fp32 torch model: a torch int8 copy, and sentence-transformers'
ONNX / OpenVINO backends (skipped where optimum cannot be imported next to the installed transformers)."""

from __future__ import annotations

import importlib

import pytest
import torch

from st_infocse.mining import mine_pairs
from tests.mining.conftest import topic_documents


def _pairs(model, documents) -> set[tuple[str, str, str]]:
    pairs, report = mine_pairs(documents, model, show_progress_bar=False)
    assert report.pairs == len(pairs) > 0
    return set(zip(pairs["doc_id"], pairs["anchor"], pairs["positive"], strict=True))


def test_a_dynamically_quantised_annotator_mines(make_model):
    """``quantize_dynamic`` swaps the Linear layers for int8 ones; mining only calls ``encode`` on its result."""
    model = make_model(pooling="mean")
    quantised = torch.ao.quantization.quantize_dynamic(model, {torch.nn.Linear}, dtype=torch.qint8)
    assert any(type(m).__module__.startswith("torch.ao.nn.quantized") for m in quantised.modules())
    documents = topic_documents(12)
    found = _pairs(quantised, documents)
    # every pair lies inside one document: the quantised encoder fed the same graph code
    by_doc = {str(i): set(d) for i, d in enumerate(documents)}
    assert all(a in by_doc[d] and b in by_doc[d] for d, a, b in found)


@pytest.mark.parametrize(
    ("backend", "module", "classes"),
    [
        ("onnx", "optimum.onnxruntime", ("ORTModelForFeatureExtraction", "ORTModelForCausalLM")),
        ("openvino", "optimum.intel.openvino", ("OVModelForFeatureExtraction", "OVModelForCausalLM")),
    ],
)
def test_a_backend_annotator_mines_the_fp32_pairs(backend, module, classes, make_model, tmp_path):
    """A SentenceTransformer loaded with ``backend=`` (exported from the saved model at load) encodes in fp32 as
    torch does, so it mines torch's pairs."""
    try:  # the classes sentence-transformers loads with (imported lazily); optimum pins transformers versions
        for name in classes:
            getattr(importlib.import_module(module), name)
    except ImportError as exc:
        pytest.skip(f"{module} does not import: {exc}")
    from sentence_transformers import SentenceTransformer

    model = make_model(pooling="mean")
    model.save_pretrained(str(tmp_path / "model"))
    exported = SentenceTransformer(str(tmp_path / "model"), backend=backend, device="cpu")
    documents = topic_documents(12)
    assert _pairs(exported, documents) == _pairs(model, documents)
