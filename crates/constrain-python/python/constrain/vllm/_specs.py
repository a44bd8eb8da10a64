"""What each of vLLM's structured-output request kinds compiles to.

vLLM hands a backend a kind (``StructuredOutputOptions``) and a spec string. The spec is turned
into one of the package's compile calls here, with no vLLM object in sight, so the same code
checks a request in vLLM's front end (against a byte vocabulary, for the error message) and
compiles it in the engine (against the model's vocabulary).

JSON output has the layout of the package's server and CLI: one line, Python's separators
(``", "`` and ``": "``), strings escaped as ``json.dumps`` writes them. The whitespace is
bounded to those single spaces: a small model given any whitespace fills its budget with
blank lines (each a token), which is how most outputs of vLLM's default backend end here.
"""

from __future__ import annotations

import json
from typing import Any

from .._native import CompileError, CompiledGrammar, Vocabulary
from .. import (
    compile_gbnf,
    compile_json_schema,
    compile_lark,
    compile_regex,
    compile_structural_tag,
)

# The names of vLLM's ``StructuredOutputOptions`` members, so this module needs no vLLM import.
JSON, JSON_OBJECT, REGEX, GRAMMAR, CHOICE, STRUCTURAL_TAG = (
    "JSON", "JSON_OBJECT", "REGEX", "GRAMMAR", "CHOICE", "STRUCTURAL_TAG",
)

JSON_OPTIONS: dict[str, Any] = {"whitespace": "compact", "separators": (", ", ": "), "escapes": "canonical"}
"""Options of every JSON Schema compiled for vLLM (see the module docstring)."""

# Characters with a meaning in Rust's regex syntax; everything else stands for itself.
_REGEX_META = set("\\.+*?()|[]{}^$#&-~")


class SpecError(ValueError):
    """A request whose spec cannot be compiled; the message says what and where."""


def compile_spec(kind: str, spec: str, vocabulary: Vocabulary, *, compact: bool = False) -> CompiledGrammar:
    """Compiles one request's spec (``kind`` is a ``StructuredOutputOptions`` member name).

    ``compact`` drops the spaces after separators too (vLLM's ``disable_any_whitespace``).
    Raises :class:`SpecError` with the compiler's message (keyword and JSON pointer for a
    schema; line and column for a grammar).
    """
    json_options = dict(JSON_OPTIONS, separators=(",", ":")) if compact else JSON_OPTIONS
    try:
        if kind == JSON:
            return compile_json_schema(spec, vocabulary, **json_options)
        if kind == JSON_OBJECT:
            return compile_json_schema({"type": "object"}, vocabulary, **json_options)
        if kind == REGEX:
            return compile_regex(spec, vocabulary)
        if kind == CHOICE:
            return compile_regex(choice_regex(_load_json(spec, "choice")), vocabulary)
        if kind == GRAMMAR:
            if is_lark(spec):
                return compile_lark(spec, vocabulary)
            return compile_gbnf(spec, vocabulary)
        if kind == STRUCTURAL_TAG:
            return compile_structural_tag(_load_json(spec, "structural tag"), vocabulary, **json_options)
    except CompileError as e:
        raise SpecError(describe(kind, e)) from e
    raise SpecError(f"unsupported structured-output kind {kind}")


def describe(kind: str, error: CompileError) -> str:
    """The message a client sees for a spec that does not compile: the kind, then the
    compiler's own message (which names the keyword and JSON pointer, or line and column)."""
    what = {
        JSON: "JSON schema", JSON_OBJECT: "JSON object", REGEX: "regex", CHOICE: "choice",
        GRAMMAR: "grammar", STRUCTURAL_TAG: "structural tag",
    }.get(kind, kind)
    return f"constrain could not compile the {what}: {error}"


def is_lark(grammar: str) -> bool:
    """Whether a GRAMMAR spec is Lark rather than GBNF/EBNF.

    The rule: a grammar in which some line defines a rule with ``::=`` (outside comments and
    string literals) is GBNF, as XGrammar and llama.cpp write it; any other grammar is Lark
    (rules written ``name: ...``), the syntax of vLLM's guidance backend.
    """
    return not any("::=" in _code(line) for line in grammar.splitlines())


def _code(line: str) -> str:
    """The line without its string literals and without a ``#`` or ``//`` comment."""
    out = []
    quote = None
    i = 0
    while i < len(line):
        c = line[i]
        if quote:
            if c == "\\":
                i += 1
            elif c == quote:
                quote = None
        elif c in "\"'":
            quote = c
        elif c == "#" or line.startswith("//", i):
            break
        else:
            out.append(c)
        i += 1
    return "".join(out)


def choice_regex(choices: Any) -> str:
    """A regex matching exactly one of the strings (vLLM's CHOICE)."""
    if not isinstance(choices, list) or not choices or not all(isinstance(c, str) for c in choices):
        raise SpecError("choice must be a non-empty list of strings")
    return "|".join(f"(?:{_escape(c)})" for c in choices)


def _escape(text: str) -> str:
    return "".join("\\" + c if c in _REGEX_META else c for c in text)


def _load_json(spec: str, what: str) -> Any:
    try:
        return json.loads(spec)
    except json.JSONDecodeError as e:
        raise SpecError(f"the {what} is not JSON: {e}") from e
