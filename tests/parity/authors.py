"""Independent re-expressions of the authors' released training objectives, used as parity references.

Each function is written from reading the authors' code (file and line cited next to each step) with plain
PyTorch and ``transformers`` modules; none imports from ``st_infocse``. The callers give them the same weights as
the package's loss (copied in by the tests), the same masked inputs and dropout-free models.

Sources (public repositories):
- SimCSE: princeton-nlp/SimCSE, ``simcse/models.py`` (``MLPLayer``, ``cl_init``, ``cl_forward``).
- InfoCSE: caskcsg/sentemb, ``InfoCSE/infocse/models_cls_mlm.py`` (``ProjectionMLP``, ``cl_init``, ``cl_forward``,
  ``BertForCL.__init__``) and ``InfoCSE/train_cls_mlm.py`` (model construction, ``mask_tokens``).
- InforMin-CL: ShaobinChen-AH/InforMin-CL, ``informin-cl/models.py`` (``reconstruction_loss``, ``cl_forward``).
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import Tensor, nn


def mlp_layer(dim: int) -> nn.Module:
    """SimCSE ``MLPLayer`` (simcse/models.py:19-33): Linear(d, d) then Tanh."""
    return nn.Sequential(nn.Linear(dim, dim), nn.Tanh())


def projection_mlp(dim: int) -> nn.Module:
    """InfoCSE ``ProjectionMLP`` (models_cls_mlm.py:36-51): Linear(d, 2d, no bias) - BatchNorm(2d) - ReLU -
    Linear(2d, d, no bias) - BatchNorm(d, affine=False)."""
    return nn.Sequential(
        nn.Linear(dim, 2 * dim, bias=False),
        nn.BatchNorm1d(2 * dim),
        nn.ReLU(inplace=True),
        nn.Linear(2 * dim, dim, bias=False),
        nn.BatchNorm1d(dim, affine=False),
    )


def mask_tokens(
    input_ids: Tensor, special_ids: list[int], mask_id: int, vocab_size: int, rate: float, generator: torch.Generator
) -> tuple[Tensor, Tensor]:
    """``OurDataCollatorWithPadding.mask_tokens`` (train_cls_mlm.py:544-576): ``rate`` of the non-special tokens
    chosen; of those 80% [MASK], half of the rest a random id, the rest kept. Labels -100 where not chosen."""
    inputs, labels = input_ids.clone(), input_ids.clone()
    probability = torch.full(labels.shape, rate)
    probability.masked_fill_(torch.isin(labels, torch.tensor(special_ids)), 0.0)
    chosen = torch.bernoulli(probability, generator=generator).bool()
    labels[~chosen] = -100
    replaced = torch.bernoulli(torch.full(labels.shape, 0.8), generator=generator).bool() & chosen
    inputs[replaced] = mask_id
    randomised = torch.bernoulli(torch.full(labels.shape, 0.5), generator=generator).bool() & chosen & ~replaced
    inputs[randomised] = torch.randint(vocab_size, labels.shape, generator=generator)[randomised]
    return inputs, labels


def extended_attention_mask(attention_mask: Tensor, dtype: torch.dtype = torch.float32) -> Tensor:
    """What ``get_extended_attention_mask`` returned in the authors' transformers: an additive (B, 1, 1, L) mask,
    0 on tokens and the dtype's minimum on padding (models_cls_mlm.py:186-190)."""
    return (1.0 - attention_mask[:, None, None, :].to(dtype)) * torch.finfo(dtype).min


def flatten_columns(columns: list[dict[str, Tensor]], pad_id: int) -> dict[str, Tensor]:
    """The authors' collator pads every sentence of a batch to one length and lays the batch out as
    (batch, num_sent, len) (train_cls_mlm.py:511-533); ``cl_forward`` flattens it to (batch * num_sent, len)
    (models_cls_mlm.py:142-145). Columns tokenized separately are padded here to the common length first."""
    length = max(c["input_ids"].shape[1] for c in columns)
    fill = {"input_ids": pad_id, "attention_mask": 0, "token_type_ids": 0, "labels": -100}
    stacked = {}
    for key in columns[0]:
        padded = [F.pad(c[key], (0, length - c[key].shape[1]), value=fill.get(key, 0)) for c in columns]
        stacked[key] = torch.stack(padded, dim=1).reshape(-1, length)
    return stacked


def contrastive_loss(pooled: Tensor, batch: int, num_sent: int, temperature: float) -> Tensor:
    """``cl_forward``'s InfoNCE (simcse/models.py:164-212; models_cls_mlm.py:213-260): rows of (batch, num_sent),
    cosine of the first view against the second (and the hard negatives) divided by the temperature, cross-entropy
    with the diagonal as labels. ``hard_negative_weight`` is 0 by default, so no weights are added."""
    pooled = pooled.view(batch, num_sent, -1)
    z1, z2 = pooled[:, 0], pooled[:, 1]
    scores = F.cosine_similarity(z1.unsqueeze(1), z2.unsqueeze(0), dim=-1) / temperature
    if num_sent == 3:
        hard = F.cosine_similarity(z1.unsqueeze(1), pooled[:, 2].unsqueeze(0), dim=-1) / temperature
        scores = torch.cat([scores, hard], dim=1)
    return F.cross_entropy(scores, torch.arange(batch))


def simcse_forward(encoder: nn.Module, mlp: nn.Module, columns: list[dict[str, Tensor]], pad_id: int, temperature: float) -> Tensor:
    """Unsupervised SimCSE's training loss with ``--pooler_type cls --mlp_only_train`` (run_unsup_example.sh):
    [CLS] of the last layer (simcse/models.py:67-68), ``MLPLayer`` on every row during training (:160-161)."""
    flat = flatten_columns(columns, pad_id)
    batch, num_sent = columns[0]["input_ids"].shape[0], len(columns)
    out = encoder(**{k: v for k, v in flat.items() if k != "labels"})  # :127-139
    pooled = mlp(out.last_hidden_state[:, 0])
    return contrastive_loss(pooled, batch, num_sent, temperature)


def lm_head_forward(head: dict[str, Tensor], hidden: Tensor, eps: float) -> Tensor:
    """``BertLMPredictionHead``: dense, GELU, LayerNorm, then the vocabulary projection with its bias."""
    x = F.gelu(F.linear(hidden, head["dense.weight"], head["dense.bias"]))
    x = F.layer_norm(x, (x.shape[-1],), head["norm.weight"], head["norm.bias"], eps)
    return F.linear(x, head["decoder.weight"], head["decoder.bias"])


def infocse_forward(
    encoder: nn.Module,
    frozen: nn.Module,
    c_head: nn.ModuleList,
    lm_head: dict[str, Tensor],
    projection: nn.Module,
    columns: list[dict[str, Tensor]],
    masked_columns: list[Tensor],
    label_columns: list[Tensor],
    pad_id: int,
    temperature: float,
    layer_norm_eps: float,
) -> tuple[Tensor, Tensor]:
    """InfoCSE's ``cl_forward`` with ``--do_mlm --skip_from k --n_head_layers n --batchnorm --pooler_type cls
    --mlp_only_train --mlm_eval`` (Infocse-bert-base.sh). Returns (contrastive, unweighted conditional MLM)."""
    flat = flatten_columns(
        [{**c, "mlm_input_ids": m, "labels": lab} for c, m, lab in zip(columns, masked_columns, label_columns, strict=True)],
        pad_id,
    )
    batch, num_sent = columns[0]["input_ids"].shape[0], len(columns)
    inputs = {"input_ids": flat["input_ids"], "attention_mask": flat["attention_mask"]}
    if "token_type_ids" in flat:
        inputs["token_type_ids"] = flat["token_type_ids"]
    out = encoder(**inputs)  # models_cls_mlm.py:148-159
    frozen.eval()  # :164-165 (--mlm_eval)
    with torch.no_grad():  # :166-178, the lower k layers of the checkpoint's BertForMaskedLM
        lower = frozen(**{**inputs, "input_ids": flat["mlm_input_ids"]}, output_hidden_states=True)
    # :181-196: the encoder's last-layer [CLS] next to the frozen stack's non-[CLS] states, through the c_head layers
    hidden = torch.cat([out.last_hidden_state[:, :1], lower.hidden_states[-1][:, 1:].detach()], dim=1)
    mask = extended_attention_mask(flat["attention_mask"], hidden.dtype)
    for layer in c_head:
        result = layer(hidden, mask)
        hidden = result[0] if isinstance(result, tuple) else result
    scores = lm_head_forward(lm_head, hidden, layer_norm_eps)  # :198, every position; labels pick the masked ones
    # :200-211: [CLS] (Pooler "cls"), then ProjectionMLP over all batch * num_sent rows at once (one BatchNorm batch)
    pooled = projection(out.last_hidden_state[:, 0])
    contrastive = contrastive_loss(pooled, batch, num_sent, temperature)
    mlm = F.cross_entropy(scores.view(-1, scores.shape[-1]), flat["labels"].view(-1))  # :264-269
    return contrastive, mlm


def informin_forward(
    encoder: nn.Module,
    mlp: nn.Module,
    columns: list[dict[str, Tensor]],
    pad_id: int,
    temperature: float,
    reconstruction_weight: float,
) -> tuple[Tensor, Tensor]:
    """InforMin-CL's ``cl_forward`` (informin-cl/models.py:101-230) with the MLP on [CLS] during training (the
    paper's setting) and no MLM term. Returns (contrastive, weighted reconstruction)."""
    flat = flatten_columns(columns, pad_id)
    batch, num_sent = columns[0]["input_ids"].shape[0], len(columns)
    out = encoder(**flat)  # :131-141
    pooled = mlp(out.last_hidden_state[:, 0]).view(batch, num_sent, -1)  # :159-165
    contrastive = contrastive_loss(pooled.view(batch * num_sent, -1), batch, num_sent, temperature)  # :198-218
    z1, z2 = F.normalize(pooled[:, 0], dim=-1), F.normalize(pooled[:, 1], dim=-1)  # :228-229
    # :21-22 reconstruction_loss = mse(z1, z2) + mse(z2, z1); :230 weighted by --reconstruction_weight
    reconstruction = F.mse_loss(z1, z2) + F.mse_loss(z2, z1)
    return contrastive, reconstruction_weight * reconstruction


def informin_mlm_forward(
    encoder: nn.Module,
    lm_head: dict[str, Tensor],
    columns: list[dict[str, Tensor]],
    masked_columns: list[Tensor],
    label_columns: list[Tensor],
    pad_id: int,
    layer_norm_eps: float,
) -> Tensor:
    """InforMin-CL's optional MLM term, unweighted (informin-cl/models.py:144-156, 221-224): the encoder on the
    masked copy of every sentence of the flattened batch, ``lm_head`` on its last layer, cross-entropy on the masked
    positions. The released collator also fed these masked ids to the contrastive views (``mask_tokens`` masks
    ``input_ids`` in place, train.py:507-538); the package keeps the views intact, so this reference does too."""
    flat = flatten_columns(
        [{**c, "input_ids": m, "labels": lab} for c, m, lab in zip(columns, masked_columns, label_columns, strict=True)],
        pad_id,
    )
    labels = flat.pop("labels")
    out = encoder(**flat)
    scores = lm_head_forward(lm_head, out.last_hidden_state, layer_norm_eps)
    return F.cross_entropy(scores.view(-1, scores.shape[-1]), labels.view(-1))
