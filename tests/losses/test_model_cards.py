"""Model cards name every argument of the objective, as sentence-transformers' own losses do, and cite each paper in
full (arXiv identifier and address)."""

from __future__ import annotations

import inspect
import json
import re

import pytest
from datasets import Dataset

from st_infocse import losses
from st_infocse.losses import citations

from ..conftest import random_sentences

# Each loss with the arguments it is trained with here (weights above 0 so that every term runs).
BUILDS = {
    "SimCSELoss": lambda m: losses.SimCSELoss(m),
    "InfoCSELoss": lambda m: losses.InfoCSELoss(m, lambda_=0.1, informin_weight=0.5),
    "CMLMCSELoss": lambda m: losses.CMLMCSELoss(m),
    "ConditionalMLMLoss": lambda m: losses.ConditionalMLMLoss(m),
    "InforMinReconstructionLoss": lambda m: losses.InforMinReconstructionLoss(m, mlm_weight=0.1),
    "AuxiliaryPretrainingLoss": lambda m: losses.AuxiliaryPretrainingLoss(m),
}


def _arguments(loss_class: type) -> set[str]:
    """The loss's keyword arguments; a subclass taking ``**kwargs`` takes its parent's too."""
    names: set[str] = set()
    for cls in loss_class.__mro__:
        if "__init__" not in cls.__dict__ or not issubclass(cls, losses.TrainingLoss):
            continue
        parameters = inspect.signature(cls.__dict__["__init__"]).parameters
        names |= {name for name, p in parameters.items() if p.kind is not p.VAR_KEYWORD}
        if not any(p.kind is p.VAR_KEYWORD for p in parameters.values()):
            break
    return names - {"self", "model"}


@pytest.mark.parametrize("name", list(BUILDS))
def test_config_lists_every_argument(make_model, name):
    loss = BUILDS[name](make_model())
    missing = _arguments(type(loss)) - set(loss.get_config_dict())
    assert not missing, f"{name}.get_config_dict() leaves out {sorted(missing)}"


@pytest.mark.parametrize("name", list(BUILDS))
def test_trained_models_card_shows_every_argument_and_the_citation(make_model, run_trainer, tmp_path, name):
    model = make_model()
    loss = BUILDS[name](model)
    run_trainer(model, loss, Dataset.from_dict({"text": random_sentences(16)}), steps=1)
    model.save(str(tmp_path / "card"))
    card = (tmp_path / "card" / "README.md").read_text(encoding="utf-8")
    assert f"{name}" in card
    for key, value in loss.get_config_dict().items():
        assert f'"{key}": {json.dumps(value)}' in card, (name, key, value)
    key = re.search(r"@\w+\{(\w+),", loss.citation).group(1)
    assert key in card and re.search(r"eprint=\{\d{4}\.\d{4,5}\}", card)


CITATIONS = {name: value for name, value in vars(citations).items() if name.endswith("_CITATION")}


@pytest.mark.parametrize("name", sorted(CITATIONS))
def test_every_citation_is_complete(name):
    entry = CITATIONS[name]
    eprint = re.search(r"eprint=\{(\d{4}\.\d{4,5})\}", entry)
    assert eprint, f"{name} has no arXiv eprint"
    assert "archivePrefix={arXiv}" in entry
    assert f"url={{https://arxiv.org/abs/{eprint.group(1)}}}" in entry
    for field in ("title", "author", "year"):
        assert re.search(rf"\b{field}=\{{.+\}}", entry), (name, field)


def test_the_papers_identifiers():
    # Checked against each paper's arXiv page (see st_infocse/losses/citations.py).
    expected = {
        "SIMCSE_CITATION": "2104.08821",
        "INFOCSE_CITATION": "2210.06432",
        "INFORMIN_CITATION": "2209.10951",
        "IDC_CITATION": "2202.13802",
        "CMLM_CSE_CITATION": "2306.09594",
        "ICT_CITATION": "1906.00300",  # ACL 2019, P19-1612, matched on title, authors and abstract
        "GPL_CITATION": "2112.07577",  # NAACL 2022
    }
    assert {name: re.search(r"eprint=\{(.+?)\}", entry).group(1) for name, entry in CITATIONS.items()} == expected
