"""Teaching presets: sessions shipped with Kernel Lab (``kernel_lab/resources/presets``),
each with a title and a "what you will see" text. Presets are sessions, read by the same
checked loader."""

from __future__ import annotations

import json
from importlib import resources

from kernel_lab.core.errors import KernelLabError
from kernel_lab.engine.session import Session, session_from_dict


def _folder():  # a Traversable: works installed, editable and frozen
    return resources.files("kernel_lab").joinpath("resources", "presets")


def preset_names() -> list[str]:
    """Names of the bundled presets, sorted."""
    return sorted(p.name[:-5] for p in _folder().iterdir() if p.name.endswith(".json"))


def load_preset(name: str) -> Session:
    """The preset ``name`` as a checked :class:`Session`."""
    names = preset_names()
    if name not in names:
        import difflib

        close = difflib.get_close_matches(name, names, n=1)
        hint = f"; did you mean {close[0]!r}?" if close else ""
        raise KernelLabError(f"unknown preset {name!r}{hint} (presets: {', '.join(names)})")
    doc = json.loads(_folder().joinpath(f"{name}.json").read_text(encoding="utf-8"))
    return session_from_dict(doc, f"preset {name}")
