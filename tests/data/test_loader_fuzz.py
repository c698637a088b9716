"""Loaders never crash: every truncation and bit flip of a valid file of each format
either loads or ends in a DataError that names the file (the CLI's exit 2)."""

from __future__ import annotations

import gzip
import io
import zipfile

import numpy as np
import pytest

from kernel_lab.cli import main
from kernel_lab.core.errors import DataError, KernelLabError
from kernel_lab.data.source import DataSource
from tests.data.filebytes import npy_bytes, npz_bytes

RNG = np.random.default_rng(0)
M = np.round(RNG.normal(size=(12, 4)), 3)


def _text(delim: str) -> bytes:
    head = delim.join(["a", "b", "c", "y"])
    return ("\n".join([head] + [delim.join(f"{v:g}" for v in row) for row in M]) + "\n").encode()


def _zipped(raw: bytes) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as z:
        z.writestr(zipfile.ZipInfo("data.csv", date_time=(2020, 1, 1, 0, 0, 0)), raw,
                   compress_type=zipfile.ZIP_DEFLATED)
    return buf.getvalue()


def _xlsx() -> bytes:
    """A workbook written by openpyxl, its timestamps fixed (the same bytes every run)."""
    import datetime

    from openpyxl import Workbook

    book = Workbook()
    when = datetime.datetime(2020, 1, 1)
    book.properties.created = book.properties.modified = when
    book.active.append(["a", "b", "c", "y"])
    for row in M:
        book.active.append([float(v) for v in row])
    buf = io.BytesIO()
    book.save(buf)
    return buf.getvalue()


def _fixed_header(raw: bytes) -> bytes:
    """A MAT file's header text holds its creation time: fix it, for the same bytes in
    every run."""
    return b"MATLAB 5.0 MAT-file, fuzz fixture".ljust(116) + raw[116:]


def _mat(compress: bool) -> bytes:
    import io

    import scipy.io

    buf = io.BytesIO()
    scipy.io.savemat(buf, {"X": M[:, :3], "y": M[:, 3], "c": np.array([[1.0, 2.0]])},
                     do_compression=compress)
    return _fixed_header(buf.getvalue())


FIXTURES = {
    "data.csv": _text(","),
    "data.tsv": _text("\t"),
    "data.csv.gz": gzip.compress(_text(","), mtime=0),
    "data.zip": _zipped(_text(",")),
    "data.xlsx": _xlsx(),
    "data.npy": npy_bytes(M),
    "data.npz": npz_bytes(X=M[:, :3], y=M[:, 3]),
    "data.mat": _mat(False),
    "packed.mat": _mat(True),
    "data.svm": "".join(f"{r[3]:g} " + " ".join(f"{j + 1}:{v:g}" for j, v in enumerate(r[:3]))
                        + "\n" for r in M).encode(),
    "data.arff": ("@relation t\n" + "".join(f"@attribute {c} numeric\n" for c in "abcy")
                  + "@data\n" + "".join(",".join(f"{v:g}" for v in r) + "\n" for r in M)
                  ).encode(),
}


def _cases(raw: bytes) -> list[bytes]:
    """Deterministic damage: truncations at 24 offsets, one flipped bit at 48 offsets."""
    n = len(raw)
    cuts = sorted({int(k) for k in np.linspace(0, n - 1, 24)})
    flips = sorted({int(k) for k in np.linspace(0, n - 1, 48)})
    out = [raw[:k] for k in cuts]
    for i, k in enumerate(flips):
        b = bytearray(raw)
        b[k] ^= 1 << (i % 8)
        out.append(bytes(b))
    return out


@pytest.mark.parametrize("name", sorted(FIXTURES))
@pytest.mark.filterwarnings("ignore:overflow encountered")  # a flipped exponent: 1e300
def test_damaged_files_load_or_say_which_file(tmp_path, name):
    path = tmp_path / name
    path.write_bytes(FIXTURES[name])
    DataSource.from_spec(str(path)).load()  # the intact file loads
    outcomes = {"loaded": 0, "refused": 0}
    for i, raw in enumerate(_cases(FIXTURES[name])):
        path.write_bytes(raw)
        try:
            DataSource.from_spec(str(path), {"test_fraction": 0.25}).load()
        except DataError as exc:
            assert name in str(exc), (i, str(exc))
            outcomes["refused"] += 1
        except KernelLabError as exc:  # e.g. a parameter check: still a clear message
            assert str(exc), i
            outcomes["refused"] += 1
        else:
            outcomes["loaded"] += 1
    assert outcomes["refused"] > 0 and sum(outcomes.values()) == len(_cases(FIXTURES[name]))


def test_garbage_mat_body_exits_2_naming_the_file(tmp_path, capsys):
    raw = bytearray(FIXTURES["data.mat"])
    raw[128:] = bytes((37 * i) % 256 for i in range(len(raw) - 128))  # header kept
    path = tmp_path / "broken.mat"
    path.write_bytes(bytes(raw))
    code = main(["run", "krr-path", "--data", str(path), "--out", str(tmp_path / "o"), "-q"])
    err = capsys.readouterr().err
    assert code == 2 and "broken.mat" in err and "Traceback" not in err, err


def test_too_few_rows_names_the_file_in_the_singular(tmp_path):
    path = tmp_path / "one.csv"
    path.write_text("a,y\n1,2\n")
    with pytest.raises(DataError, match=r"one\.csv: only 1 row\b"):
        DataSource.from_spec(str(path)).load()
