"""The page the benchmarks write (``perfdoc``): replacing one benchmark's section keeps the
others, the page parses back into the sections it was made of, a hand-damaged page is
refused rather than overwritten, and the page is replaced by a rename, never written in
place. Nothing here is timed."""

from __future__ import annotations

import io
import os
import sys
from pathlib import Path

import perfdoc  # this folder, first on the path (the benchmarks import it the same way)
import pytest
from perfdoc import Figure, Recording, render, replace_section, split_sections

BENCHES = ["bench_a.py", "bench_b.py", "bench_c.py"]


def _body(name: str, figure: str) -> str:
    return f"## {name}\n\nA benchmark.\n\n| figure | measured |\n|---|---|\n| {figure} |"


def test_replacing_one_section_keeps_the_others(tmp_path: Path):
    page = tmp_path / "docs" / "performance.md"
    replace_section(page, "bench_a.py", _body("bench_a.py", "a1"), BENCHES)
    replace_section(page, "bench_b.py", _body("bench_b.py", "b1"), BENCHES)
    before = split_sections(page.read_text(encoding="utf-8"))
    replace_section(page, "bench_a.py", _body("bench_a.py", "a2"), BENCHES)
    after = split_sections(page.read_text(encoding="utf-8"))
    assert after["bench_a.py"] == _body("bench_a.py", "a2")
    assert after["bench_b.py"] == before["bench_b.py"] == _body("bench_b.py", "b1")
    assert after["bench_c.py"] == before["bench_c.py"] == perfdoc.placeholder("bench_c.py")
    assert set(after) == set(BENCHES)


def test_the_page_parses_into_what_it_was_made_of():
    sections = {"bench_b.py": _body("bench_b.py", "b"), "bench_a.py": _body("bench_a.py", "a")}
    text = render(sections, BENCHES)
    parsed = split_sections(text)
    assert parsed == {**sections, "bench_c.py": perfdoc.placeholder("bench_c.py")}
    # sections in name order, each once, and the header names the ones never run
    assert text.index("<!-- begin bench_a.py -->") < text.index("<!-- begin bench_b.py -->")
    assert text.count("<!-- begin bench_a.py -->") == 1
    assert "No recorded run yet: `bench_c.py`." in text
    assert render(parsed, BENCHES) == text  # writing what was read changes nothing


@pytest.mark.parametrize("damage", [
    "<!-- begin bench_a.py -->\nx\n",  # no end
    "<!-- end bench_a.py -->\n",  # no beginning
    "<!-- begin bench_a.py -->\n<!-- begin bench_b.py -->\n<!-- end bench_b.py -->\n"
    "<!-- end bench_a.py -->\n",  # nested
    "<!-- begin bench_a.py -->\n<!-- end bench_a.py -->\n" * 2,  # twice
])
def test_a_damaged_page_is_refused_and_left_alone(tmp_path: Path, damage: str):
    page = tmp_path / "performance.md"
    page.write_text("# Performance\n\n" + damage, encoding="utf-8")
    with pytest.raises(ValueError, match="restore the page from git"):
        replace_section(page, "bench_c.py", _body("bench_c.py", "c"), BENCHES)
    assert page.read_text(encoding="utf-8") == "# Performance\n\n" + damage


def test_the_page_is_written_to_a_temporary_file_and_renamed(tmp_path: Path, monkeypatch):
    page = tmp_path / "performance.md"
    replace_section(page, "bench_a.py", _body("bench_a.py", "old"), BENCHES)
    old_text, old_inode = page.read_text(encoding="utf-8"), page.stat().st_ino
    renames: list[tuple[str, str, str]] = []
    real_replace = os.replace

    def replace(src, dst):
        # at the moment of the rename the page is still the old one, and the new text is
        # complete in a file of the same folder
        assert page.read_text(encoding="utf-8") == old_text
        renames.append((str(src), str(dst), Path(src).read_text(encoding="utf-8")))
        real_replace(src, dst)

    monkeypatch.setattr(perfdoc.os, "replace", replace)
    replace_section(page, "bench_a.py", _body("bench_a.py", "new"), BENCHES)
    assert len(renames) == 1
    src, dst, text = renames[0]
    assert Path(dst) == page and Path(src).parent == page.parent
    assert text == page.read_text(encoding="utf-8")
    assert "| new |" in text
    assert page.stat().st_ino != old_inode  # a new file, not the old one rewritten
    assert sorted(p.name for p in tmp_path.iterdir()) == ["performance.md"]  # no leftovers


def test_a_failed_write_leaves_the_old_page_and_no_temporary_file(tmp_path: Path,
                                                                  monkeypatch):
    page = tmp_path / "performance.md"
    replace_section(page, "bench_a.py", _body("bench_a.py", "old"), BENCHES)
    old_text = page.read_text(encoding="utf-8")

    def fail(src, dst):
        raise OSError("disk full")

    monkeypatch.setattr(perfdoc.os, "replace", fail)
    with pytest.raises(OSError, match="disk full"):
        replace_section(page, "bench_b.py", _body("bench_b.py", "b"), BENCHES)
    assert page.read_text(encoding="utf-8") == old_text
    assert sorted(p.name for p in tmp_path.iterdir()) == ["performance.md"]


@pytest.mark.parametrize(("figure", "verdict"), [
    (Figure("ratio", 1.2, "×", 1.3), "met"),
    (Figure("ratio", 1.4, "×", 1.3), "**missed**"),
    (Figure("rate", 29.0, "fps", 30.0, at_most=False), "**missed**"),
    (Figure("rate", 31.0, "fps", 30.0, at_most=False), "met"),
    (Figure("time", float("nan"), "s", 60.0), "**missed**"),
    (Figure("time", 3.0, "s"), "information"),
])
def test_a_figure_is_judged_against_its_target(figure: Figure, verdict: str):
    assert figure.row().endswith(f"| {verdict} |")


def test_the_run_line_counts_the_targets():
    met, missed = Figure("a", 1.0, "×", 2.0), Figure("b", 3.0, "×", 2.0)
    assert perfdoc._verdict([]) == "none: every figure is for information"
    assert perfdoc._verdict([met, met]) == "2 of 2 met"
    assert perfdoc._verdict([met, missed]) == "1 of 2 met: missed b"
    assert perfdoc._verdict([met] + [missed] * 4) == "1 of 5 met; 4 missed (the table marks them)"


def test_a_run_records_its_command_figures_and_output(tmp_path: Path, monkeypatch):
    """A benchmark's run, as a benchmark makes it (``start`` … ``save``), with the probe
    replaced by a fixed machine: the section holds the command (with the environment that
    changes the figures), the figures with their scaled targets, and what was printed."""

    class Probe:
        eigh_ms, scale = 374.0, 2.0

        def line(self) -> str:
            return "machine probe: eigh 1000 × 1000 in 374 ms"

        def latency(self, target_ms: float, kind: str = "gesture") -> float:
            return target_ms * self.scale

    def probe():
        print(Probe().line())
        return Probe()

    out = io.StringIO()
    for name in perfdoc.ENVIRONMENT:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("OPENBLAS_CORETYPE", "SkylakeX")  # recorded: it changes the figures
    monkeypatch.setattr(perfdoc, "probe", probe)
    monkeypatch.setattr(sys, "stdout", out)
    monkeypatch.setattr(sys, "argv", ["bench_a.py", "--n", "300"])
    monkeypatch.setattr(perfdoc, "all_benches", lambda: BENCHES)
    rec: Recording = perfdoc.start("/somewhere/bench_a.py",
                                   "Benchmark: a test\n    over two lines.\n\nMore.")
    print("measured something")
    rec.latency("λ move, p95", 60.0, 50.0)
    rec.figure("ratio", 1.4, "×", 1.3)
    page = tmp_path / "performance.md"
    rec.save(page)
    assert sys.stdout is out  # standard output given back
    section = split_sections(page.read_text(encoding="utf-8"))["bench_a.py"]
    assert "\n\nBenchmark: a test over two lines.\n\n" in section
    assert "`OPENBLAS_CORETYPE=SkylakeX python tests/benchmarks/bench_a.py --n 300`" in section
    assert "machine probe: eigh 1000 × 1000 in 374 ms" in section
    assert "| λ move, p95 | 60.0 ms | ≤ 100 ms (reference machine: 50.0 ms) | met |" in section
    assert "| ratio | 1.40 × | ≤ 1.30 × | **missed** |" in section
    assert "1 of 2 met: missed ratio" in section
    assert "measured something" in section.split("What it printed", 1)[1]
    assert "measured something" in out.getvalue()  # and printed as before


def test_no_record_writes_nothing(tmp_path: Path, monkeypatch):
    class Probe:
        eigh_ms, scale = 187.0, 1.0

        def line(self) -> str:
            return "probe"

    monkeypatch.setattr(perfdoc, "probe", Probe)
    monkeypatch.setattr(sys, "argv", ["bench_a.py", "--no-record", "--n", "3"])
    rec = perfdoc.start("bench_a.py", None)
    assert sys.argv == ["bench_a.py", "--n", "3"]  # the benchmark's own parser never sees it
    rec.save(tmp_path / "performance.md")
    assert not (tmp_path / "performance.md").exists()


def test_the_committed_page_has_a_section_for_every_benchmark():
    """``docs/performance.md`` as committed: it parses, and every benchmark of this folder has
    its section (a recorded run or the placeholder) — no section of a benchmark that is gone."""
    text = perfdoc.DOC.read_text(encoding="utf-8")
    sections = split_sections(text)
    assert sorted(sections) == perfdoc.all_benches(), (
        "docs/performance.md and tests/benchmarks/bench_*.py disagree: run a benchmark "
        "(it rewrites the page with a section for each)")
    for name, body in sections.items():
        assert body.startswith(f"## {name}\n"), name


def test_the_readme_summarises_and_the_docs_link_to_the_page():
    """The figures live in one place: the README's speed section is a five-line summary that
    links to the page, and the two documents that discuss speed link to it too."""
    readme = (perfdoc.ROOT / "README.md").read_text(encoding="utf-8")
    speed = readme.split("## Speed on a two-core laptop\n", 1)[1].split("\n## ", 1)[0]
    lines = [line for line in speed.strip().splitlines() if line.strip()]
    assert len(lines) == 5 and "(docs/performance.md)" in speed
    assert "|---" not in speed  # no table of figures
    for doc in ("scale.md", "architecture.md"):
        assert "(performance.md)" in (perfdoc.DOC.parent / doc).read_text(encoding="utf-8")
