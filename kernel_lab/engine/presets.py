"""Teaching presets: sessions shipped with Kernel Lab (``kernel_lab/resources/presets``),
each with a title and a "what you will see" text. Presets are sessions, read by the same
checked loader: the lab's in ``presets/``, the Playground's (a Playground state, no
experiment) in ``presets/playground/``."""

from __future__ import annotations

import json
from importlib import resources

from kernel_lab.core.errors import KernelLabError
from kernel_lab.engine.session import Session, session_from_dict


def _folder(*sub: str):  # a Traversable: works installed, editable and frozen
    return resources.files("kernel_lab").joinpath("resources", "presets", *sub)


def _names(*sub: str) -> list[str]:
    return sorted(p.name[:-5] for p in _folder(*sub).iterdir() if p.name.endswith(".json"))


def preset_names() -> list[str]:
    """Names of the bundled presets of the lab, sorted."""
    return _names()


def playground_preset_names() -> list[str]:
    """Names of the bundled presets of the Playground, sorted."""
    return _names("playground")


def load_preset(name: str) -> Session:
    """The preset ``name`` (the lab's or the Playground's) as a checked :class:`Session`."""
    lab, playground = preset_names(), playground_preset_names()
    if name not in lab and name not in playground:
        import difflib

        names = [*lab, *playground]
        close = difflib.get_close_matches(name, names, n=1)
        hint = f"; did you mean {close[0]!r}?" if close else ""
        raise KernelLabError(f"unknown preset {name!r}{hint} (presets: {', '.join(names)})")
    folder = _folder() if name in lab else _folder("playground")
    doc = json.loads(folder.joinpath(f"{name}.json").read_text(encoding="utf-8"))
    return session_from_dict(doc, f"preset {name}")
