import os
import subprocess
import sys
from pathlib import Path

import torch

from st_infocse import losses

from ..conftest import random_sentences


def test_two_processes_match_one_process_on_the_global_batch(make_model, tiny_bert_dir, tmp_path):
    anchors, positives = random_sentences(8, seed=1), random_sentences(8, seed=2)
    out = tmp_path / "ddp.pt"
    worker = Path(__file__).with_name("ddp_worker.py")
    env = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
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

    model = make_model()
    model.eval()
    single = losses.SimCSELoss(model)([model.preprocess(anchors), model.preprocess(positives)])
    single.backward()
    assert torch.allclose(ddp["loss"], single.detach(), atol=1e-6)
    for name, param in model.named_parameters():
        if name in ddp["grads"]:
            # Summation order differs between one and two processes: rounding, not a bias.
            assert torch.allclose(ddp["grads"][name], param.grad, rtol=1e-5, atol=2e-6), name

    # Auxiliary modules: different local gradients, one averaged gradient on every process.
    local, synced = ddp["aux_local"], ddp["aux_synced"]
    assert not torch.allclose(local[0], local[1])
    assert torch.allclose(synced[0], synced[1])
    assert torch.allclose(synced[0], (local[0] + local[1]) / 2, atol=1e-6)
