"""Model parts behind the auxiliary objectives: the auxiliary decoder, heads, masking, encoder lookup."""

from __future__ import annotations

from st_infocse.lazy import lazy_exports

_WHERE = {
    "AuxiliaryDecoder": "auxiliary_decoder",
    "AuxiliaryDecoderConfig": "auxiliary_decoder",
    "MLMOutput": "auxiliary_decoder",
    "mlm_loss": "auxiliary_decoder",
    "SUPPORTED_MODEL_TYPES": "encoder_parts",
    "EncoderFamily": "encoder_parts",
    "EncoderParts": "encoder_parts",
    "UnsupportedModelError": "encoder_parts",
    "family_for": "encoder_parts",
    "find_encoder_parts": "encoder_parts",
    "scale_gradient": "gradient",
    "MLMHead": "heads",
    "ProjectionHead": "heads",
    "build_mlm_head": "heads",
    "TokenMasker": "masking",
    "WholeWordMasker": "masking",
}

__all__ = sorted(_WHERE)  # every exported name, listed once above

__getattr__, __dir__ = lazy_exports(__name__, _WHERE, __all__, globals())
