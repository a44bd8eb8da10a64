"""Type stubs of the native module ``constrain._native`` (re-exported by ``constrain``)."""

from os import PathLike
from typing import Any, Dict, List, Optional, Sequence, Union

import numpy as np
import numpy.typing as npt

class CompileError(ValueError):
    """A schema, regex or grammar that cannot be compiled; says what and where."""

    kind: str
    """``"schema"``, ``"regex"``, ``"gbnf"`` or ``"grammar"``."""
    keyword: Optional[str]
    """JSON Schema: the keyword concerned."""
    pointer: Optional[str]
    """JSON Schema: the JSON pointer of the place (``""`` is the root)."""
    line: Optional[int]
    """JSON text or GBNF: 1-based line."""
    column: Optional[int]
    """JSON text or GBNF: 1-based column."""

class MatchError(RuntimeError):
    """A run-time budget of the lazily built automaton was exhausted."""

class VocabularyError(ValueError):
    """A vocabulary that cannot be built or loaded."""

class Vocabulary:
    """A model's vocabulary: every token id's bytes and kind, and its logits width."""

    @staticmethod
    def from_tokenizer_json(
        path: Union[str, PathLike[str]], *, eos_ids: Sequence[int] = ..., width: Optional[int] = None
    ) -> Vocabulary:
        """Loads a Hugging Face ``tokenizer.json`` (end tokens from the config files beside it,
        the well-known end tokens, and ``eos_ids``)."""
    @staticmethod
    def from_tokenizer_json_str(
        json: str, *, eos_ids: Sequence[int] = ..., width: Optional[int] = None
    ) -> Vocabulary:
        """The vocabulary of the text of a ``tokenizer.json``."""
    @staticmethod
    def from_huggingface(
        tokenizer: Any, *, eos_ids: Sequence[int] = ..., width: Optional[int] = None
    ) -> Vocabulary:
        """The vocabulary of a ``transformers`` tokenizer, fast or slow."""
    @staticmethod
    def from_tokens(
        tokens: Sequence[Optional[bytes]],
        eos_ids: Sequence[int],
        *,
        special_ids: Sequence[int] = ...,
        width: Optional[int] = None,
    ) -> Vocabulary:
        """A vocabulary from each id's bytes (``None`` for an unused id)."""
    @property
    def size(self) -> int:
        """Number of token ids."""
    @property
    def width(self) -> int:
        """The logits width (bits of a bitmask row)."""
    @property
    def eos_ids(self) -> List[int]:
        """The ids that end generation, sorted."""
    def token_bytes(self, id: int) -> Optional[bytes]:
        """The bytes of a token, or ``None``."""
    def token_kind(self, id: int) -> Optional[str]:
        """``"text"``, ``"special"``, ``"eos"``, or ``None``."""
    def __len__(self) -> int: ...

class CompiledGrammar:
    """A grammar compiled for one vocabulary; immutable, shareable across threads."""

    @property
    def warnings(self) -> List[str]:
        """What the schema compiler did not enforce exactly."""
    @property
    def vocab_width(self) -> int:
        """The logits width of the vocabulary."""
    @property
    def mask_words(self) -> int:
        """32-bit words of a bitmask row."""

def compile_json_schema(
    schema: Union[str, dict, bool],
    vocabulary: Vocabulary,
    *,
    whitespace: str = "bounded",
    max_whitespace: int = 16,
    indent: Optional[int] = None,
    separators: Optional[tuple[str, str]] = None,
    additional_properties: str = "spec",
    strict: bool = False,
    lenient: bool = False,
    property_order: str = "schema",
    escapes: str = "any",
    numbers: str = "canonical",
    max_untyped_depth: Optional[int] = None,
    max_any_order_properties: int = 6,
    assert_formats: bool = True,
    max_compile_time: Optional[float] = 60.0,
    resources: Optional[dict[str, Any]] = None,
) -> CompiledGrammar:
    """Compiles a JSON Schema; raises ``CompileError`` with keyword and pointer."""

def compile_any_json(
    vocabulary: Vocabulary,
    *,
    whitespace: str = "bounded",
    max_whitespace: int = 16,
    indent: Optional[int] = None,
    separators: Optional[tuple[str, str]] = None,
    escapes: str = "any",
    numbers: str = "canonical",
    max_untyped_depth: Optional[int] = None,
) -> CompiledGrammar:
    """Compiles a grammar of every JSON value."""

def compile_regex(pattern: str, vocabulary: Vocabulary) -> CompiledGrammar:
    """Compiles a regular expression (Rust ``regex`` syntax) the whole output must match."""

def compile_gbnf(text: str, vocabulary: Vocabulary, *, root: str = "root") -> CompiledGrammar:
    """Compiles a GBNF grammar; raises ``CompileError`` with line and column."""

def compile_lark(text: str, vocabulary: Vocabulary) -> CompiledGrammar:
    """Compiles a Lark grammar (start rule ``start``); raises ``CompileError`` with line and column."""

def compile_structural_tag(structural_tag: Any, vocabulary: Vocabulary, **options: Any) -> CompiledGrammar:
    """Compiles an XGrammar structural tag (JSON text or ``dict``); raises ``CompileError`` of kind
    ``"structural_tag"`` with the JSON pointer."""

class Matcher:
    """One sequence's state under a compiled grammar."""

    def __init__(self, compiled: CompiledGrammar, max_tokens: Optional[int] = None) -> None:
        """With ``max_tokens``, the output ends complete within that many tokens; raises
        ``ValueError`` when the grammar's shortest completion takes more."""
    def tokens_left(self) -> Optional[int]:
        """Tokens the ``max_tokens`` budget leaves (``None`` without one)."""
    def shortest_completion(self) -> Optional[bytes]:
        """The fewest bytes that complete the output so far."""
    def fill_next_token_bitmask(self, bitmask: Any, index: int = 0) -> None:
        """Writes the allowed tokens into row ``index`` of ``bitmask``, in place."""
    def accept_token(self, token_id: int) -> bool:
        """Accepts the token if allowed (``True``); else ``False``, state unchanged."""
    def accept_string(self, text: Union[str, bytes]) -> bool:
        """Accepts the text as one step if allowed (``True``); else ``False``."""
    def is_accepting(self) -> bool:
        """Whether an end-of-sequence token is allowed now."""
    def is_finished(self) -> bool:
        """Whether nothing but the end can follow (or the end was accepted)."""
    def is_terminated(self) -> bool:
        """Whether an end-of-sequence token was accepted."""
    def forced_tokens(self) -> List[int]:
        """Tokens the grammar forces next."""
    def rollback(self, num_tokens: int = 1) -> None:
        """Undoes the last steps."""
    def reset(self) -> None:
        """Back to the start."""
    def copy(self) -> Matcher:
        """An independent matcher in the same state."""
    @property
    def num_steps(self) -> int:
        """Steps accepted so far."""

class Sampler:
    """The Rust crate's constrained sampler: mask, penalties, temperature, cutoffs, seeded draw."""

    def __init__(
        self,
        compiled: CompiledGrammar,
        *,
        temperature: float = 1.0,
        top_k: int = 0,
        top_p: float = 1.0,
        min_p: float = 0.0,
        typical_p: float = 1.0,
        repeat_penalty: float = 1.0,
        frequency_penalty: float = 0.0,
        presence_penalty: float = 0.0,
        seed: int = 0,
        prompt: Sequence[int] = ...,
        trace: bool = False,
    ) -> None: ...
    @property
    def trace(self) -> List[Dict[str, Any]]:
        """With ``trace=True``: per accepted token, its origin, the tokens allowed, the mass the
        mask removed and the top candidates before and after the mask and the funnel."""
    def sample(self, logits: Any) -> int:
        """Draws the next token from one step's ``float32`` logits (not yet accepted)."""
    def accept(self, token: int) -> None:
        """Records the token fed to the model."""
    def forced_tokens(self) -> List[int]:
        """Tokens the grammar forces next."""
    def is_accepting(self) -> bool: ...
    def is_finished(self) -> bool: ...

def allocate_token_bitmask(batch_size: int, vocab_size: int) -> npt.NDArray[np.int32]:
    """An all-allowed ``int32`` bitmask of shape ``(batch_size, ceil(vocab_size / 32))``."""

def fill_next_token_bitmasks(
    matchers: Sequence[Matcher], bitmask: Any, indices: Optional[Sequence[int]] = None
) -> None:
    """Fills one row per matcher, in parallel with the GIL released."""

def apply_token_bitmask_inplace_cpu(
    logits: Any, bitmask: Any, indices: Optional[Sequence[int]] = None
) -> None:
    """Masks NumPy or CPU float32 logits in place (see ``apply_token_bitmask_inplace``)."""
