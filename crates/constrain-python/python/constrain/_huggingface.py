"""Vocabularies from Hugging Face ``transformers`` tokenizers, fast or slow."""

from __future__ import annotations

from typing import Any, Optional, Sequence

from ._native import Vocabulary


def vocabulary_from_huggingface(tokenizer: Any, *, eos_ids: Sequence[int] = (), width: Optional[int] = None) -> Vocabulary:
    """The vocabulary of a ``transformers`` tokenizer (fast, or slow: converted to its fast
    form, which needs ``sentencepiece``/``protobuf`` for SentencePiece models).

    End-of-sequence tokens: the tokenizer's ``eos_token_id``, the well-known end tokens of
    common model families, and ``eos_ids`` (a model's ``generation_config.eos_token_id``).
    ``width`` is the model's logits width (``model.config.vocab_size``) when larger than the
    tokenizer's vocabulary.
    """
    backend = getattr(tokenizer, "backend_tokenizer", None)
    if backend is None:
        try:
            from transformers.convert_slow_tokenizer import convert_slow_tokenizer
        except ImportError as e:  # pragma: no cover - transformers is what gave the tokenizer
            raise TypeError("from_huggingface needs a transformers tokenizer") from e
        backend = convert_slow_tokenizer(tokenizer)
    ids = [int(i) for i in eos_ids]
    eos = getattr(tokenizer, "eos_token_id", None)
    if isinstance(eos, int):
        ids.append(eos)
    elif isinstance(eos, (list, tuple)):
        ids.extend(int(i) for i in eos)
    return Vocabulary.from_tokenizer_json_str(backend.to_str(), eos_ids=sorted(set(ids)), width=width)
