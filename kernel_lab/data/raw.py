"""The bytes of a data file: what they are (magic numbers), their text (UTF-8, or
Windows-1252 with a note), and the table inside a ``.gz``, ``.bz2`` or ``.zip`` file, its
expanded size capped so that a decompression bomb stops with a message, not the machine."""

from __future__ import annotations

import re
from collections.abc import Collection
from pathlib import Path
from typing import Any

from kernel_lab.core.errors import DataError

_MAGIC = [
    (b"\x93NUMPY", "a NumPy .npy array"),
    (b"PK\x03\x04", "a zip archive (for example a NumPy .npz file or a spreadsheet)"),
    (b"MATLAB 5.0", "a MATLAB .mat file"),
    (b"\x89HDF", "an HDF5 file (for example a MATLAB v7.3 .mat file)"),
    (b"PAR1", "an Apache Parquet file"),
    (b"%PDF", "a PDF document"),
    (b"\x89PNG", "a PNG image"),
    (b"\xff\xd8\xff", "a JPEG image"),
    (b"\x1f\x8b", "a gzip archive"),
]
#: Compressed text tables, by their last extension.
COMPRESSED = {".gz": "gzip", ".bz2": "bzip2", ".zip": "zip"}
#: A compressed table may expand to at most this many bytes.
MAX_EXPANDED = 256 * 2**20
#: Control characters no text table holds (tab, line and form feeds are fine).
_CONTROL = re.compile(r"[\x00-\x08\x0e-\x1f\x7f]")


def sniff_kind(head: bytes) -> str | None:
    """A description of a binary format recognised from the first bytes, or None."""
    for magic, what in _MAGIC:
        if head.startswith(magic):
            return what
    return None


def expect_magic(path: Path, raw: bytes, magic: bytes, expected: str) -> None:
    """Refuse bytes that do not start with ``magic``, saying what they are instead."""
    if raw.startswith(magic):
        return
    found = sniff_kind(raw[:16])
    if found is None:
        found = "text" if b"\x00" not in raw[:4096] else "unrecognised binary data"
    raise DataError(f"this is {found}, not {expected}",
                    "choose the right file, or rename it to its real extension", path=path)


def read_head(path: Path, size: int = 4096) -> bytes:
    """The first ``size`` bytes of the file."""
    with open(path, "rb") as fh:
        return fh.read(size)


def decode_text(path: Path, raw: bytes, expected: str) -> tuple[str, str | None]:
    """The text of ``raw`` and a note when it was not UTF-8.

    UTF-8 (with or without a byte-order mark) is read as such; other bytes are read as
    Windows-1252 (Latin-1 with the printable 0x80–0x9f of Windows), which is what a
    spreadsheet saves as "CSV" on Windows, and a note says so. Bytes that are neither —
    UTF-16, binary data, a file marked UTF-8 by its byte-order mark that is not — are a
    :class:`DataError`.
    """
    if raw.startswith((b"\xff\xfe", b"\xfe\xff")):
        raise DataError(f"this is UTF-16 text, not {expected} in UTF-8",
                        "save the file again with UTF-8 encoding (e.g. 'CSV UTF-8' in a "
                        "spreadsheet program)", path=path)
    what = sniff_kind(raw[:16])
    if what is not None or b"\x00" in raw[:65536]:
        found = what or "binary data (it contains NUL bytes)"
        raise DataError(f"this is {found}, not {expected}",
                        "choose the right file, or rename it to its real extension", path=path)
    bom = raw.startswith(b"\xef\xbb\xbf")
    body = raw[3:] if bom else raw
    try:
        return body.decode("utf-8"), None
    except UnicodeDecodeError as exc:
        before = body[: exc.start]
        line = len(before.replace(b"\r\n", b"\n").replace(b"\r", b"\n").split(b"\n"))
        error = DataError(
            f"byte {body[exc.start]:#04x} is not valid UTF-8 text",
            f"this does not look like {expected}; if it is, save it with UTF-8 encoding",
            path=path, line=line)
        bad = body[exc.start]
    if bom:  # marked as UTF-8, and it is not
        raise error
    try:
        text = body.decode("cp1252")
    except UnicodeDecodeError:  # bytes Windows-1252 leaves undefined: not that either
        raise error from None
    if _CONTROL.search(text) is not None:  # control characters: binary, not text
        raise error
    return text, (f"read as Windows-1252 (Latin-1) text: it is not UTF-8 (byte {bad:#04x} "
                  f"on line {error.line}); save it as UTF-8 to be sure of its accents")


def expand(path: Path, suffixes: Collection[str]) -> tuple[bytes, str | None]:
    """The bytes of the table in a ``.gz``, ``.bz2`` or ``.zip`` file, and a note naming
    the member read from a zip archive. A zip archive must hold exactly one file with one
    of ``suffixes``; the expanded bytes may not exceed :data:`MAX_EXPANDED`."""
    import bz2
    import gzip
    import zipfile
    import zlib

    kind = COMPRESSED[path.suffix.lower()]
    note = None
    try:
        if kind == "zip":
            with zipfile.ZipFile(path) as archive:
                table = _zip_table(archive, path, suffixes)
                with archive.open(table) as fh:
                    raw = _capped(fh, path, kind)
                note = f"read {table.filename!r} from the zip archive"
        else:
            with (gzip.open if kind == "gzip" else bz2.open)(path, "rb") as fh:
                raw = _capped(fh, path, kind)
    except DataError:
        raise
    except (OSError, EOFError, zlib.error, zipfile.BadZipFile, NotImplementedError,
            RuntimeError, ValueError) as exc:
        detail = " ".join(str(exc).split())[:120]
        raise DataError(f"the {kind} file cannot be decompressed: it is damaged or not "
                        f"{kind} ({detail})", f"compress the table again with {kind}, or "
                        "load the uncompressed file", path=path) from None
    return raw, note


def _zip_table(archive: Any, path: Path, suffixes: Collection[str]) -> Any:
    """The one table member of a zip archive (its ZipInfo), or a DataError saying why
    there is none to read."""
    files = [i for i in archive.infolist()
             if not i.is_dir() and not i.filename.startswith("__MACOSX/")]
    tables = [i for i in files if Path(i.filename).suffix.lower() in suffixes]
    shown = ", ".join(i.filename for i in (tables or files)[:6]) or "nothing"
    if not tables:
        raise DataError(f"the zip archive holds no text table (it has: {shown})",
                        "put one .csv, .tsv or .txt table in it", path=path)
    if len(tables) > 1:
        raise DataError(f"the zip archive holds {len(tables)} tables ({shown}), "
                        "and which one to read is not clear",
                        "keep one table in the archive, or extract the one to load",
                        path=path)
    return tables[0]


def text_head(path: Path, suffixes: Collection[str], size: int = 1 << 16) -> str:
    """At most ``size`` bytes from the start of a text table — inside its ``.gz``, ``.bz2``
    or ``.zip`` file when it is compressed (never more is expanded) — as text: UTF-8, or
    Windows-1252 as :func:`decode_text` reads it. Whole lines only when more follows. For
    a preview: errors are the caller's to ignore (the load says what is wrong)."""
    kind = COMPRESSED.get(path.suffix.lower())
    if kind == "zip":
        import zipfile

        with zipfile.ZipFile(path) as archive, \
                archive.open(_zip_table(archive, path, suffixes)) as fh:
            raw = fh.read(size)
    elif kind is not None:
        import bz2
        import gzip

        with (gzip.open if kind == "gzip" else bz2.open)(path, "rb") as fh:
            raw = fh.read(size)
    else:
        raw = read_head(path, size)
    more = len(raw) == size
    if more:  # a line cut at the end could also cut a character: keep whole lines
        raw = raw[: raw.rfind(b"\n") + 1]
    body = raw[3:] if raw.startswith(b"\xef\xbb\xbf") else raw
    try:
        return body.decode("utf-8")
    except UnicodeDecodeError:
        return body.decode("cp1252", errors="replace")


def _capped(fh: object, path: Path, kind: str) -> bytes:
    chunks: list[bytes] = []
    total = 0
    while chunk := fh.read(1 << 24):  # type: ignore[attr-defined]
        total += len(chunk)
        if total > MAX_EXPANDED:
            raise DataError(f"the {kind} file expands to more than "
                            f"{MAX_EXPANDED / 2**20:,.0f} MB",
                            "decompress it yourself and load the table file (or use a "
                            "smaller one)", path=path)
        chunks.append(chunk)
    return b"".join(chunks)
