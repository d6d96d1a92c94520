"""Model parts behind the auxiliary objectives: the auxiliary decoder, heads, masking, encoder lookup."""

from st_infocse.modeling.auxiliary_decoder import AuxiliaryDecoder, AuxiliaryDecoderConfig, MLMOutput, mlm_loss
from st_infocse.modeling.encoder_parts import (
    SUPPORTED_MODEL_TYPES,
    EncoderFamily,
    EncoderParts,
    UnsupportedModelError,
    family_for,
    find_encoder_parts,
)
from st_infocse.modeling.gradient import scale_gradient
from st_infocse.modeling.heads import MLMHead, ProjectionHead, build_mlm_head
from st_infocse.modeling.masking import TokenMasker, WholeWordMasker

__all__ = [
    "SUPPORTED_MODEL_TYPES",
    "AuxiliaryDecoder",
    "AuxiliaryDecoderConfig",
    "EncoderFamily",
    "EncoderParts",
    "MLMHead",
    "MLMOutput",
    "ProjectionHead",
    "TokenMasker",
    "UnsupportedModelError",
    "WholeWordMasker",
    "build_mlm_head",
    "family_for",
    "find_encoder_parts",
    "mlm_loss",
    "scale_gradient",
]
