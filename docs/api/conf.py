"""Sphinx configuration of Kernel Lab's API reference (``docs/api``).

Build it from the repository root (what ``.ci/run`` does, warnings as errors)::

    pip install -e ".[docs]"
    python -m sphinx -W --keep-going -n -b html docs/api build/api

and open ``build/api/index.html``. Nothing is fetched from the network: links to
NumPy, SciPy and scikit-learn are made only when ``KERNEL_LAB_INTERSPHINX=1`` is set
(their inventories are downloaded then). The gallery of ``examples/`` is rendered
without running the scripts (the tests run them); ``KERNEL_LAB_GALLERY_RUN=1`` runs
them at their small size (``KERNEL_LAB_EXAMPLES_SMALL=1``) and shows their output.
"""

from __future__ import annotations

import importlib
import os
import sys
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
sys.path.insert(0, str(ROOT))

import kernel_lab  # noqa: E402

project = "Kernel Lab"
author = "Kernel Lab developers"
copyright = "Kernel Lab developers"
release = kernel_lab.__version__
version = release

extensions = [
    "sphinx.ext.autodoc",
    "sphinx.ext.mathjax",
    "numpydoc",
    "sphinx_gallery.gen_gallery",
]

# -- autodoc and numpydoc ------------------------------------------------------------------
autodoc_default_options = {"members": True, "member-order": "bysource"}
autodoc_typehints = "none"           # numpydoc's Parameters sections say the types
autodoc_class_signature = "mixed"
autoclass_content = "class"
numpydoc_show_class_members = False  # autodoc lists the members itself
numpydoc_class_members_toctree = False
numpydoc_xref_param_type = False
add_module_names = False

# -- the examples gallery ------------------------------------------------------------------
run_gallery = os.environ.get("KERNEL_LAB_GALLERY_RUN") == "1"
if run_gallery:
    os.environ.setdefault("KERNEL_LAB_EXAMPLES_SMALL", "1")
sphinx_gallery_conf = {
    "examples_dirs": [str(ROOT / "examples")],
    "gallery_dirs": ["examples"],
    "filename_pattern": r"/.*\.py$",
    "ignore_pattern": r"__init__\.py",
    "plot_gallery": run_gallery,
    "image_scrapers": (),              # the examples print their results; no figures
    "reset_modules": (),
    "download_all_examples": False,
    "remove_config_comments": True,
    "min_reported_time": 1e9,
    "show_signature": False,
    "write_computation_times": False,  # no sg_execution_times.rst in the source folder
}

# -- cross-references ------------------------------------------------------------------------
intersphinx_mapping: dict[str, tuple[str, None]] = {}
if os.environ.get("KERNEL_LAB_INTERSPHINX") == "1":
    extensions.append("sphinx.ext.intersphinx")
    intersphinx_mapping = {
        "python": ("https://docs.python.org/3", None),
        "numpy": ("https://numpy.org/doc/stable", None),
        "scipy": ("https://docs.scipy.org/doc/scipy", None),
        "sklearn": ("https://scikit-learn.org/stable", None),
        "distributed": ("https://distributed.dask.org/en/stable", None),
    }

# -- output ------------------------------------------------------------------------------------
html_theme = "alabaster"
html_title = f"Kernel Lab {release} — API reference"
html_static_path: list[str] = []
exclude_patterns = ["_build", "examples/*.ipynb", "examples/*.py", "examples/*.zip"]

# -- what is left out ------------------------------------------------------------------------
# NumPy, SciPy, scikit-learn and Dask are linked only with intersphinx (off unless asked for,
# above); without it a reference to them cannot resolve and is shown as code.
nitpick_ignore_regex = [] if intersphinx_mapping else [
    (r"py:.*", r"(numpy|scipy|sklearn|dask|distributed)(\..*)?"),
]


def _skip_member(app: Any, what: str, name: str, obj: Any, skip: bool, options: Any
                 ) -> bool | None:
    """Leave out scikit-learn's generated metadata-routing setters (``set_fit_request``,
    ``set_score_request``): scikit-learn documents them, and their text refers to its own
    glossary."""
    if name.startswith("set_") and name.endswith("_request"):
        return True
    return None


def _home(module: str, klass: str | None) -> str | None:
    """The module that defines ``module.klass`` (e.g. ``kernel_lab.core.models.nystrom``
    for ``kernel_lab.core.models.NystromRidge``)."""
    try:
        obj = importlib.import_module(module)
        for name in (klass or "").split(".")[:1] if klass else []:
            obj = getattr(obj, name)
    except (ImportError, AttributeError):
        return None
    return getattr(obj, "__module__", None) if klass else None


def _find(path: str, module: str | None, klass: str | None) -> bool:
    """Whether ``path`` (as written in a reference, relative to ``module`` and ``klass``
    the way Python's domain resolves it) names an object that exists in the code."""
    path = path.lstrip("~.")
    tries = [path]
    if module:
        tries[:0] = ([f"{module}.{klass}.{path}"] if klass else []) + [f"{module}.{path}"]
        home = _home(module, klass)  # where a class shown under a package is defined
        if home:
            tries.append(f"{home}.{path}")
    for dotted in tries:
        parts = dotted.split(".")
        for cut in range(len(parts), 0, -1):
            try:
                obj = importlib.import_module(".".join(parts[:cut]))
            except ImportError:
                continue
            try:
                for name in parts[cut:]:
                    obj = getattr(obj, name)
            except AttributeError:
                break
            return True
    return False


def _internal_reference(app: Any, env: Any, node: Any, contnode: Any) -> Any:
    """A reference to one of Kernel Lab's own objects that this reference leaves out (a
    helper, an internal module) is shown as code, unlinked; a reference to an object that
    does not exist (a typo, a renamed or removed name) stays a warning, so -W fails."""
    if node.get("refdomain") != "py":
        return None
    module, klass = node.get("py:module"), node.get("py:class")
    target = node.get("reftarget", "")
    ours = (module or "").startswith("kernel_lab") or target.startswith("kernel_lab")
    if ours and _find(target, module, klass):
        return contnode
    return None


def setup(app: Any) -> None:
    app.connect("autodoc-skip-member", _skip_member)
    app.connect("missing-reference", _internal_reference)
