"""``kernel-lab report``: without ``--out`` the page goes where the user looks — beside what
it reports on — never into whatever folder the command happened to start in."""

from __future__ import annotations

import json

import pytest

from kernel_lab.cli import main


@pytest.fixture(scope="module")
def run_folder(tmp_path_factory):
    out = tmp_path_factory.mktemp("runs") / "krr"
    assert main(["run", "krr-path", "--data", "gaussian:n=60,p=3", "--set", "n_lams=4",
                 "--out", str(out), "--no-plot", "-q"]) == 0
    return out


def _is_report(path, experiment="krr-path"):
    text = path.read_text(encoding="utf-8")
    return text.startswith("<!DOCTYPE html>") and "data:image/png;base64," in text \
        and experiment in text


def test_report_of_a_run_folder_goes_into_that_folder(run_folder, tmp_path, monkeypatch,
                                                      capsys):
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    assert main(["report", str(run_folder), "-q"]) == 0
    page = run_folder / "report.html"
    assert capsys.readouterr().out.strip() == str(page)  # the path it wrote, to click on
    assert _is_report(page)
    assert list(elsewhere.iterdir()) == []  # nothing in the working folder


def test_report_of_a_result_json_goes_beside_it(run_folder, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (run_folder / "report.html").unlink(missing_ok=True)
    assert main(["report", str(run_folder / "result.json"), "-q"]) == 0
    assert _is_report(run_folder / "report.html")
    assert not (tmp_path / "report.html").exists()


def test_out_still_decides(run_folder, tmp_path):
    page = tmp_path / "lecture" / "week3.html"
    page.parent.mkdir()
    before = (run_folder / "report.html").stat().st_mtime_ns \
        if (run_folder / "report.html").exists() else None
    assert main(["report", str(run_folder), "--out", str(page), "-q"]) == 0
    assert _is_report(page)
    after = (run_folder / "report.html").stat().st_mtime_ns \
        if (run_folder / "report.html").exists() else None
    assert after == before  # the run folder's page untouched


def test_report_of_a_session_file_goes_beside_it_under_its_name(tmp_path, monkeypatch):
    sessions = tmp_path / "sessions"
    sessions.mkdir()
    session = sessions / "week3.json"
    session.write_text(json.dumps({
        "format": "kernel-lab-session", "version": 1, "experiment": "krr-path",
        "params": {"n_lams": 4}, "data": {"spec": "gaussian:n=60,p=3", "options": {}}}))
    monkeypatch.chdir(tmp_path)
    assert main(["report", str(session), "-q"]) == 0
    assert _is_report(sessions / "week3.html")
    assert sorted(p.name for p in sessions.iterdir()) == ["week3.html", "week3.json"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["sessions"]


def test_an_unwritable_report_names_the_file_and_the_option(run_folder, tmp_path, capsys):
    target = tmp_path / "no-such-folder" / "r.html"
    assert main(["report", str(run_folder), "--out", str(target), "-q"]) == 2
    err = capsys.readouterr().err
    assert str(target) in err and "--out" in err and "Traceback" not in err
