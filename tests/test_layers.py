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


def _imported_modules(path: Path, package: str | None) -> set[str]:
    """The absolute module names a file imports (relative imports resolved against ``package``)."""
    import ast

    names = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level and package:
                parent = package.rsplit(".", node.level - 1)[0] if node.level > 1 else package
                base = f"{parent}.{base}" if base else parent
            names.add(base)
            names.update(f"{base}.{alias.name}" for alias in node.names)
    return names


def test_no_module_imports_another_packages_private_module():
    """``st_infocse.x._name`` is for ``st_infocse.x`` alone: the other packages and the benchmarks use public names
    (the losses' contract with the training loop is ``st_infocse.losses.TrainingLoss``)."""
    offenders = []
    for path in sorted([*(REPO / "st_infocse").rglob("*.py"), *(REPO / "benchmarks").rglob("*.py")]):
        relative = path.relative_to(REPO).with_suffix("")
        module = ".".join(relative.parts)
        package = module.rsplit(".", 1)[0] if path.name != "__init__.py" else module.removesuffix(".__init__")
        for name in _imported_modules(path, package if module.startswith("st_infocse") else None):
            parts = name.split(".")
            private = [i for i, part in enumerate(parts) if part.startswith("_") and not part.startswith("__")]
            if parts[0] != "st_infocse" or not private:
                continue
            owner = ".".join(parts[: private[0]])
            if not (package == owner or package.startswith(owner + ".")):
                offenders.append(f"{relative}: {name}")
    assert not offenders, offenders
