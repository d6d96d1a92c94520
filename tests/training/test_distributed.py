import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from st_infocse import losses

from ..conftest import random_sentences

TWO_GPUS = pytest.mark.skipif(torch.cuda.device_count() < 2, reason="needs two CUDA GPUs")


# cuda: NCCL, one GPU per process (python -m pytest -m gpu; benchmarks/gpu_check.sh runs it where two GPUs are)
@pytest.mark.parametrize("device", ["cpu", pytest.param("cuda", marks=[pytest.mark.gpu, TWO_GPUS])])
def test_two_processes_match_one_process_on_the_global_batch(make_model, tiny_bert_dir, tmp_path, device):
    anchors, positives = random_sentences(8, seed=1), random_sentences(8, seed=2)
    out = tmp_path / "ddp.pt"
    worker = Path(__file__).with_name("ddp_worker.py")
    env = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONPATH": str(Path(__file__).resolve().parents[2]),
           "DDP_DEVICE": device}
    command = [
        sys.executable,
        "-m",
        "torch.distributed.run",
        "--standalone",
        "--nproc_per_node",
        "2",
        str(worker),
        str(tiny_bert_dir),
        str(out),
        str(len(anchors)),
        *anchors,
        *positives,
    ]
    result = subprocess.run(command, capture_output=True, text=True, timeout=240, env=env)
    assert result.returncode == 0, result.stderr[-3000:]
    ddp = torch.load(out)

    model = make_model().to(device)
    model.eval()
    views = [{key: value.to(device) if isinstance(value, torch.Tensor) else value
              for key, value in model.preprocess(texts).items()} for texts in (anchors, positives)]
    single = losses.SimCSELoss(model)(views)["contrastive"]
    single.backward()
    # A GPU's kernels sum in other orders than the CPU's: a looser bound there, still rounding.
    rtol, atol, exact = (1e-5, 2e-6, 1e-6) if device == "cpu" else (1e-4, 1e-5, 1e-5)
    assert torch.allclose(ddp["loss"], single.detach().cpu(), atol=exact), (ddp["loss"], single)
    for name, param in model.named_parameters():
        if name in ddp["grads"]:
            # Summation order differs between one and two processes: rounding, not a bias.
            assert torch.allclose(ddp["grads"][name], param.grad.cpu(), rtol=rtol, atol=atol), name

    # Auxiliary modules: different local gradients, one averaged gradient on every process.
    local, synced = ddp["aux_local"], ddp["aux_synced"]
    assert not torch.allclose(local[0], local[1])
    assert torch.allclose(synced[0], synced[1])
    assert torch.allclose(synced[0], (local[0] + local[1]) / 2, atol=exact)
