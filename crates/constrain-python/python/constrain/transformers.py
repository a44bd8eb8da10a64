"""A ``transformers`` logits processor: ``model.generate(..., logits_processor=[LogitsProcessor(compiled)])``.

One matcher per batch row, created on the first call (when the prompt is known); each later call
accepts the token the previous step chose, then masks the scores. Greedy decoding and sampling
are supported; beam search reorders rows between steps and is refused with an error.
"""

from __future__ import annotations

from typing import Any, List, Optional

from ._native import CompiledGrammar, Matcher, allocate_token_bitmask, fill_next_token_bitmasks
from . import apply_token_bitmask_inplace

try:  # transformers is optional: the class works with anything that calls it the same way.
    from transformers import LogitsProcessor as _Base
except ImportError:  # pragma: no cover
    _Base = object  # type: ignore[assignment,misc]


class LogitsProcessor(_Base):  # type: ignore[misc,valid-type]
    """Constrains ``model.generate`` to the language of ``compiled``.

    Each batch row must end in the grammar: give ``generate`` the tokenizer's end-of-sequence
    ids as ``eos_token_id`` (the grammar allows them exactly when the output is complete). Use
    a new processor for each ``generate`` call.

    Give it the ``max_new_tokens`` you give ``generate`` and every row ends complete within
    them: the output keeps room for its shortest completion, and one token for the end of
    sequence. A budget below the grammar's shortest output raises ``ValueError`` on the first
    call, saying how many tokens it needs.
    """

    def __init__(self, compiled: CompiledGrammar, max_new_tokens: Optional[int] = None) -> None:
        if max_new_tokens is not None and max_new_tokens < 1:
            raise ValueError(f"LogitsProcessor: max_new_tokens must be at least 1, got {max_new_tokens}")
        self.compiled = compiled
        self.max_new_tokens = max_new_tokens
        self.matchers: List[Matcher] = []
        self._bitmask: Optional[Any] = None
        self._prompt_len = 0
        self._last: Optional[Any] = None

    def __call__(self, input_ids: Any, scores: Any) -> Any:
        import torch

        batch = input_ids.shape[0]
        if not self.matchers:
            # The end-of-sequence token is one of generate's new tokens, not one of the matcher's.
            budget = None if self.max_new_tokens is None else self.max_new_tokens - 1
            self.matchers = [Matcher(self.compiled, max_tokens=budget) for _ in range(batch)]
            self._bitmask = torch.from_numpy(allocate_token_bitmask(batch, self.compiled.vocab_width))
            self._prompt_len = input_ids.shape[1]
        else:
            if batch != len(self.matchers) or input_ids.shape[1] != self._last.shape[1] + 1:
                raise ValueError(
                    "LogitsProcessor: the batch changed shape between steps; use one processor "
                    "per generate() call (beam search is not supported)"
                )
            if not torch.equal(input_ids[:, :-1], self._last):
                raise ValueError(
                    "LogitsProcessor: earlier tokens of a row changed between steps (beam search "
                    "reorders rows); it is not supported"
                )
            for row, (matcher, token) in enumerate(zip(self.matchers, input_ids[:, -1].tolist())):
                if matcher.is_terminated():
                    continue  # the row has ended; generate pads it
                if not matcher.accept_token(token):
                    raise ValueError(
                        f"LogitsProcessor: row {row} continued with token {token}, which the "
                        "grammar does not allow (another processor changed the choice?)"
                    )
        self._last = input_ids
        live = [i for i, m in enumerate(self.matchers) if not m.is_terminated()]
        if not live:
            return scores
        fill_next_token_bitmasks([self.matchers[i] for i in live], self._bitmask, live)
        apply_token_bitmask_inplace(scores, self._bitmask, live)
        return scores
