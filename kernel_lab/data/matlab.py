"""MATLAB ``.mat`` files (level 4 and 5, read by SciPy): the variables ``X`` and ``y`` (or a
single 2-D array). A level-5 file's structure is checked before SciPy reads it: some
damaged files crash SciPy's C reader, taking the process down."""

from __future__ import annotations

import io
from pathlib import Path

import numpy as np

from kernel_lab.core.errors import DataError
from kernel_lab.data.npy import pick_xy
from kernel_lab.data.raw import expect_magic
from kernel_lab.data.table import Table


def read_mat(path: Path, raw: bytes, target: str | int | None) -> Table:
    if raw.startswith(b"\x89HDF") or b"MATLAB 7.3" in raw[:128]:
        raise DataError("this is a MATLAB v7.3 (HDF5) file, which is not supported",
                        "re-save it in MATLAB with save(..., '-v7')", path=path)
    if not raw.startswith(b"MATLAB 5.0") and not _looks_like_mat4(raw):
        expect_magic(path, raw, b"MATLAB 5.0", "a MATLAB .mat file")
    from scipy.io import loadmat
    from scipy.io.matlab import MatReadError

    if raw.startswith(b"MATLAB 5.0"):
        _check_mat5(raw, path)  # scipy's C reader can crash on inconsistent structures
    try:
        data = loadmat(io.BytesIO(raw))
    except (MatReadError, ValueError, TypeError, OSError) as exc:
        raise DataError(f"the .mat file cannot be read ({exc})",
                        "re-save it with save(..., '-v7')", path=path) from None
    arrays = {k: v for k, v in data.items() if not k.startswith("__")}
    return pick_xy(path, arrays, target, "MAT")


#: Bytes per item of the MAT-file data types (miINT8 … miUINT64, miUTF8 … miUTF32).
_MI_SIZE = {1: 1, 2: 1, 3: 2, 4: 2, 5: 4, 6: 4, 7: 4, 9: 8, 12: 8, 13: 8, 16: 1, 17: 2, 18: 4}
_MI_MATRIX, _MI_COMPRESSED = 14, 15


def _check_mat5(raw: bytes, path: Path) -> None:
    """Walk a level-5 MAT file's elements and refuse one whose sizes do not add up
    (before scipy's reader sees it: some such files crash it, taking the process down).

    Checks every element's extent, and in each array its flags, dimensions, name and
    data: sizes that match the dimensions, an imaginary part when flagged complex, the
    sub-arrays of cells and structs. Compressed elements are inflated and checked alike.
    """
    import zlib

    def bad(why: str) -> DataError:
        return DataError(f"the .mat file is damaged ({why})",
                         "re-save it with save(..., '-v7'), or export the data as CSV",
                         path=path)

    if len(raw) < 128:
        raise bad("shorter than its 128-byte header")
    order = {b"IM": "<", b"MI": ">"}.get(raw[126:128])
    if order is None:
        raise bad("no byte-order mark in the header")

    def tag(buf: bytes, pos: int, end: int) -> tuple[int, int, int, int]:
        """(type, nbytes, data start, next element) of the element at ``pos``."""
        if pos + 8 > end:
            raise bad(f"an element tag at byte {pos} runs past the end")
        typ, nbytes = np.frombuffer(buf, dtype=f"{order}u4", count=2, offset=pos)
        typ, nbytes = int(typ), int(nbytes)
        if typ >> 16:  # small data element: 2-byte size, data in the tag's second half
            nbytes, typ = typ >> 16, typ & 0xFFFF
            if nbytes > 4:
                raise bad(f"a small element at byte {pos} claims {nbytes} bytes")
            return typ, nbytes, pos + 4, pos + 8
        stop = pos + 8 + nbytes
        if stop > end:
            raise bad(f"an element at byte {pos} claims {nbytes} bytes; only "
                      f"{end - pos - 8} remain")
        padded = stop if typ == _MI_COMPRESSED else pos + 8 + (nbytes + 7) // 8 * 8
        return typ, nbytes, pos + 8, min(padded, end)

    def data(buf: bytes, pos: int, end: int, what: str) -> tuple[int, int, int]:
        typ, nbytes, start, nxt = tag(buf, pos, end)
        if typ not in _MI_SIZE or nbytes % _MI_SIZE[typ]:
            raise bad(f"the {what} at byte {pos} has type {typ} and {nbytes} bytes")
        return nbytes // _MI_SIZE[typ], start, nxt

    def matrix(buf: bytes, start: int, end: int, depth: int) -> None:
        if depth > 32:
            raise bad("arrays nested more than 32 deep")
        if start == end:
            return  # an empty array
        count, at, pos = data(buf, start, end, "array flags")
        if count * 4 != 8:
            raise bad(f"array flags at byte {start} are not 8 bytes")
        flags = int(np.frombuffer(buf, dtype=f"{order}u4", count=1, offset=at)[0])
        cls, complex_ = flags & 0xFF, bool(flags & 0x800)
        ndim, at, pos = data(buf, pos, end, "dimensions")
        dims = np.frombuffer(buf, dtype=f"{order}i4", count=ndim, offset=at) if ndim else []
        if ndim < 2 or any(d < 0 for d in dims):
            raise bad(f"an array at byte {start} has dimensions {list(map(int, dims))}")
        size = int(np.prod(np.asarray(dims, dtype=np.float64)))
        if size > len(raw) * 64 and cls not in (1, 2, 3):
            raise bad(f"an array at byte {start} claims {size} elements")
        _, _, pos = data(buf, pos, end, "array name")
        if cls in (4, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15):  # char and numeric
            count, _, pos = data(buf, pos, end, "array data")
            if count != size:
                raise bad(f"an array at byte {start} holds {count} values for "
                          f"{size} = {'×'.join(str(int(d)) for d in dims)}")
            if complex_:
                count, _, pos = data(buf, pos, end, "imaginary part")
                if count != size:
                    raise bad(f"the imaginary part at byte {start} holds {count} values")
        elif cls == 5:  # sparse: row indices, column starts, values (and imaginary)
            for part in ("row indices", "column starts", "values",
                         *(("imaginary part",) if complex_ else ())):
                _, _, pos = data(buf, pos, end, f"sparse {part}")
        elif cls in (1, 2, 3):  # cell, struct, object: sub-arrays
            fields = 1
            if cls == 3:
                _, _, pos = data(buf, pos, end, "class name")
            if cls in (2, 3):
                count, at, pos = data(buf, pos, end, "field name length")
                length = int(np.frombuffer(buf, dtype=f"{order}i4", count=1, offset=at)[0]) \
                    if count else 0
                count, _, pos = data(buf, pos, end, "field names")
                fields = count // length if length > 0 else 0
            for _ in range(size * fields):
                typ, _, sub, pos = tag(buf, pos, end)
                if typ != _MI_MATRIX:
                    raise bad(f"a cell or field at byte {sub - 8} is not an array")
                matrix(buf, sub, pos if pos <= end else end, depth + 1)
        else:
            raise bad(f"an array at byte {start} has the unknown class {cls}")

    def elements(buf: bytes, pos: int, end: int, depth: int) -> None:
        while pos < end:
            if end - pos < 8 and not buf[pos:end].strip(b"\0"):
                return  # padding at the end
            typ, nbytes, start, nxt = tag(buf, pos, end)
            if typ == _MI_COMPRESSED:
                if depth:
                    raise bad("a compressed element inside a compressed element")
                try:
                    inner = zlib.decompressobj().decompress(buf[start:start + nbytes],
                                                            64 * len(raw) + 2**20)
                except zlib.error as exc:
                    raise bad(f"its compressed data do not inflate ({exc})") from None
                elements(inner, 0, len(inner), depth + 1)
            elif typ == _MI_MATRIX:
                matrix(buf, start, start + nbytes, 0)
            pos = nxt

    elements(raw, 128, len(raw), 0)


def _looks_like_mat4(raw: bytes) -> bool:
    # Level-4 MAT files start with a 20-byte header of small integers.
    if len(raw) < 20:
        return False
    head = np.frombuffer(raw[:20], dtype="<i4")
    return bool(head[0] in (0, 10, 1000, 1010) and 0 < head[1] < 2**24 and 0 < head[2] < 2**24)
