"""Grammar-constrained decoding with the API of XGrammar and llguidance.

Compile a JSON Schema, regular expression or GBNF grammar for a tokenizer's vocabulary, then per
sequence let a :class:`Matcher` write the allowed tokens into a bitmask and mask the logits::

    import constrain
    vocab = constrain.Vocabulary.from_tokenizer_json("tokenizer.json")
    compiled = constrain.compile_json_schema({"type": "object"}, vocab)
    matcher = constrain.Matcher(compiled)
    bitmask = constrain.allocate_token_bitmask(1, vocab.width)
    matcher.fill_next_token_bitmask(bitmask)
    constrain.apply_token_bitmask_inplace(logits, bitmask)   # logits: (1, width)
    ...
    matcher.accept_token(token)

Bitmasks are ``int32`` arrays of shape ``(batch, ceil(width / 32))``; bit ``j % 32`` of word
``j // 32`` is set when token ``j`` is allowed, the layout XGrammar and llguidance use.
"""

from __future__ import annotations

from typing import Any, Optional, Sequence

from ._native import (
    CompiledGrammar,
    CompileError,
    Matcher,
    MatchError,
    Sampler,
    Vocabulary,
    VocabularyError,
    allocate_token_bitmask,
    compile_any_json,
    compile_gbnf,
    compile_lark,
    compile_json_schema,
    compile_regex,
    fill_next_token_bitmasks,
)
from . import _native
from ._huggingface import vocabulary_from_huggingface as _vocabulary_from_huggingface
from ._torch_mask import apply_with_torch as _apply_with_torch

__all__ = [
    "CompileError",
    "CompiledGrammar",
    "MatchError",
    "Matcher",
    "Sampler",
    "Vocabulary",
    "VocabularyError",
    "allocate_token_bitmask",
    "apply_token_bitmask_inplace",
    "compile_any_json",
    "compile_gbnf",
    "compile_lark",
    "compile_json_schema",
    "compile_regex",
    "compile_structural_tag",
    "fill_next_token_bitmasks",
]


def _from_huggingface(tokenizer: Any, *, eos_ids: Sequence[int] = (), width: Optional[int] = None) -> Vocabulary:
    return _vocabulary_from_huggingface(tokenizer, eos_ids=eos_ids, width=width)


_from_huggingface.__doc__ = _vocabulary_from_huggingface.__doc__
Vocabulary.from_huggingface = staticmethod(_from_huggingface)  # type: ignore[attr-defined]


def compile_structural_tag(
    structural_tag: Any, vocabulary: Vocabulary, triggers: Optional[Sequence[str]] = None, **options: Any
) -> CompiledGrammar:
    """Compiles an XGrammar structural tag (see ``docs/structural-tags.md``).

    As XGrammar's ``compile_structural_tag`` takes it: the structural tag as JSON text, a
    ``dict``, or XGrammar's pydantic ``StructuralTag``; or, with ``triggers``, the older list of
    tags (``dict`` s or objects with ``begin``, ``schema`` and ``end``, the schema a ``dict``,
    JSON text or a pydantic model class). Keyword arguments are ``compile_json_schema``'s options,
    applied to the schemas inside, and the budgets. Raises ``CompileError`` of kind
    ``"structural_tag"`` whose ``pointer`` is the JSON pointer of the offending part.
    """
    if triggers is not None:
        structural_tag = {
            "type": "structural_tag",
            "structures": [_legacy_tag(tag) for tag in structural_tag],
            "triggers": list(triggers),
        }
    elif hasattr(structural_tag, "model_dump_json"):
        structural_tag = structural_tag.model_dump_json(by_alias=True)
    return _native.compile_structural_tag(structural_tag, vocabulary, **options)


def _legacy_tag(tag: Any) -> dict:
    """One tag of the older form as a ``dict``: ``begin``, ``schema``, ``end``."""
    if isinstance(tag, dict):
        return tag
    schema = getattr(tag, "schema_", None)
    if schema is None:
        schema = getattr(tag, "schema")
    if isinstance(schema, type) and hasattr(schema, "model_json_schema"):
        schema = schema.model_json_schema()
    return {"begin": tag.begin, "schema": schema, "end": tag.end}


def apply_token_bitmask_inplace(logits: Any, bitmask: Any, indices: Optional[Sequence[int]] = None) -> None:
    """Sets the logits of the tokens a bitmask disallows to ``-inf``, in place.

    ``logits`` is ``(batch, width)`` or ``(width,)``: a NumPy ``float32``/``float64`` array, or a
    PyTorch tensor of any floating dtype on any device. ``bitmask`` has the same number of rows
    (or is 1-D with a 1-D ``logits``); with ``indices``, only those rows are masked, row ``i`` of
    the logits by row ``i`` of the bitmask. Logits past the bitmask's bits are set to ``-inf``;
    bits past the logits' width are ignored.

    NumPy arrays and CPU ``float32`` tensors are masked by the Rust code (rows in parallel, no
    copy); other tensors (CUDA, ``bfloat16``...) through torch operations on their device: CUDA
    logits are never copied to the host, only the bitmask goes to the GPU.
    """
    module = type(logits).__module__
    if module.startswith("torch"):
        import torch

        if logits.device.type != "cpu" or logits.dtype != torch.float32:
            _apply_with_torch(logits, bitmask, indices)
            return
    _native.apply_token_bitmask_inplace_cpu(logits, bitmask, None if indices is None else list(indices))
