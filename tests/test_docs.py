"""The API reference (``docs/api``) covers the public API, and builds offline.

``.ci/run`` builds it with Sphinx (warnings as errors); these checks need no Sphinx: every
public name of the estimator, theory and experiment packages has an autodoc entry (so a new
estimator cannot be left out of the reference by accident), and the configuration
fetches nothing from the network unless asked to.
"""

from __future__ import annotations

import importlib
import re
import runpy
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
API = ROOT / "docs" / "api"


def _documented() -> set[str]:
    """Dotted names of the objects the pages document: ``.. autoX:: NAME`` and the names
    listed in an ``automodule``'s ``:members:`` option."""
    names: set[str] = set()
    for page in API.glob("*.rst"):
        text = page.read_text(encoding="utf-8")
        for m in re.finditer(r"^\.\. auto(\w+):: (\S+)\n((?:   .*\n|\s*\n)*)", text, re.M):
            kind, target, options = m.groups()
            names.add(target)
            listed = re.search(r":members: (.+(?:\n {13,}.+)*)", options)
            if kind == "module" and listed:
                names |= {f"{target}.{n.strip()}" for n in listed.group(1).split(",")}
    return names


def _canonical(dotted: str) -> object:
    try:
        return importlib.import_module(dotted)
    except ImportError:
        module, _, name = dotted.rpartition(".")
        return getattr(importlib.import_module(module), name)


@pytest.mark.parametrize("package", ["kernel_lab.core.models", "kernel_lab.core.theory",
                                     "kernel_lab.experiments"])
def test_every_public_name_is_in_the_reference(package):
    documented = {id(_canonical(n)) for n in _documented()}
    public = importlib.import_module(package).__all__
    missing = [n for n in public
               if id(getattr(importlib.import_module(package), n)) not in documented]
    assert not missing, f"{package}: {missing} are public but not in docs/api"


def test_the_data_and_model_file_entry_points_are_in_the_reference():
    from kernel_lab.core.models.preprocess import ClassLabels, Standardize, TableColumns
    from kernel_lab.data.pipeline import model_pipeline
    from kernel_lab.data.read import load_table
    from kernel_lab.data.source import DataSource, load_data
    from kernel_lab.engine.model_file import SavedModel, load_model, save_model

    documented = {id(_canonical(n)) for n in _documented()}
    for obj in (DataSource, load_data, load_table, model_pipeline, TableColumns, Standardize,
                ClassLabels, SavedModel, save_model, load_model):
        assert id(obj) in documented, obj


def test_the_build_fetches_nothing_by_default(monkeypatch):
    monkeypatch.delenv("KERNEL_LAB_INTERSPHINX", raising=False)
    monkeypatch.delenv("KERNEL_LAB_GALLERY_RUN", raising=False)
    conf = runpy.run_path(str(API / "conf.py"))
    assert "sphinx.ext.intersphinx" not in conf["extensions"]
    assert conf["sphinx_gallery_conf"]["plot_gallery"] is False


def test_ci_builds_the_reference_with_warnings_as_errors():
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8").splitlines()
    build = [line for line in ci if "-m sphinx" in line]
    assert build and " -W " in build[0] and "docs/api" in build[0]
    assert any(line.startswith(".venv/bin/pip install") and ".[docs]" in line for line in ci)
