from typing import Any, Optional, Sequence

from ._native import (
    CompiledGrammar as CompiledGrammar,
    CompileError as CompileError,
    Matcher as Matcher,
    MatchError as MatchError,
    Sampler as Sampler,
    Vocabulary as Vocabulary,
    VocabularyError as VocabularyError,
    allocate_token_bitmask as allocate_token_bitmask,
    compile_any_json as compile_any_json,
    compile_gbnf as compile_gbnf,
    compile_lark as compile_lark,
    compile_json_schema as compile_json_schema,
    compile_regex as compile_regex,
    fill_next_token_bitmasks as fill_next_token_bitmasks,
)

def compile_structural_tag(
    structural_tag: Any, vocabulary: Vocabulary, triggers: Optional[Sequence[str]] = None, **options: Any
) -> CompiledGrammar:
    """Compiles an XGrammar structural tag (JSON text, ``dict``, pydantic ``StructuralTag``, or with
    ``triggers`` the older list of tags); raises ``CompileError`` of kind ``"structural_tag"``."""

def apply_token_bitmask_inplace(logits: Any, bitmask: Any, indices: Optional[Sequence[int]] = None) -> None:
    """Sets the logits of disallowed tokens to ``-inf``, in place (NumPy, or torch on any device)."""
