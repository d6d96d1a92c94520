"""bf16 on a CPU without native bf16 is flagged before training starts."""

from __future__ import annotations

import logging

from st_infocse.training.precision import cpu_flags, cpu_has_native_bf16, warn_if_slow_bf16

AVX2_ONLY = "processor\t: 0\nflags\t\t: fpu sse sse2 avx fma avx2\n"
SAPPHIRE = "processor\t: 0\nflags\t\t: fpu avx2 avx512f avx512_bf16 amx_tile amx_bf16\n"


def test_flags_are_read_from_cpuinfo(tmp_path):
    path = tmp_path / "cpuinfo"
    path.write_text(AVX2_ONLY)
    assert cpu_flags(path) == {"fpu", "sse", "sse2", "avx", "fma", "avx2"}
    assert cpu_has_native_bf16(path) is False
    path.write_text(SAPPHIRE)
    assert cpu_has_native_bf16(path) is True
    assert cpu_has_native_bf16(tmp_path / "missing") is None


def test_warns_only_for_bf16_on_a_cpu_without_it(tmp_path, caplog):
    avx2, amx = tmp_path / "avx2", tmp_path / "amx"
    avx2.write_text(AVX2_ONLY)
    amx.write_text(SAPPHIRE)
    with caplog.at_level(logging.WARNING, logger="st_infocse"):
        assert warn_if_slow_bf16(True, True, avx2)
        assert "without native bf16" in caplog.text
        caplog.clear()
        assert not warn_if_slow_bf16(True, True, amx)
        assert not warn_if_slow_bf16(False, True, avx2)
        assert not warn_if_slow_bf16(True, False, avx2)  # GPU training: not our business
        assert not warn_if_slow_bf16(True, True, tmp_path / "missing")  # unknown CPU: stay quiet
    assert caplog.text == ""


def test_paper_arguments_do_not_pin_memory_without_an_accelerator(tmp_path, monkeypatch):
    import torch

    from st_infocse.training import PaperTrainingArguments

    assert PaperTrainingArguments(output_dir=str(tmp_path), use_cpu=True).dataloader_pin_memory is False
    if getattr(torch, "accelerator", None) is not None:
        monkeypatch.setattr(torch.accelerator, "is_available", lambda: False)
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    assert PaperTrainingArguments(output_dir=str(tmp_path)).dataloader_pin_memory is False
