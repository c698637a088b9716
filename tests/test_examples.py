"""Every script in ``examples/`` runs at its small size and prints its results.

Each example runs as a user runs it — ``python examples/NAME.py`` in a fresh process, from
another working folder — with ``KERNEL_LAB_EXAMPLES_SMALL=1``. The test checks that it exits
with 0 and prints the lines that carry its results (the numbers themselves are each
method's own; the tests of the methods check those), and the claims some examples print
about their numbers. The Dask example starts a 2-worker local cluster: 4.8 s on a quiet
two-core machine, as quick as the other cluster tests of the quick suite.
"""

from __future__ import annotations

import ast
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.sources import parse

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "examples"
NUMBER = r"[-+]?(?:\d+\.?\d*|\.\d+)(?:e[-+]?\d+)?"

#: Per example: (regular expression of a result line, how many times it must appear: a
#: count, or the least and the most).
RESULTS: dict[str, list[tuple[str, int | tuple[int, int]]]] = {
    "krr_path_on_your_csv.py": [
        (r"^  - one-hot encoded text column 'district'", 1),
        (rf"^\s*{NUMBER}\s+{NUMBER}\s+{NUMBER}(  <- best)?$", (4, 7)),  # best λ ± 3
        (rf"^\s*{NUMBER}\s+{NUMBER}\s+{NUMBER}  <- best$", 1),
        (rf"^best λ = {NUMBER}: test MSE {NUMBER} \(the target's variance", 1),
    ],
    "nystrom_rls_vs_uniform.py": [
        (rf"^exact KRR: test MSE {NUMBER}$", 1),
        (rf"^\s*\d+  recursive-rls\s+{NUMBER}\s+{NUMBER}$", 3),
        (rf"^\s*\d+  uniform\s+{NUMBER}\s+{NUMBER}$", 3),
    ],
    "ckrr_limit_vs_monte_carlo.py": [
        (rf"^\s*{NUMBER}\s+{NUMBER}\s+{NUMBER} ± \s*{NUMBER}$", 5),
        (rf"^largest relative gap between the limit and the Monte Carlo mean: {NUMBER}%$", 1),
    ],
    "gfc_vs_random_features.py": [
        (rf"^GFC: \d+ learned features, test MSE {NUMBER}$", 1),
        (rf"^(gaussian|laplace|cauchy)\s+\d+\s+{NUMBER}$", 6),
    ],
    "export_and_load_a_model.py": [
        (rf"^KRR on \d+ rows of houses.csv: test MSE {NUMBER}$", 1),
        (r"^saved houses.skops \([\d,]+ bytes\)$", 1),
        (r"^loaded: Kernel Lab [^,]+, models \['krr'\], reading the columns area \(number\)", 1),
        (rf"-> price\s+{NUMBER}$", 2),
    ],
    "dsg_on_parquet_cluster.py": [
        (r"^wrote 20,000 rows in 4 Parquet files", 1),
        (r"training and [\d,]+ test rows, kept in their partitions, on 2 workers$", 1),
        (rf"^DSG, 300 iterations of 64 rows: test MSE {NUMBER}", 1),
        (rf"^the same rows in memory: the two models' predictions differ by at most "
         rf"{NUMBER}$", 1),
    ],
}

#: Per example: what its printed numbers must show, beyond their presence.
CLAIMS: dict[str, list[tuple[str, float]]] = {
    # the same rows, on a cluster and in memory, give the same model (to rounding)
    "dsg_on_parquet_cluster.py": [(rf"predictions differ by at most ({NUMBER})$", 1e-8)],
    # the fitted model and the loaded pipeline on the file's rows agree (issue 44: 1e-12)
    "export_and_load_a_model.py": [(rf"fitted model's predictions ({NUMBER})$", 1e-12)],
}



def _scripts() -> list[str]:
    return sorted(p.name for p in EXAMPLES.glob("*.py"))


def test_every_example_has_its_results_declared():
    assert _scripts(), "no examples found"
    assert set(_scripts()) == set(RESULTS)


@pytest.mark.parametrize("name", _scripts())
def test_example_has_a_gallery_title_and_paragraph(name):
    """Sphinx-Gallery's format: the module docstring starts with a title underlined by
    ``=`` and a paragraph of text."""
    doc = ast.get_docstring(parse((EXAMPLES / name).read_text(encoding="utf-8")))
    assert doc, f"{name} has no docstring"
    lines = doc.splitlines()
    assert len(lines) > 3 and lines[1] == "=" * len(lines[0]) and lines[0].strip()
    assert lines[2] == "" and lines[3].strip(), f"{name}: no paragraph under the title"


@pytest.mark.parametrize("name", _scripts())
def test_example_runs_at_small_size(name, tmp_path):
    env = {**os.environ, "KERNEL_LAB_EXAMPLES_SMALL": "1", "PYTHONPATH": str(ROOT),
           "QT_QPA_PLATFORM": "offscreen"}
    done = subprocess.run([sys.executable, str(EXAMPLES / name)], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, f"{name} failed:\n{done.stdout}\n{done.stderr[-3000:]}"
    lines = done.stdout.splitlines()
    for pattern, count in RESULTS[name]:
        found = [line for line in lines if re.search(pattern, line)]
        low, high = count if isinstance(count, tuple) else (count, count)
        assert low <= len(found) <= high, (
            f"{name}: expected {count} line(s) matching {pattern!r}, found {len(found)} "
            f"in:\n{done.stdout}")
    for pattern, most in CLAIMS.get(name, []):
        values = [float(m.group(1)) for line in lines if (m := re.search(pattern, line))]
        assert values and max(values) <= most, f"{name}: {values} above {most}:\n{done.stdout}"
