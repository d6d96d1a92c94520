"""The package as users get it: build the wheel, install it into a fresh virtual environment, run it from there.

Opt-in (marker ``wheel``; minutes, and it needs the package index that ``pip`` is configured with):

    HF_HUB_OFFLINE=1 python -m pytest -m wheel

``ST_INFOCSE_WHEEL=dist/st_infocse-....whl`` tests a wheel already built (CI builds one with ``python -m build``);
otherwise the test builds its own from this checkout. torch is installed first at the version CI uses, whose CPU
build the project's package index holds.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import venv
import zipfile
from pathlib import Path

import pytest

pytestmark = pytest.mark.wheel

ROOT = Path(__file__).resolve().parents[1]
TORCH = os.environ.get("ST_INFOCSE_TEST_TORCH", "torch==2.13.0")
OFFLINE = {"HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}


def _run(args: list[str], cwd: Path, timeout: int = 900) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    env.update(OFFLINE)
    result = subprocess.run(args, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)
    assert result.returncode == 0, f"{' '.join(args)} exited {result.returncode}:\n{result.stdout[-3000:]}\n{result.stderr[-3000:]}"
    return result


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    given = os.environ.get("ST_INFOCSE_WHEEL")
    if given:
        return Path(given).resolve()
    out = tmp_path_factory.mktemp("dist")
    _run([sys.executable, "-m", "build", "--wheel", "--outdir", str(out), str(ROOT)], cwd=out)
    (built,) = out.glob("st_infocse-*.whl")
    return built


@pytest.fixture(scope="module")
def installed(wheel, tmp_path_factory) -> Path:
    """A fresh virtual environment with torch, then the wheel with its ``demo`` extra; returns its ``bin``."""
    env_dir = tmp_path_factory.mktemp("venv")
    venv.create(env_dir, with_pip=True)
    bin_dir = env_dir / "bin"
    _run([str(bin_dir / "python"), "-m", "pip", "install", "--quiet", TORCH], cwd=env_dir)
    _run([str(bin_dir / "python"), "-m", "pip", "install", "--quiet", f"{wheel}[demo]"], cwd=env_dir)
    return bin_dir


def test_wheel_carries_the_demo_data_and_the_licences(wheel):
    names = zipfile.ZipFile(wheel).namelist()
    for data_file in ("wiki_sentences.txt.gz", "stsb_dev.jsonl.gz", "LICENSES.md", "STSBenchmark-LICENSE.txt"):
        assert f"st_infocse/data/{data_file}" in names
    licences = {Path(name).name for name in names if ".dist-info/licenses/" in name}
    assert {"LICENSE", "LICENSES.md", "STSBenchmark-LICENSE.txt"} <= licences
    metadata = next(name for name in names if name.endswith(".dist-info/METADATA"))
    text = zipfile.ZipFile(wheel).read(metadata).decode()
    assert "License-Expression: Apache-2.0" in text
    entry_points = zipfile.ZipFile(wheel).read(metadata.replace("METADATA", "entry_points.txt")).decode()
    assert "st-infocse = st_infocse.cli:main" in entry_points


def test_installed_package_is_the_wheel(installed, tmp_path):
    result = _run([str(installed / "python"), "-c", "import st_infocse; print(st_infocse.__file__)"], cwd=tmp_path)
    assert str(installed.parent) in result.stdout and str(ROOT) not in result.stdout


def test_command_line_help(installed, tmp_path):
    out = _run([str(installed / "st-infocse"), "--help"], cwd=tmp_path).stdout
    for command in ("pretrain-aux", "train", "mine", "evaluate", "demo", "recipes"):
        assert re.search(rf"^\s+{command}\s", out, flags=re.M), out


def test_recipes(installed, tmp_path):
    out = _run([str(installed / "st-infocse"), "recipes"], cwd=tmp_path).stdout
    assert "infocse-bert-base" in out and "STS avg 78.85 (paper 000 Table 2)" in out


def test_one_step_demo(installed, tmp_path):
    output_dir = tmp_path / "demo"
    out = _run(
        [str(installed / "st-infocse"), "demo", "--max_steps", "1", "--eval_pairs", "100", "--output_dir", str(output_dir)],
        cwd=tmp_path,
    ).stdout
    before = re.search(r"before training: (\d+\.\d\d)", out)
    after = re.search(r"after 1 infocse steps: (\d+\.\d\d)", out)
    assert before and after, out
    assert (output_dir / "config_sentence_transformers.json").is_file()
