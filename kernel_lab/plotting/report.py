"""A one-file HTML report of a run: every plot embedded as a PNG, the parameter, result and
data tables, seed, versions, timings and the experiment's explain text. No external
references (no scripts, fonts or style sheets from the web), so it opens offline and can be
mailed or put in lecture notes as it is."""

from __future__ import annotations

import base64
import html
import json
import os
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

from kernel_lab.core.errors import KernelLabError
from kernel_lab.engine.atomic import write_atomic
from kernel_lab.experiments import get_experiment

_CSS = """
body { font-family: -apple-system, "Segoe UI", Helvetica, Arial, sans-serif; margin: 2em auto;
       max-width: 1050px; color: #222; line-height: 1.45; padding: 0 1em; }
h1 { font-size: 1.6em; margin-bottom: 0.2em; } h2 { font-size: 1.2em; margin-top: 1.6em;
     border-bottom: 1px solid #ddd; padding-bottom: 0.2em; }
.sub { color: #666; margin-top: 0; }
table { border-collapse: collapse; margin: 0.5em 0; font-size: 0.92em; }
td, th { border: 1px solid #ddd; padding: 3px 8px; text-align: left; vertical-align: top; }
th { background: #f4f4f4; } td.num { text-align: right; font-variant-numeric: tabular-nums; }
figure { margin: 1em 0; } figure img { max-width: 100%; border: 1px solid #eee; }
figcaption { color: #555; font-size: 0.9em; } details { margin: 1em 0; }
.about { background: #f7f9fc; border-left: 4px solid #0072B2; padding: 0.6em 1em; }
footer { color: #777; font-size: 0.85em; margin-top: 2em; }
"""


def _cell(value: Any) -> str:
    if isinstance(value, float):
        return f'<td class="num">{value:.6g}</td>'
    if isinstance(value, int) and not isinstance(value, bool):
        return f'<td class="num">{value}</td>'
    if isinstance(value, list | tuple):  # notes hold commas of their own: "; " then
        value = ("; " if any("," in str(v) for v in value) else ", ").join(map(str, value))
    return f"<td>{html.escape('—' if value is None else str(value))}</td>"


def _table(rows: Mapping[str, Any], head: tuple[str, str]) -> str:
    body = "".join(f"<tr><th>{html.escape(str(k))}</th>{_cell(v)}</tr>" for k, v in rows.items())
    return f"<table><tr><th>{head[0]}</th><th>{head[1]}</th></tr>{body}</table>"


def _columns(doc: Mapping[str, Any]) -> dict[str, np.ndarray]:
    return {k: np.array([np.nan if v is None else v for v in col], dtype=np.float64)
            for k, col in doc.get("table", {}).items()}


def _plot_pngs(doc: Mapping[str, Any], table: dict[str, np.ndarray]) -> list[tuple[str, bytes]]:
    from kernel_lab.plotting.render import render_plots

    exp = get_experiment(doc["experiment"])
    out = []
    colors: dict[str, str] = {}  # one colour per method or kernel across the report
    with tempfile.TemporaryDirectory() as tmp:
        for i, spec in enumerate(exp.plots):
            path = Path(tmp) / f"plot{i}.png"
            render_plots(table, [spec], path, width=900, height_per_plot=460, colors=colors,
                         summaries=doc.get("summaries"))
            out.append((spec.filled(doc.get("summaries")).title, path.read_bytes()))
    return out


def build_report(doc: Mapping[str, Any], *, title: str = "", about: str = "") -> str:
    """The HTML text of a report of the run ``doc`` (a ``result.json`` document)."""
    for key in ("experiment", "params", "table"):
        if key not in doc:
            raise KernelLabError(f"not a Kernel Lab result: the field {key!r} is missing; "
                                 "give a run folder (with result.json) or a session")
    exp = get_experiment(doc["experiment"])
    table = _columns(doc)
    data = doc.get("data", {})
    parts = [f"<h1>{html.escape(title or exp.title)}</h1>",
             f'<p class="sub">{html.escape(exp.name)} on {html.escape(str(data.get("name")))}'
             f" — seed {doc.get('seed')} — {html.escape(str(doc.get('started', '')))}</p>"]
    if about:
        parts.append(f'<div class="about">{html.escape(about)}</div>')
    parts.append(f"<h2>What is plotted</h2><p>{html.escape(exp.description)}</p>")
    parts.append("<h2>Plots</h2>")
    for caption, png in _plot_pngs(doc, table):
        b64 = base64.b64encode(png).decode("ascii")
        parts.append(f'<figure><img alt="{html.escape(caption)}" '
                     f'src="data:image/png;base64,{b64}"><figcaption>'
                     f"{html.escape(caption)}</figcaption></figure>")
    parts.append("<h2>Results</h2>" + _table(doc.get("summaries", {}), ("result", "value")))
    parts.append("<h2>Parameters</h2>" + _table(doc["params"], ("parameter", "value")))
    parts.append("<h2>Data</h2>" + _table(data, ("", "")))
    cols = list(table)
    rows = max((c.size for c in table.values()), default=0)
    head = "".join(f"<th>{html.escape(c)}</th>" for c in cols)
    body = "".join("<tr>" + "".join(
        _cell(float(table[c][i])) if i < table[c].size and np.isfinite(table[c][i])
        else "<td></td>" for c in cols) + "</tr>" for i in range(rows))
    parts.append(f"<details><summary>Result table ({rows} rows × {len(cols)} columns)"
                 f"</summary><table><tr>{head}</tr>{body}</table></details>")
    timings = doc.get("timings", {})
    versions = doc.get("versions", {})
    parts.append("<footer>Timings: " + html.escape(", ".join(
        f"{k} {v}" for k, v in timings.items())) + "<br>Versions: " + html.escape(", ".join(
        f"{k} {v}" for k, v in versions.items())) + "<br>Re-run with the same parameters "
        "and seed to reproduce these numbers exactly.</footer>")
    return ("<!DOCTYPE html><html lang=\"en\"><head><meta charset=\"utf-8\">"
            f"<title>{html.escape(title or exp.title)}</title><style>{_CSS}</style></head>"
            f"<body>{''.join(parts)}</body></html>\n")


def write_report(doc: Mapping[str, Any], path: str | os.PathLike[str], **kw: Any) -> Path:
    return write_atomic(path, build_report(doc, **kw))


def load_result(path: str | os.PathLike[str]) -> dict[str, Any]:
    """A run's ``result.json`` (from its folder or the file itself)."""
    path = Path(path)
    if path.is_dir():
        path = path / "result.json"
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise KernelLabError(f"cannot read {path}: {exc}") from None


def build_playground_report(doc: Mapping[str, Any]) -> str:
    """The HTML text of a report of a Playground run (``kernel-lab run --preset
    playground-…``): the function view, the errors, the parameters and the data."""
    from kernel_lab.plotting.function_view import render_function_view

    for key in ("fit", "params", "points", "data"):
        if key not in doc:
            raise KernelLabError(f"not a Playground result: the field {key!r} is missing")
    title = str(doc.get("title") or f"Playground — {doc['fit']['method']}")
    with tempfile.TemporaryDirectory() as tmp:
        png = render_function_view(doc, Path(tmp) / "view.png", title=title).read_bytes()
    fits = [doc["fit"], *([doc["compare"]] if "compare" in doc else [])]
    results = {f"{f['method']} {k.replace('_', ' ')}": f[k] for f in fits
               for k in ("train_error", "test_error", "n_features", "dof", "seconds")
               if f.get(k) is not None}
    parts = [f"<h1>{html.escape(title)}</h1>",
             f'<p class="sub">the Playground on {html.escape(str(doc["data"].get("dataset")))}'
             f" — seed {doc.get('seed')} — {html.escape(str(doc.get('started', '')))}</p>"]
    if doc.get("about"):
        parts.append(f'<div class="about">{html.escape(str(doc["about"]))}</div>')
    b64 = base64.b64encode(png).decode("ascii")
    parts.append(f'<h2>The fitted function</h2><figure><img alt="function view" '
                 f'src="data:image/png;base64,{b64}"><figcaption>the fit on the view\'s grid, '
                 "train points filled, test points hollow</figcaption></figure>")
    parts.append("<h2>Results</h2>" + _table(results, ("result", "value")))
    parts.append("<h2>Parameters</h2>" + _table({**doc["params"], "steps": doc.get("steps")},
                                                ("parameter", "value")))
    parts.append("<h2>Data</h2>" + _table(doc["data"], ("", "")))
    versions = doc.get("versions", {})
    parts.append("<footer>Versions: " + html.escape(", ".join(
        f"{k} {v}" for k, v in versions.items())) + "</footer>")
    return ("<!DOCTYPE html><html lang=\"en\"><head><meta charset=\"utf-8\">"
            f"<title>{html.escape(title)}</title><style>{_CSS}</style></head>"
            f"<body>{''.join(parts)}</body></html>\n")


def write_playground_report(doc: Mapping[str, Any], path: str | os.PathLike[str]) -> Path:
    return write_atomic(path, build_playground_report(doc))
