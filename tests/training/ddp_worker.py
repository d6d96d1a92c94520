"""Run by tests/training/test_distributed.py under torchrun (2 processes): gloo on the CPU, or NCCL with one GPU per
process when ``DDP_DEVICE=cuda``."""

import os
import sys

import torch
import torch.distributed as dist
from sentence_transformers import SentenceTransformer
from sentence_transformers.base.modules import Transformer
from sentence_transformers.sentence_transformer.modules import Pooling
from transformers import TrainerState

from st_infocse import losses
from st_infocse.training import AuxiliaryStateCallback


def main(model_dir: str, out_path: str, anchors: list[str], positives: list[str]) -> None:
    cuda = os.environ.get("DDP_DEVICE", "cpu") == "cuda"
    dist.init_process_group("nccl" if cuda else "gloo")
    rank, world = dist.get_rank(), dist.get_world_size()
    device = f"cuda:{rank}" if cuda else "cpu"
    if cuda:
        torch.cuda.set_device(rank)
    torch.manual_seed(0)
    transformer = Transformer(model_dir, max_seq_length=32)
    model = SentenceTransformer(modules=[transformer, Pooling(32, "cls")], device=device)

    def batch(texts: list[str]) -> dict[str, torch.Tensor]:
        return {key: value.to(device) if isinstance(value, torch.Tensor) else value
                for key, value in model.preprocess(texts).items()}
    model.eval()  # no dropout: one process and two processes must see the same function
    per_rank = len(anchors) // world
    rows = slice(rank * per_rank, (rank + 1) * per_rank)

    loss = losses.SimCSELoss(model, gather_across_devices=True)
    value = loss([batch(anchors[rows]), batch(positives[rows])])["contrastive"]
    value.backward()
    # What DistributedDataParallel does to the model's gradients.
    for p in model.parameters():
        if p.grad is not None:
            dist.all_reduce(p.grad)
            p.grad /= world
    mean_loss = value.detach().clone()
    dist.all_reduce(mean_loss)
    mean_loss /= world
    grads = {n: p.grad.clone() for n, p in model.named_parameters() if p.grad is not None}

    model.zero_grad(set_to_none=True)
    torch.manual_seed(rank)  # different masks on each process
    info = losses.InfoCSELoss(model, lambda_=1.0).to(device)
    out = info([batch(anchors[rows]), batch(positives[rows])])
    sum(out.values()).backward()
    aux = [p for n, p in info.named_parameters() if p.requires_grad and not n.startswith("model.")]
    local = torch.cat([(p.grad if p.grad is not None else torch.zeros_like(p)).reshape(-1) for p in aux])
    gathered_local = [torch.zeros_like(local) for _ in range(world)]
    dist.all_gather(gathered_local, local)
    AuxiliaryStateCallback(info).on_pre_optimizer_step(None, TrainerState(), None)  # what the trainer calls before each update
    synced = torch.cat([p.grad.reshape(-1) for p in aux])
    gathered_synced = [torch.zeros_like(synced) for _ in range(world)]
    dist.all_gather(gathered_synced, synced)
    if rank == 0:
        torch.save(
            {
                "loss": mean_loss.cpu(),
                "grads": {name: grad.cpu() for name, grad in grads.items()},
                "aux_local": [t.cpu() for t in gathered_local],
                "aux_synced": [t.cpu() for t in gathered_synced],
            },
            out_path,
        )
    dist.destroy_process_group()


if __name__ == "__main__":
    model_dir, out_path, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
    texts = sys.argv[4:]
    main(model_dir, out_path, texts[:n], texts[n:])
