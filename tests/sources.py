"""Parsing the project's source files in tests that read code (layers, imports, docstrings).

CPython 3.11 before 3.11.8 keeps the AST conversion's recursion depth in the ``_ast``
module's state, shared by every thread (CPython issue gh-106905): when another thread of
the test process converts an AST at the same moment (an import through pytest's assertion
rewriting in a Dask client's thread, say), ``ast.parse`` raises ``SystemError: AST
constructor recursion depth mismatch`` on code that parses. Seen twice in the CI's second
pass, on different tests. :func:`parse` parses again when that happens: the source is
unchanged, so the AST is the one a quiet interpreter gives.
"""

from __future__ import annotations

import ast

#: Parses tried before the error is let through.
ATTEMPTS = 5


def parse(source: str, filename: str = "<unknown>") -> ast.Module:
    """``ast.parse(source)``, again if the shared recursion counter was disturbed."""
    for attempt in range(ATTEMPTS):
        try:
            return ast.parse(source, filename)
        except SystemError as exc:
            if "recursion depth mismatch" not in str(exc) or attempt == ATTEMPTS - 1:
                raise
    raise AssertionError("unreachable")
