"""The per-request grammar and the spec compiler alone (no engine): what vLLM's scheduler
relies on for drafts (validation leaves the state unchanged, rollback undoes exactly), the
request's own stop tokens, and the rule telling GBNF from Lark. Real matchers over a small
vocabulary of single characters."""

from __future__ import annotations

import numpy as np
import pytest

import constrain
from constrain.vllm import ConstrainGrammar, SpecError, compile_spec, is_lark

CHARS = [bytes([c]) for c in range(32, 127)]
EOS, END_OF_TURN, STOP = len(CHARS), len(CHARS) + 1, len(CHARS) + 2


@pytest.fixture(scope="module")
def vocab():
    tokens = CHARS + [b"<eos>", b"<end_of_turn>", b"<stop>"]
    return constrain.Vocabulary.from_tokens(tokens, [EOS, END_OF_TURN], special_ids=[STOP])


def ids(text: str) -> list[int]:
    return [CHARS.index(bytes([b])) for b in text.encode()]


def allowed(grammar: ConstrainGrammar, width: int) -> set[int]:
    bitmask = constrain.allocate_token_bitmask(2, width)
    bitmask[1] = -1
    grammar.fill_bitmask(bitmask, 1)
    bits = np.unpackbits(bitmask[1].view(np.uint8), bitorder="little")
    return {i for i in range(width) if bits[i]}


def test_validate_tokens_returns_the_accepted_prefix_and_leaves_the_state(vocab):
    grammar = ConstrainGrammar(compile_spec("REGEX", "ab+c", vocab), vocab.eos_ids, [EOS])
    before = allowed(grammar, vocab.width)
    assert grammar.validate_tokens(ids("abbx")) == ids("abb")
    assert allowed(grammar, vocab.width) == before
    assert grammar.num_processed_tokens == 0
    assert grammar.validate_tokens(ids("abc") + [EOS, ids("a")[0]]) == ids("abc") + [EOS]
    assert not grammar.is_terminated()


def test_rollback_undoes_exactly_the_rejected_drafts(vocab):
    grammar = ConstrainGrammar(compile_spec("REGEX", "ab+c", vocab), vocab.eos_ids, [EOS])
    assert grammar.accept_tokens("r", ids("ab"))
    after_ab = allowed(grammar, vocab.width)
    assert grammar.accept_tokens("r", ids("bbc") + [EOS])
    assert grammar.is_terminated()
    grammar.rollback(4)
    assert not grammar.is_terminated()
    assert grammar.num_processed_tokens == 2
    assert allowed(grammar, vocab.width) == after_ab
    assert not grammar.accept_tokens("r", ids("x"))


def test_only_the_request_stop_tokens_may_end_the_output(vocab):
    """A vocabulary end the request does not stop on is masked; a stop token the vocabulary
    does not know as an end is allowed where the output may end."""
    grammar = ConstrainGrammar(compile_spec("CHOICE", '["ok"]', vocab), vocab.eos_ids, [EOS, STOP])
    assert grammar.accept_tokens("r", ids("o"))
    assert STOP not in allowed(grammar, vocab.width)
    assert not grammar.accept_tokens("r", [STOP])
    assert grammar.accept_tokens("r", ids("k"))
    ends = allowed(grammar, vocab.width)
    assert EOS in ends and STOP in ends and END_OF_TURN not in ends
    assert grammar.validate_tokens([END_OF_TURN]) == []
    assert grammar.accept_tokens("r", [STOP]) and grammar.is_terminated()
    grammar.rollback(1)
    assert not grammar.is_terminated() and allowed(grammar, vocab.width) == ends


def test_the_budget_counts_the_stop_token_as_vllm_does(vocab):
    compiled = compile_spec("REGEX", "[a-z]+", vocab)
    grammar = ConstrainGrammar(compiled, vocab.eos_ids, [EOS], max_tokens=3)
    assert grammar.accept_tokens("r", ids("ab"))
    assert allowed(grammar, vocab.width) == {EOS}
    with pytest.raises(ValueError):
        ConstrainGrammar(compiled, vocab.eos_ids, [EOS], max_tokens=1)


def test_grammar_syntax_rule():
    assert not is_lark('root ::= "a" # comment')
    assert is_lark('start: "a"\n// root ::= "b"')
    assert is_lark('start: "::=" # a literal is not a rule')  # ::= only counts outside comments
    assert not is_lark('# a comment\nroot ::= [a-z]+')


def test_a_bad_spec_names_the_keyword_and_pointer(vocab):
    with pytest.raises(SpecError, match=r"/properties/a/maxLength"):
        compile_spec("JSON", '{"properties": {"a": {"maxLength": -1}}}', vocab)
    with pytest.raises(SpecError, match=r"1:\d+"):
        compile_spec("GRAMMAR", 'root ::= "a', vocab)
    with pytest.raises(SpecError, match="choice"):
        compile_spec("CHOICE", "[]", vocab)


def test_the_name_is_known_to_vllms_config_after_import():
    from vllm.config import StructuredOutputsConfig

    assert StructuredOutputsConfig(backend="constrain").backend == "constrain"
    with pytest.raises(Exception, match="constrain"):
        StructuredOutputsConfig(backend="constrained")


def test_the_name_stays_unknown_when_vllms_processes_would_not_load_the_plugin():
    """With ``VLLM_PLUGINS`` leaving the plugin out, the engine's processes would not get the
    backend: the name is then not registered, and vLLM's config check refuses it at start-up
    (never a run with another backend)."""
    import os
    import subprocess
    import sys

    code = (
        "import constrain.vllm\n"
        "from vllm.config import StructuredOutputsConfig\n"
        "StructuredOutputsConfig(backend='constrain')\n"
    )
    env = dict(os.environ, VLLM_PLUGINS="some_other_plugin")
    run = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=300)
    assert run.returncode != 0
    assert "VLLM_PLUGINS" in run.stderr and "backend" in run.stderr, run.stderr[-2000:]
