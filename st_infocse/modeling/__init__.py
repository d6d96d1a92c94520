"""Model parts behind the auxiliary objectives: the auxiliary decoder, heads, masking, encoder lookup."""

from __future__ import annotations

from st_infocse.lazy import lazy_exports

_WHERE = {
    **dict.fromkeys(("AuxiliaryDecoder", "AuxiliaryDecoderConfig", "MLMOutput", "mlm_loss"), "auxiliary_decoder"),
    **dict.fromkeys(("SUPPORTED_MODEL_TYPES", "EncoderFamily", "EncoderParts", "UnsupportedModelError", "family_for",
                     "find_encoder_parts"), "encoder_parts"),
    **dict.fromkeys(("MLMHead", "ProjectionHead", "build_mlm_head"), "heads"),
    **dict.fromkeys(("TokenMasker", "WholeWordMasker"), "masking"),
    "scale_gradient": "gradient",
}

__all__ = sorted(_WHERE)  # every exported name, listed once above

__getattr__, __dir__ = lazy_exports(__name__, _WHERE, __all__, globals())
