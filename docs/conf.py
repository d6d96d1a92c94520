"""Sphinx configuration of the st-infocse documentation.

Build (offline, warnings as errors), from the repository root:

    python -m sphinx -W --keep-going -b html docs docs/_build/html

Pages are Markdown (MyST). The API reference is autodoc + napoleon over the package's docstrings, which follow
sentence-transformers' style (Google sections, reST tables and roles); the command-line reference, the recipes
table and the benchmark results are written from the code by ``docs/generate.py`` before each build.
"""

from __future__ import annotations

import sys
from pathlib import Path

DOCS = Path(__file__).resolve().parent
sys.path.insert(0, str(DOCS))
sys.path.insert(0, str(DOCS.parent))

import generate  # noqa: E402  (docs/generate.py)

import st_infocse  # noqa: E402

project = "st-infocse"
author = "st-infocse contributors"
copyright = "st-infocse contributors, Apache-2.0"
release = version = st_infocse.__version__

extensions = [
    "myst_parser",
    "sphinx.ext.autodoc",
    "sphinx.ext.napoleon",
    "sphinx.ext.mathjax",
    "sphinx.ext.viewcode",
]

source_suffix = {".md": "markdown"}
root_doc = "index"
exclude_patterns = ["_build", "_generated", "_static", "Thumbs.db", ".DS_Store"]

myst_enable_extensions = ["dollarmath", "amsmath", "colon_fence", "deflist"]
myst_heading_anchors = 3

# the docstrings' own sections besides Args/Returns/References/Example
napoleon_custom_sections = ["Requirements", "Inputs"]
# "Attributes:" as fields of the class: with undoc-members the dataclass fields are also listed as members
napoleon_use_ivar = True
autoclass_content = "both"  # the losses document their arguments in __init__, as sentence-transformers does
autodoc_member_order = "bysource"
autodoc_typehints = "description"
autodoc_inherit_docstrings = False  # not torch.nn.Module.forward's text on every loss
# undoc-members: the losses keep their docstring on __init__, so their classes have none of their own
autodoc_default_options = {"members": True, "undoc-members": True, "show-inheritance": True}

# Equations: MathJax 3 from docs/_static/mathjax (vendored from npm), never a CDN.
mathjax_path = "mathjax/tex-svg.js"

html_theme = "furo"
html_title = f"st-infocse {release}"
html_static_path = ["_static"]
html_css_files = ["st-infocse.css"]  # wide tables and code blocks at the column width (docs/_static)
html_theme_options = {"navigation_with_keys": True}
html_show_sourcelink = False
smartquotes = False  # keep "--flag" and quotes as typed, in tables too


def _write_generated_pages(app) -> None:
    generate.write_generated_pages()


def setup(app) -> None:
    app.connect("builder-inited", _write_generated_pages)
