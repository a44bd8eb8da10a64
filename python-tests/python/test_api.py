"""Every public function and method of ``constrain``, and its errors, on small grammars."""

from __future__ import annotations

import json

import numpy as np
import pytest

import constrain


def allowed_ids(bitmask_row: np.ndarray, width: int) -> set[int]:
    bits = np.unpackbits(bitmask_row.view(np.uint8), bitorder="little")[:width]
    return set(np.flatnonzero(bits).tolist())


def token_id(vocab: constrain.Vocabulary, text: bytes) -> int:
    return next(i for i in range(vocab.size) if vocab.token_bytes(i) == text)


# --- Vocabulary -------------------------------------------------------------------------------


def test_from_tokens_kinds_width_and_errors(toy_vocab):
    assert toy_vocab.size == len(toy_vocab)
    assert toy_vocab.eos_ids == [toy_vocab.size - 1]
    assert toy_vocab.token_kind(toy_vocab.size - 1) == "eos"
    assert toy_vocab.token_kind(toy_vocab.size - 2) == "special"
    assert toy_vocab.token_kind(0) == "text" and toy_vocab.token_bytes(0) == b" "
    assert toy_vocab.token_bytes(10_000) is None and toy_vocab.token_kind(10_000) is None

    wide = constrain.Vocabulary.from_tokens([b"a", None, b"b", b"<e>"], [3], width=64)
    assert (wide.size, wide.width) == (4, 64)
    assert wide.token_bytes(1) is None

    with pytest.raises(constrain.VocabularyError, match="logits width 2"):
        constrain.Vocabulary.from_tokens([b"a", b"b", b"c"], [], width=2)
    with pytest.raises(ValueError, match="eos_ids holds 7"):
        constrain.Vocabulary.from_tokens([b"a"], [7])
    with pytest.raises(ValueError, match="special_ids holds 1"):
        constrain.Vocabulary.from_tokens([b"a", None], [], special_ids=[1])


def test_from_tokenizer_json_and_errors(shared, tmp_path):
    vocab = constrain.Vocabulary.from_tokenizer_json(shared / "tokenizers" / "llama3_1" / "tokenizer.json")
    assert vocab.size == 128256 and vocab.width == 128256
    assert 128009 in vocab.eos_ids  # <|eot_id|>
    assert vocab.token_bytes(128000) == b"<|begin_of_text|>" and vocab.token_kind(128000) == "special"
    padded = constrain.Vocabulary.from_tokenizer_json(
        shared / "tokenizers" / "llama3_1" / "tokenizer.json", width=128320, eos_ids=[128000]
    )
    assert padded.width == 128320 and 128000 in padded.eos_ids

    with pytest.raises(constrain.VocabularyError, match="no_such_file"):
        constrain.Vocabulary.from_tokenizer_json(tmp_path / "no_such_file.json")
    bad = tmp_path / "tokenizer.json"
    bad.write_text('{"model": {"vocab": ')
    with pytest.raises(constrain.VocabularyError, match="line 1"):
        constrain.Vocabulary.from_tokenizer_json(bad)


def test_from_huggingface_fast_tokenizer_matches_the_file(shared):
    transformers = pytest.importorskip("transformers")
    path = shared / "tokenizers" / "qwen3" / "tokenizer.json"
    hf = transformers.PreTrainedTokenizerFast(tokenizer_file=str(path), eos_token="<|im_end|>")
    from_hf = constrain.Vocabulary.from_huggingface(hf)
    from_file = constrain.Vocabulary.from_tokenizer_json(path)
    assert from_hf.size == from_file.size
    assert hf.eos_token_id in from_hf.eos_ids
    for i in range(0, from_file.size, 97):
        assert from_hf.token_bytes(i) == from_file.token_bytes(i), i
    # The tokenizer's own encoding spells text with these bytes.
    text = "héllo wörld, {\"a\": 1}"
    ids = hf.encode(text, add_special_tokens=False)
    assert b"".join(from_hf.token_bytes(i) for i in ids).decode() == text


# --- Compiling --------------------------------------------------------------------------------


def test_compile_functions_and_options(toy_vocab):
    schema = {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}
    for compiled in [
        constrain.compile_json_schema(schema, toy_vocab),
        constrain.compile_json_schema(json.dumps(schema), toy_vocab, whitespace="compact"),
        constrain.compile_json_schema(schema, toy_vocab, indent=2, strict=True, escapes="canonical"),
        constrain.compile_json_schema(
            schema, toy_vocab, separators=(", ", ": "), whitespace="compact", property_order="any",
            max_compile_time=10.0, lenient=False, assert_formats=False, max_untyped_depth=3,
        ),
        constrain.compile_any_json(toy_vocab, whitespace="unbounded"),
        constrain.compile_regex(r"[0-9]{2,3}", toy_vocab),
        constrain.compile_gbnf('root ::= "yes" | "no"', toy_vocab),
        constrain.compile_lark('start: "yes" | "no"', toy_vocab),
    ]:
        assert isinstance(compiled, constrain.CompiledGrammar)
        assert compiled.vocab_width == toy_vocab.width
        assert compiled.mask_words == (toy_vocab.width + 31) // 32
    # Options change the language: compact allows no space after '{'.
    loose = constrain.Matcher(constrain.compile_json_schema(schema, toy_vocab))
    tight = constrain.Matcher(constrain.compile_json_schema(schema, toy_vocab, whitespace="compact"))
    assert loose.accept_string("{ ") and not tight.accept_string("{ ")
    # An annotation is reported as a warning.
    compiled = constrain.compile_json_schema({"type": "string", "x-vendor": 1}, toy_vocab)
    assert any("x-vendor" in w for w in compiled.warnings)
    # A resource a $ref names.
    with_ref = constrain.compile_json_schema(
        {"$ref": "https://example.com/n.json"}, toy_vocab,
        resources={"https://example.com/n.json": {"type": "integer"}},
    )
    assert constrain.Matcher(with_ref).accept_string("42")


def test_compile_errors_say_what_and_where(toy_vocab):
    with pytest.raises(constrain.CompileError) as e:
        constrain.compile_json_schema('{"type": "object",\n  "properties": }', toy_vocab)
    assert (e.value.kind, e.value.line, e.value.column) == ("schema", 2, 17)

    with pytest.raises(constrain.CompileError) as e:
        constrain.compile_json_schema(
            {"properties": {"a": {"type": "string", "format": "regex"}}}, toy_vocab
        )
    assert e.value.keyword == "format" and e.value.pointer == "/properties/a/format"

    with pytest.raises(constrain.CompileError) as e:
        constrain.compile_json_schema({"properties": {"a": {"minimum": "x"}}}, toy_vocab)
    assert e.value.pointer == "/properties/a/minimum" and e.value.keyword is None

    with pytest.raises(constrain.CompileError) as e:
        constrain.compile_json_schema({"$ref": "#/$defs/missing"}, toy_vocab)
    assert e.value.keyword == "$ref"

    with pytest.raises(constrain.CompileError) as e:
        constrain.compile_gbnf('root ::= "a" item\nitem ::= [z-a]', toy_vocab)
    assert e.value.kind == "gbnf" and e.value.line == 2 and e.value.column is not None

    with pytest.raises(constrain.CompileError) as e:
        constrain.compile_gbnf('start ::= "a"', toy_vocab)
    assert e.value.kind == "gbnf" and "root" in str(e.value)

    lark = constrain.Matcher(constrain.compile_lark('start: "a" NUM\n%import common.INT -> NUM', toy_vocab))
    assert lark.accept_string("a42") and lark.is_accepting()
    with pytest.raises(constrain.CompileError) as e:
        constrain.compile_lark('start: "a"\nitem: /(?<=a)b/', toy_vocab)
    assert e.value.kind == "lark" and e.value.line == 2 and e.value.column is not None

    with pytest.raises(constrain.CompileError) as e:
        constrain.compile_regex("a(b", toy_vocab)
    assert e.value.kind == "regex" and "a(b" in str(e.value)

    with pytest.raises(TypeError, match='unknown schema option "whitespaces"'):
        constrain.compile_json_schema({}, toy_vocab, whitespaces="compact")
    with pytest.raises(ValueError, match="escapes"):
        constrain.compile_json_schema({}, toy_vocab, escapes="some")
    with pytest.raises(ValueError, match="numbers"):
        constrain.compile_json_schema({}, toy_vocab, numbers="some")
    with pytest.raises(ValueError, match="separators"):
        constrain.compile_json_schema({}, toy_vocab, separators=",")
    with pytest.raises(ValueError, match="max_whitespace"):
        constrain.compile_json_schema({}, toy_vocab, whitespace="compact", max_whitespace=2)
    with pytest.raises(TypeError, match="schema must be JSON text"):
        constrain.compile_json_schema(object(), toy_vocab)
    with pytest.raises(TypeError):
        constrain.compile_json_schema({}, "not a vocabulary")


# --- Matcher ----------------------------------------------------------------------------------


def test_matcher_steps_rollback_reset_copy(toy_vocab):
    compiled = constrain.compile_regex(r"ab(c|d)", toy_vocab)
    a, b, c, d, x = (token_id(toy_vocab, t) for t in (b"a", b"b", b"c", b"d", b"x"))
    eos = toy_vocab.eos_ids[0]
    m = constrain.Matcher(compiled)
    assert not m.accept_token(x) and m.num_steps == 0  # illegal: False, unchanged
    assert not m.accept_token(eos)
    assert m.accept_token(a) and m.num_steps == 1
    assert m.forced_tokens() == [b]
    fork = m.copy()
    assert m.accept_token(b) and m.accept_token(c)
    assert m.is_accepting() and m.is_finished() and not m.is_terminated()
    assert fork.num_steps == 1 and not fork.is_accepting()  # the copy is independent
    assert m.accept_token(eos) and m.is_terminated() and not m.is_accepting()
    assert not m.accept_token(a)  # nothing after the end
    m.rollback(2)
    assert m.num_steps == 2 and m.accept_token(d) and m.is_accepting()
    with pytest.raises(ValueError, match="only 3 were accepted"):
        m.rollback(4)
    with pytest.raises(ValueError, match="outside the vocabulary"):
        m.accept_token(toy_vocab.width + 5)
    with pytest.raises(ValueError, match="negative"):
        m.accept_token(-1)
    m.reset()
    assert m.num_steps == 0 and m.accept_string("ab") and m.accept_string(b"c")
    assert not m.accept_string("x") and m.num_steps == 2
    with pytest.raises(TypeError):
        m.accept_string(3)


def test_max_tokens_ends_the_output_complete(toy_vocab):
    compiled = constrain.compile_regex(r"\[[a-z]+(, [a-z]+)*\]", toy_vocab)
    assert constrain.Matcher(compiled).shortest_completion() == b"[a]"
    with pytest.raises(ValueError, match="needs at least 3 tokens"):
        constrain.Matcher(compiled, max_tokens=2)
    width = toy_vocab.width
    eos = toy_vocab.eos_ids[0]
    for budget in range(3, 12):
        m = constrain.Matcher(compiled, max_tokens=budget)
        bitmask = constrain.allocate_token_bitmask(1, width)
        text = b""
        while True:
            m.fill_next_token_bitmask(bitmask)
            ids = sorted(allowed_ids(bitmask[0], width) - {eos})
            if not ids:
                break
            # Always go on with a letter or a comma when one is allowed: never close early.
            pick = next((i for i in ids if toy_vocab.token_bytes(i) in (b",", b"q")), ids[0])
            assert m.accept_token(pick)
            text += toy_vocab.token_bytes(pick)
        assert m.tokens_left() == 0 or m.is_finished()
        assert m.is_accepting(), text
        assert len(text) >= 3


def test_special_tokens_are_never_text(toy_vocab):
    m = constrain.Matcher(constrain.compile_any_json(toy_vocab))
    bitmask = constrain.allocate_token_bitmask(1, toy_vocab.width)
    m.fill_next_token_bitmask(bitmask)
    allowed = allowed_ids(bitmask[0], toy_vocab.width)
    assert toy_vocab.size - 2 not in allowed  # <special>
    assert toy_vocab.eos_ids[0] not in allowed  # nothing complete yet
    assert token_id(toy_vocab, b"{") in allowed and token_id(toy_vocab, b"x") not in allowed


# --- Bitmasks ---------------------------------------------------------------------------------


def test_allocate_and_fill_in_place(toy_vocab):
    bitmask = constrain.allocate_token_bitmask(3, 100)
    assert bitmask.dtype == np.int32 and bitmask.shape == (3, 4) and (bitmask == -1).all()
    with pytest.raises(ValueError):
        constrain.allocate_token_bitmask(1, 0)

    compiled = constrain.compile_regex(r"[0-9]+", toy_vocab)
    m = constrain.Matcher(compiled)
    bitmask = constrain.allocate_token_bitmask(3, toy_vocab.width)
    before = bitmask.__array_interface__["data"][0]
    m.fill_next_token_bitmask(bitmask, 1)
    assert bitmask.__array_interface__["data"][0] == before
    digits = {token_id(toy_vocab, str(i).encode()) for i in range(10)}
    assert allowed_ids(bitmask[1], toy_vocab.width) == digits
    assert (bitmask[0] == -1).all() and (bitmask[2] == -1).all()  # other rows untouched
    one_row = np.zeros(compiled.mask_words, dtype=np.int32)
    m.fill_next_token_bitmask(one_row)
    assert allowed_ids(one_row, toy_vocab.width) == digits

    # Wider rows (a model whose logits are wider): the padding is disallowed.
    wide = constrain.allocate_token_bitmask(1, toy_vocab.width + 200)
    m.fill_next_token_bitmask(wide)
    assert allowed_ids(wide[0], toy_vocab.width + 200) == digits

    with pytest.raises(ValueError, match="needs"):
        m.fill_next_token_bitmask(np.zeros((1, 1), dtype=np.int32))
    with pytest.raises(ValueError, match="index 3 is out of range"):
        m.fill_next_token_bitmask(bitmask, 3)
    with pytest.raises(TypeError, match="int32"):
        m.fill_next_token_bitmask(bitmask.astype(np.int64))
    with pytest.raises(ValueError, match="C-contiguous"):
        m.fill_next_token_bitmask(np.zeros((2, 2 * compiled.mask_words), dtype=np.int32)[:, ::2])
    read_only = bitmask.copy()
    read_only.flags.writeable = False
    with pytest.raises(TypeError, match="writable"):
        m.fill_next_token_bitmask(read_only)
    with pytest.raises(TypeError, match="NumPy array or a PyTorch tensor"):
        m.fill_next_token_bitmask([[0] * compiled.mask_words])


def test_fill_from_torch_tensors_in_place(toy_vocab):
    torch = pytest.importorskip("torch")
    m = constrain.Matcher(constrain.compile_regex(r"[0-9]+", toy_vocab))
    tensor = torch.from_numpy(constrain.allocate_token_bitmask(2, toy_vocab.width))
    m.fill_next_token_bitmask(tensor, 1)
    expected = constrain.allocate_token_bitmask(1, toy_vocab.width)
    m.fill_next_token_bitmask(expected)
    assert (tensor[1].numpy() == expected[0]).all() and (tensor[0] == -1).all()
    constrain.fill_next_token_bitmasks([m], tensor, [0])
    assert (tensor[0].numpy() == expected[0]).all()


def test_batch_fill_equals_single_fills(llama_vocab):
    schemas = [
        {"type": "object", "properties": {"n": {"type": "integer"}}},
        {"type": "array", "items": {"type": "string", "maxLength": 3}},
        {"enum": ["red", "green", 3]},
    ]
    compiled = [constrain.compile_json_schema(s, llama_vocab) for s in schemas]
    matchers = [constrain.Matcher(c) for c in compiled for _ in range(3)]
    texts = ['{"n": 1', "{", '{"n"', "[", '["ab", "', '["a"', '"gr', "", "3"]
    for m, t in zip(matchers, texts):
        assert m.accept_string(t), t
    batch = constrain.allocate_token_bitmask(len(matchers), llama_vocab.width)
    constrain.fill_next_token_bitmasks(matchers, batch)
    for i, m in enumerate(matchers):
        single = constrain.allocate_token_bitmask(1, llama_vocab.width)
        m.fill_next_token_bitmask(single)
        assert (single[0] == batch[i]).all(), i

    # indices: matcher i fills row indices[i]; other rows are untouched.
    rows = constrain.allocate_token_bitmask(12, llama_vocab.width)
    constrain.fill_next_token_bitmasks(matchers[:3], rows, [11, 0, 5])
    assert (rows[11] == batch[0]).all() and (rows[0] == batch[1]).all() and (rows[5] == batch[2]).all()
    assert (rows[1] == -1).all()
    with pytest.raises(ValueError, match="given twice"):
        constrain.fill_next_token_bitmasks(matchers[:2], rows, [1, 1])
    with pytest.raises(ValueError, match="out of range"):
        constrain.fill_next_token_bitmasks(matchers[:1], rows, [12])
    with pytest.raises(ValueError, match="2 matchers but 1 indices"):
        constrain.fill_next_token_bitmasks(matchers[:2], rows, [1])
    with pytest.raises(ValueError, match="bitmask has 12 rows"):
        constrain.fill_next_token_bitmasks(matchers + [m.copy() for m in matchers], rows)
    with pytest.raises(ValueError, match=r"matchers\[1\] is already in use"):
        constrain.fill_next_token_bitmasks([matchers[0], matchers[0]], rows)
    constrain.fill_next_token_bitmasks([], rows)  # nothing to do


# --- Masking logits ---------------------------------------------------------------------------


def reference_mask(logits: np.ndarray, bitmask: np.ndarray) -> np.ndarray:
    """The plain NumPy expression: -inf where the bit is clear or past the bitmask."""
    width = logits.shape[-1]
    bits = np.unpackbits(bitmask.view(np.uint8), axis=-1, bitorder="little").astype(bool)
    allowed = np.zeros(logits.shape, dtype=bool)
    covered = min(width, bits.shape[-1])
    allowed[..., :covered] = bits[..., :covered]
    return np.where(allowed, logits, -np.inf).astype(logits.dtype)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_apply_numpy(dtype):
    rng = np.random.default_rng(1)
    logits = rng.normal(size=(4, 1000)).astype(dtype)
    bitmask = rng.integers(-(2**31), 2**31, size=(4, 32), dtype=np.int64).astype(np.int32)
    bitmask[1] = -1
    bitmask[2] = 0
    expected = reference_mask(logits, bitmask)
    view = logits  # masked in place
    constrain.apply_token_bitmask_inplace(logits, bitmask)
    assert view is logits and np.array_equal(logits, expected)

    # Logits wider than the bitmask: the rest is disallowed; narrower: extra bits ignored.
    wide = rng.normal(size=(4, 1100)).astype(dtype)
    expected = reference_mask(wide, bitmask)
    constrain.apply_token_bitmask_inplace(wide, bitmask)
    assert np.array_equal(wide, expected) and np.isneginf(wide[:, 1024:]).all()

    one = rng.normal(size=1000).astype(dtype)
    expected = reference_mask(one, bitmask[0])
    constrain.apply_token_bitmask_inplace(one, bitmask[0])
    assert np.array_equal(one, expected)


def test_apply_indices_and_errors():
    rng = np.random.default_rng(2)
    logits = rng.normal(size=(4, 64)).astype(np.float32)
    original = logits.copy()
    bitmask = np.zeros((4, 2), dtype=np.int32)
    constrain.apply_token_bitmask_inplace(logits, bitmask, indices=[2])
    assert np.isneginf(logits[2]).all()
    assert np.array_equal(np.delete(logits, 2, 0), np.delete(original, 2, 0))
    with pytest.raises(ValueError, match="3 rows but the bitmask has 4"):
        constrain.apply_token_bitmask_inplace(logits[:3], bitmask)
    with pytest.raises(ValueError, match="out of range"):
        constrain.apply_token_bitmask_inplace(logits, bitmask[:2], indices=[3])
    with pytest.raises(TypeError, match="float16"):
        constrain.apply_token_bitmask_inplace(logits.astype(np.float16), bitmask)
    with pytest.raises(TypeError, match="int32"):
        constrain.apply_token_bitmask_inplace(logits, bitmask.astype(np.uint8))


@pytest.mark.parametrize("dtype", ["float32", "bfloat16", "float16"])
def test_apply_torch(dtype):
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(3)
    base = rng.normal(size=(3, 1000)).astype(np.float32)
    bitmask = rng.integers(-(2**31), 2**31, size=(3, 32), dtype=np.int64).astype(np.int32)
    logits = torch.from_numpy(base.copy()).to(getattr(torch, dtype))
    expected = torch.from_numpy(reference_mask(logits.float().numpy(), bitmask)).to(logits.dtype)
    pointer = logits.data_ptr()
    constrain.apply_token_bitmask_inplace(logits, torch.from_numpy(bitmask))
    assert logits.data_ptr() == pointer and torch.equal(logits, expected)

    partial = torch.from_numpy(base.copy()).to(getattr(torch, dtype))
    constrain.apply_token_bitmask_inplace(partial, bitmask, indices=[0, 2])
    assert torch.equal(partial[1], torch.from_numpy(base[1]).to(partial.dtype))
    assert torch.equal(partial[[0, 2]], expected[[0, 2]])


def mask_cases(rng):
    """(logits, bitmask, indices) cases: wider and narrower logits than the bits, one row,
    some rows, no rows, every bit set and none."""
    bitmask = rng.integers(-(2**31), 2**31, size=(4, 32), dtype=np.int64).astype(np.int32)
    bitmask[1] = -1
    bitmask[2] = 0
    yield rng.normal(size=(4, 1000)).astype(np.float32), bitmask, None
    yield rng.normal(size=(4, 1100)).astype(np.float32), bitmask, None
    yield rng.normal(size=1000).astype(np.float32), bitmask[0], None
    yield rng.normal(size=(4, 1000)).astype(np.float32), bitmask, [0, 2]
    yield rng.normal(size=(4, 1000)).astype(np.float32), bitmask[:2], [1]
    yield rng.normal(size=(4, 1000)).astype(np.float32), bitmask, []


def test_torch_path_on_cpu_float32_matches_the_rust_path():
    # The code that masks CUDA logits, run on the CPU: the same bits as the Rust code's.
    torch = pytest.importorskip("torch")
    from constrain._torch_mask import apply_with_torch

    for logits, bitmask, indices in mask_cases(np.random.default_rng(4)):
        native = logits.copy()
        constrain.apply_token_bitmask_inplace(native, bitmask, indices)
        tensor = torch.from_numpy(logits.copy())
        pointer = tensor.data_ptr()
        apply_with_torch(tensor, torch.from_numpy(bitmask), indices)
        assert tensor.data_ptr() == pointer
        assert np.array_equal(tensor.numpy(), native), (logits.shape, indices)


def test_torch_path_errors_match_the_rust_path():
    torch = pytest.importorskip("torch")
    from constrain._torch_mask import apply_with_torch

    logits = torch.zeros((4, 64), dtype=torch.bfloat16)
    bitmask = np.zeros((4, 2), dtype=np.int32)
    with pytest.raises(ValueError, match="3 rows but the bitmask has 4"):
        apply_with_torch(logits[:3], bitmask)
    with pytest.raises(ValueError, match="out of range"):
        apply_with_torch(logits, bitmask[:2], indices=[3])
    with pytest.raises(TypeError, match="int32"):
        apply_with_torch(logits, bitmask.astype(np.uint8))
    with pytest.raises(TypeError, match="floating"):
        apply_with_torch(torch.zeros((4, 64), dtype=torch.int64), bitmask)
    assert not torch.isinf(logits).any()


def test_cuda_logits_are_masked_on_the_gpu():
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("no CUDA device")
    for logits, bitmask, indices in mask_cases(np.random.default_rng(5)):
        expected = logits.copy()
        constrain.apply_token_bitmask_inplace(expected, bitmask, indices)
        for dtype in (torch.float32, torch.bfloat16):
            tensor = torch.from_numpy(logits).to("cuda", dtype)
            pointer = tensor.data_ptr()
            constrain.apply_token_bitmask_inplace(tensor, bitmask, indices)
            assert tensor.is_cuda and tensor.data_ptr() == pointer
            reference = torch.from_numpy(expected).to(dtype)
            assert torch.equal(tensor.cpu(), reference), (logits.shape, indices, dtype)


# --- Sampler ----------------------------------------------------------------------------------


def test_sampler_greedy_seeded_and_errors(toy_vocab):
    compiled = constrain.compile_regex(r"[0-9]{3}", toy_vocab)
    digits = [token_id(toy_vocab, str(i).encode()) for i in range(10)]
    logits = np.zeros(toy_vocab.width, dtype=np.float32)
    logits[token_id(toy_vocab, b"x")] = 100.0  # the model's favourite is not allowed
    logits[digits[7]] = 5.0
    greedy = constrain.Sampler(compiled, temperature=0.0)
    assert greedy.sample(logits) == digits[7]

    def run(seed: int) -> list[int]:
        sampler = constrain.Sampler(compiled, temperature=1.5, top_k=5, top_p=0.9, min_p=0.01,
                                    typical_p=0.99, repeat_penalty=1.1, frequency_penalty=0.1,
                                    presence_penalty=0.1, seed=seed)
        out = []
        while not sampler.is_finished():
            token = sampler.sample(np.random.default_rng(len(out)).normal(size=toy_vocab.width).astype(np.float32))
            sampler.accept(token)
            out.append(token)
        assert sampler.is_accepting()
        return out

    first = run(7)
    assert len(first) == 3 and all(t in digits for t in first)
    assert run(7) == first
    assert any(run(seed) != first for seed in range(8, 16))

    with pytest.raises(ValueError, match="top_p"):
        constrain.Sampler(compiled, top_p=1.5)
    with pytest.raises(ValueError, match="temperature"):
        constrain.Sampler(compiled, temperature=-1.0)
    with pytest.raises(ValueError, match="invalid setting repeat_penalty = 0"):
        constrain.Sampler(compiled, repeat_penalty=0.0)
    with pytest.raises(ValueError, match="not allowed"):
        greedy.accept(token_id(toy_vocab, b"x"))
    with pytest.raises(ValueError, match="1-D"):
        greedy.sample(np.zeros((2, toy_vocab.width), dtype=np.float32))
    with pytest.raises(TypeError, match="float32"):
        greedy.sample(np.zeros(toy_vocab.width, dtype=np.float64))
    nan = logits.copy()
    nan[digits[1]] = np.nan
    with pytest.raises(ValueError, match="NaN"):
        greedy.sample(nan)
    none_allowed = np.full(toy_vocab.width, -np.inf, dtype=np.float32)
    with pytest.raises(ValueError, match="allows no token"):
        greedy.sample(none_allowed)


def test_sampler_reads_torch_and_forced_tokens(toy_vocab):
    torch = pytest.importorskip("torch")
    compiled = constrain.compile_regex(r"ab[0-9]", toy_vocab)
    sampler = constrain.Sampler(compiled, temperature=0.0)
    assert sampler.forced_tokens() == [token_id(toy_vocab, b"a"), token_id(toy_vocab, b"b")]
    for t in sampler.forced_tokens():
        sampler.accept(t)
    logits = torch.zeros(toy_vocab.width)
    logits[token_id(toy_vocab, b"4")] = 1.0
    assert sampler.sample(logits) == token_id(toy_vocab, b"4")


def test_sampler_trace_matches_the_logits_and_the_mask(toy_vocab):
    compiled = constrain.compile_regex(r"ab[0-9]{2}", toy_vocab)
    sampler = constrain.Sampler(compiled, temperature=0.7, seed=3, trace=True)
    matcher = constrain.Matcher(compiled)
    bitmask = constrain.allocate_token_bitmask(1, toy_vocab.width)
    rng = np.random.default_rng(0)
    expected_removed = []
    for t in sampler.forced_tokens():
        sampler.accept(t)
        matcher.accept_token(t)
    while not sampler.is_finished():
        logits = rng.normal(size=toy_vocab.width).astype(np.float32) * 3
        matcher.fill_next_token_bitmask(bitmask)
        allowed = np.array([(bitmask[0, i // 32] >> (i % 32)) & 1 for i in range(toy_vocab.width)], dtype=bool)
        p = np.exp(logits.astype(np.float64) - logits.max())
        p /= p.sum()
        expected_removed.append(p[~allowed].sum())
        token = sampler.sample(logits)
        sampler.accept(token)
        matcher.accept_token(token)
    trace = sampler.trace
    assert [step["origin"] for step in trace] == ["forced", "forced", "sampled", "sampled"]
    assert [step["text"] for step in trace[:2]] == ["a", "b"]
    assert trace[0]["removed_mass"] is None and trace[0]["before_mask"] == []
    for step, removed in zip(trace[2:], expected_removed):
        assert step["removed_mass"] == pytest.approx(removed, abs=1e-6)
        assert step["allowed"] == 10
        assert all(c["text"].isdigit() for c in step["after_mask"])
        assert len(step["before_mask"]) == 5
        assert step["token"] in [c["token"] for c in step["after_funnel"]]
    assert constrain.Sampler(compiled).trace == []


def test_numbers_are_integer_literals_by_default(toy_vocab):
    schema = {"type": "integer"}

    def accepts(text, **options):
        m = constrain.Matcher(constrain.compile_json_schema(schema, toy_vocab, **options))
        return m.accept_string(text) and m.is_accepting()

    for text in ["0", "-5", "9223372036854775807"]:
        assert accepts(text) and accepts(text, numbers="any"), text
    for text in ["1.0", "-0", "10000000000000000000"]:
        assert not accepts(text), text
        assert accepts(text, numbers="any"), text
    assert not accepts("1e3") and not accepts("1e3", numbers="any")
