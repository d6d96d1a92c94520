"""The package's layers and the absence of import cycles, as declared in pyproject.toml's import-linter contracts."""

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]


@pytest.mark.skipif(shutil.which("lint-imports") is None and sys.prefix == sys.base_prefix,
                    reason="import-linter is not installed (the dev extra)")
def test_imports_keep_the_layers_and_have_no_cycles():
    lint = Path(sys.executable).parent / "lint-imports"
    command = [str(lint)] if lint.exists() else ["lint-imports"]
    result = subprocess.run([*command, "--config", str(REPO / "pyproject.toml")], cwd=REPO, capture_output=True,
                            text=True, timeout=120)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-2000:]
    assert "2 kept, 0 broken" in result.stdout
