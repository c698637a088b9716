"""Files written whole: a temporary file in the same folder, renamed over the target
when every byte is on disk.

A reader therefore sees either the old file or the complete new one, never a file cut
short by a full disk, a crash or ``kill -9``. The temporary names follow one pattern
(:data:`TEMP_SUFFIX`, a leading dot) so that leftovers of a killed process can be
recognised (:func:`leftover_temporaries`) and removed by the next writer.
"""

from __future__ import annotations

import contextlib
import os
import secrets
from pathlib import Path

#: The suffix of every temporary file written here (``.NAME.PID-RANDOM.kl-tmp``).
TEMP_SUFFIX = ".kl-tmp"

#: Bytes handed to one ``os.write``: a full disk is met within one chunk.
CHUNK = 1 << 20


def temporary_name(path: Path) -> Path:
    """A fresh temporary name beside ``path``: hidden, with this process's id and a
    random token, ending in :data:`TEMP_SUFFIX`."""
    return path.with_name(f".{path.name}.{os.getpid()}-{secrets.token_hex(4)}{TEMP_SUFFIX}")


def leftover_temporaries(folder: str | os.PathLike[str]) -> list[Path]:
    """The temporary files of :func:`write_atomic` in ``folder``: what a process left
    when it was killed while writing (sorted; empty when the folder is missing)."""
    try:
        names = os.listdir(folder)
    except OSError:
        return []
    return sorted(Path(folder) / n for n in names
                  if n.startswith(".") and n.endswith(TEMP_SUFFIX))


def _write_all(fd: int, data: bytes) -> None:
    """Every byte of ``data`` to ``fd``; ``os.write`` may write fewer than asked."""
    view = memoryview(data)
    while view:
        done = os.write(fd, view[:CHUNK])
        view = view[done:]


def fsync_folder(folder: str | os.PathLike[str]) -> None:
    """Make a rename in ``folder`` durable (best effort: not every system can open a
    folder, e.g. Windows)."""
    try:
        fd = os.open(folder, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def write_atomic(path: str | os.PathLike[str], data: bytes | str, *,
                 encoding: str = "utf-8") -> Path:
    """Write ``data`` to ``path`` whole, or not at all.

    Parameters
    ----------
    path : path-like
        The target; its folder must exist. An existing file is replaced only once the
        new content is complete and flushed to disk (``fsync``).
    data : bytes or str
        The content; text is encoded with ``encoding``.
    encoding : str
        The encoding of text ``data``.

    Returns
    -------
    Path
        ``path``.

    Raises
    ------
    OSError
        When the temporary file cannot be created, written (a full disk: ``ENOSPC``) or
        renamed. The temporary file is removed and ``path`` is left as it was.
    """
    path = Path(path)
    raw = data.encode(encoding) if isinstance(data, str) else bytes(data)
    tmp = temporary_name(path)
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0),
                 0o666)
    try:
        try:
            _write_all(fd, raw)
            os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    fsync_folder(path.parent)
    return path

