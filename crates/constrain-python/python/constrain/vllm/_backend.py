"""vLLM's engine-level structured-output backend (``StructuredOutputBackend``) for constrain.

One instance per engine: it reads the model's vocabulary once (the bitmask width is vLLM's
``vocab_size``, the model's logits width, which may exceed the tokenizer's), compiles each
request's spec through :mod:`._specs` with a cache keyed by the spec, and hands out one
:class:`ConstrainGrammar` per request.
"""

from __future__ import annotations

import logging
import threading
from collections import OrderedDict
from typing import Any, Optional

from .. import Vocabulary, allocate_token_bitmask
from .._native import CompiledGrammar
from ._grammar import ConstrainGrammar
from ._specs import compile_spec

logger = logging.getLogger("vllm.constrain")

REQUEST = threading.local()
"""The request being compiled on this thread: ``REQUEST.max_tokens`` is set around
``compile_grammar`` by the engine's wrapper (:mod:`._patches`), since vLLM's interface does not
pass it. Set there rather than after the grammar is made, so a budget too small for the
grammar fails inside vLLM's own error handling, which logs it with the request id."""

CACHE_SIZE = 512
"""Compiled grammars kept (least recently used dropped first); a compiled grammar is shared by
every request with the same spec, and its masks computed so far with it."""


class ConstrainBackend:
    """The backend vLLM's ``StructuredOutputManager`` drives (its constructor arguments are
    ``StructuredOutputBackend``'s: the engine's config, tokenizer and logits width)."""

    def __init__(self, vllm_config: Any, tokenizer: Any, vocab_size: int) -> None:
        self.vllm_config = vllm_config
        self.tokenizer = tokenizer
        self.vocab_size = vocab_size
        if getattr(tokenizer, "backend_tokenizer", None) is None and not hasattr(tokenizer, "get_vocab"):
            raise TypeError(
                f"constrain reads Hugging Face tokenizers; {type(tokenizer).__name__} is not one "
                "(use tokenizer_mode='hf')"
            )
        self.vocabulary = Vocabulary.from_huggingface(
            tokenizer, eos_ids=_model_end_ids(vllm_config), width=vocab_size
        )
        so_config = getattr(vllm_config, "structured_outputs_config", None)
        self.compact = bool(getattr(so_config, "disable_any_whitespace", False))
        self._cache: "OrderedDict[tuple[str, str], CompiledGrammar]" = OrderedDict()
        self._lock = threading.Lock()

    def compile_grammar(
        self, request_type: Any, grammar_spec: str, stop_token_ids: Optional[set[int]] = None
    ) -> ConstrainGrammar:
        """A grammar for one request; raises ``SpecError`` (which fails that request only)
        when the spec does not compile."""
        kind = getattr(request_type, "name", str(request_type))
        logger.debug("compiling %s (%d characters): %.300s", kind, len(grammar_spec), grammar_spec)
        compiled = self.compiled(kind, grammar_spec)
        max_tokens = getattr(REQUEST, "max_tokens", None)
        return ConstrainGrammar(compiled, self.vocabulary.eos_ids, stop_token_ids, max_tokens)

    def compiled(self, kind: str, spec: str) -> CompiledGrammar:
        """The compiled grammar of a spec, from the cache when compiled before. Compiling
        releases the GIL; two threads compiling the same new spec both compile it."""
        key = (kind, spec)
        with self._lock:
            found = self._cache.get(key)
            if found is not None:
                self._cache.move_to_end(key)
                return found
        compiled = compile_spec(kind, spec, self.vocabulary, compact=self.compact)
        with self._lock:
            self._cache[key] = compiled
            while len(self._cache) > CACHE_SIZE:
                self._cache.popitem(last=False)
        return compiled

    def allocate_token_bitmask(self, max_num_seqs: int) -> Any:
        """A ``torch.int32`` bitmask of ``max_num_seqs`` rows over the model's logits width."""
        import torch

        return torch.from_numpy(allocate_token_bitmask(max_num_seqs, self.vocab_size))

    def destroy(self) -> None:
        """Drops the compiled grammars."""
        with self._lock:
            self._cache.clear()


def _model_end_ids(vllm_config: Any) -> list[int]:
    """The model's end tokens from its generation config (beside the tokenizer's own)."""
    model_config = getattr(vllm_config, "model_config", None)
    try:
        config = model_config.try_get_generation_config() if model_config is not None else {}
    except Exception:  # noqa: BLE001 - no generation config is not an error
        config = {}
    ids = config.get("eos_token_id") if isinstance(config, dict) else None
    if isinstance(ids, int):
        return [ids]
    return [int(i) for i in ids] if isinstance(ids, (list, tuple)) else []
