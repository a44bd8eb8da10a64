"""One request's grammar state, as vLLM's ``StructuredOutputGrammar`` interface wants it.

A :class:`~constrain.Matcher` does the work. What is added here is the request's end: vLLM ends
a request on its own stop tokens (the model's end tokens and the request's ``stop_token_ids``),
which need not be the vocabulary's end tokens (Gemma's vocabulary knows ``<end_of_turn>`` as an
end, a base model's request does not stop on it). So the bitmask allows exactly the request's
stop tokens where the output may end, and nothing else that ends: an end the engine would not
stop on lets the model write past the grammar.
"""

from __future__ import annotations

import logging
from typing import Any, Iterable, Optional

from .._native import CompiledGrammar, Matcher

logger = logging.getLogger("vllm.constrain")  # a child of vLLM's logger: its handlers print it


class ConstrainGrammar:
    """vLLM's per-request grammar (``StructuredOutputGrammar``) over a :class:`Matcher`.

    ``vocab_ends`` are the vocabulary's end tokens (the matcher's); ``stop_ids`` the request's,
    or ``None`` to stop on the vocabulary's. ``max_tokens``: the output ends complete within
    that many tokens, the stop token included (as vLLM counts them).
    """

    def __init__(
        self,
        compiled: CompiledGrammar,
        vocab_ends: Iterable[int],
        stop_ids: Optional[Iterable[int]] = None,
        max_tokens: Optional[int] = None,
    ) -> None:
        self._compiled = compiled
        ends = frozenset(vocab_ends)
        stops = frozenset(stop_ids) if stop_ids else ends
        # Stop tokens the matcher does not know as ends: accepted here when it is accepting.
        self._extra_stops = sorted(stops - ends)
        # Ends of the vocabulary this request does not stop on: never allowed.
        self._foreign_ends = sorted(ends - stops)
        self._matcher = Matcher(compiled, _matcher_budget(max_tokens))
        self._stopped = False
        self.num_processed_tokens = 0

    # --- vLLM's interface -------------------------------------------------------------------

    def accept_tokens(self, request_id: str, tokens: list[int]) -> bool:
        """Advances over ``tokens``; ``False`` (logged) at the first token the grammar refuses.
        Tokens after the end are ignored, as vLLM sends the step's tokens whole."""
        for token in tokens:
            if self.is_terminated():
                break
            if not self._accept(token):
                logger.error("request %s: token %d is not allowed here", request_id, token)
                return False
            self.num_processed_tokens += 1
        return True

    def validate_tokens(self, tokens: list[int]) -> list[int]:
        """The longest prefix of ``tokens`` the grammar accepts (up to an end), leaving the
        state as it was: each accepted token is rolled back."""
        accepted: list[int] = []
        for token in tokens:
            if self.is_terminated() or not self._accept(token):
                break
            accepted.append(token)
        self._undo(len(accepted))
        return accepted

    def rollback(self, num_tokens: int) -> None:
        """Undoes the last ``num_tokens`` accepted tokens (rejected speculative drafts)."""
        self._undo(num_tokens)
        self.num_processed_tokens -= num_tokens

    def fill_bitmask(self, bitmask: Any, batch_index: int) -> None:
        """Writes the allowed tokens into row ``batch_index`` (XGrammar's ``int32`` layout);
        the matcher fills the row with the GIL released."""
        self._matcher.fill_next_token_bitmask(bitmask, batch_index)
        if not (self._foreign_ends or self._extra_stops):
            return
        row = bitmask[batch_index]
        for token in self._foreign_ends:
            _set_bit(row, token, False)
        if self._extra_stops and self._matcher.is_accepting():
            for token in self._extra_stops:
                _set_bit(row, token, True)

    def is_terminated(self) -> bool:
        """Whether the request's stop token has been accepted."""
        return self._stopped or self._matcher.is_terminated()

    def reset(self) -> None:
        """Back to the start (the budget kept)."""
        self._matcher.reset()
        self._stopped = False
        self.num_processed_tokens = 0

    # --- internals ----------------------------------------------------------------------------

    def _accept(self, token: int) -> bool:
        if token in self._extra_stops:
            if self._matcher.is_accepting():
                self._stopped = True
                return True
            return False
        if token in self._foreign_ends:
            return False
        return self._matcher.accept_token(token)

    def _undo(self, steps: int) -> None:
        if steps <= 0:
            return
        if self._stopped:
            # The stop token was the last step and never reached the matcher.
            self._stopped = False
            steps -= 1
        if steps:
            self._matcher.rollback(steps)


def _matcher_budget(max_tokens: Optional[int]) -> Optional[int]:
    """The matcher's budget for vLLM's ``max_tokens``: the matcher does not count the end
    token, vLLM does (an output ends at ``max_tokens`` tokens, its stop token among them)."""
    if max_tokens is None:
        return None
    if max_tokens < 2:
        raise ValueError(f"max_tokens={max_tokens} leaves no token for a structured output before its end")
    return max_tokens - 1


def _set_bit(row: Any, token: int, allowed: bool) -> None:
    """Sets or clears token ``token``'s bit in one ``int32`` bitmask row."""
    word, bit = divmod(token, 32)
    if word >= len(row):
        return
    value = int(row[word]) & 0xFFFFFFFF
    value = value | (1 << bit) if allowed else value & ~(1 << bit)
    row[word] = value - (1 << 32) if value >= 1 << 31 else value
