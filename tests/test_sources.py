"""tests.sources.parse: the shared recursion counter's SystemError is parsed again, any
other error is not."""

from __future__ import annotations

import ast

import pytest

from tests import sources


def test_a_disturbed_parse_is_parsed_again_and_other_errors_pass(monkeypatch):
    real = ast.parse
    calls = []

    def disturbed(source, filename="<unknown>"):
        calls.append(1)
        if len(calls) < 3:
            raise SystemError("AST constructor recursion depth mismatch (before=141, after=193)")
        return real(source, filename)
    monkeypatch.setattr(ast, "parse", disturbed)
    tree = sources.parse("x = 1\n")
    assert len(calls) == 3 and ast.dump(tree) == ast.dump(real("x = 1\n"))

    def broken(source, filename="<unknown>"):
        raise SystemError("something else")
    monkeypatch.setattr(ast, "parse", broken)
    with pytest.raises(SystemError, match="something else"):
        sources.parse("x = 1\n")
    monkeypatch.setattr(ast, "parse", lambda s, f="<unknown>": (_ for _ in ()).throw(
        SystemError("AST constructor recursion depth mismatch")))
    with pytest.raises(SystemError):  # not for ever
        sources.parse("x = 1\n")
    monkeypatch.setattr(ast, "parse", real)
    with pytest.raises(SyntaxError):
        sources.parse("x = (\n")
