"""The packages' lazy exports: a name is imported on first use, cached, and an unknown name is an AttributeError."""

import pkgutil
import subprocess
import sys

import pytest

from st_infocse import evaluation, losses, mining, modeling, training
from st_infocse.evaluation import loaders

LAZY = [evaluation, loaders, losses, mining, modeling, training]


@pytest.mark.parametrize("package", LAZY, ids=lambda p: p.__name__)
def test_every_exported_name_resolves_and_is_cached(package):
    for name in package.__all__:
        value = getattr(package, name)
        assert vars(package)[name] is value
    assert set(package.__all__) <= set(dir(package))
    # a submodule of an exported name's name would replace it on the package once imported
    assert not set(package.__all__) & {info.name for info in pkgutil.iter_modules(package.__path__)}


def test_submodule_by_attribute_and_unknown_name():
    assert losses.infocse.__name__ == "st_infocse.losses.infocse"
    with pytest.raises(AttributeError, match="module 'st_infocse.losses' has no attribute 'no_such_name'"):
        losses.no_such_name  # noqa: B018


def test_a_broken_import_inside_a_submodule_is_not_hidden(tmp_path, monkeypatch):
    # A submodule that exists but fails to import raises its own error, not "has no attribute".
    from st_infocse.lazy import lazy_exports

    package = tmp_path / "pkg"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "broken.py").write_text("import module_that_is_not_installed\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    getattr_, _ = lazy_exports("pkg", {}, [], {})
    with pytest.raises(ModuleNotFoundError, match="module_that_is_not_installed"):
        getattr_("broken")


def test_importing_the_cli_input_checks_does_not_import_torch():
    # The reason for lazy exports: checking documents and training texts happens before torch is imported.
    code = "import sys, st_infocse.mining.documents, st_infocse.training.texts; print('torch' in sys.modules)"
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert result.stdout.strip() == "False"
