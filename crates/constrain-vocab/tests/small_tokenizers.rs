//! Small hand-written `tokenizer.json` files for the cases the real tokenizers at hand do
//! not exercise: a prepended `▁` (Llama 2 / Mistral style), `Metaspace`, a byte-level
//! `add_prefix_space` (RoBERTa style), unsupported models and malformed vocabularies.

use constrain_vocab::{TokenKind, TokenSpelling, Tokenizer, VocabError};
use serde_json::{json, Value};

fn added(id: u32, content: &str, special: bool) -> Value {
    json!({"id": id, "content": content, "single_word": false, "lstrip": false,
           "rstrip": false, "normalized": false, "special": special})
}

/// A SentencePiece-style BPE with byte fallback: `<unk> <s> </s>`, `<0x00>`..`<0xFF>`
/// (ids 3..=258), then `▁ a b ▁a ▁b`.
fn sentencepiece(normalizer: Value, pre_tokenizer: Value, decoder: Value) -> Value {
    let mut vocab = serde_json::Map::new();
    for (id, token) in ["<unk>", "<s>", "</s>"].iter().enumerate() {
        vocab.insert(token.to_string(), json!(id));
    }
    for byte in 0..=255u32 {
        vocab.insert(format!("<0x{byte:02X}>"), json!(3 + byte));
    }
    for (i, token) in ["▁", "a", "b", "▁a", "▁b"].iter().enumerate() {
        vocab.insert(token.to_string(), json!(259 + i));
    }
    json!({
        "version": "1.0", "truncation": null, "padding": null,
        "added_tokens": [added(0, "<unk>", true), added(1, "<s>", true), added(2, "</s>", true)],
        "normalizer": normalizer,
        "pre_tokenizer": pre_tokenizer,
        "post_processor": {"type": "TemplateProcessing",
            "single": [{"SpecialToken": {"id": "<s>", "type_id": 0}}, {"Sequence": {"id": "A", "type_id": 0}}],
            "pair": [{"Sequence": {"id": "A", "type_id": 0}}, {"Sequence": {"id": "B", "type_id": 1}}],
            "special_tokens": {"<s>": {"id": "<s>", "ids": [1], "tokens": ["<s>"]}}},
        "decoder": decoder,
        "model": {"type": "BPE", "dropout": null, "unk_token": "<unk>",
            "continuing_subword_prefix": null, "end_of_word_suffix": null,
            "fuse_unk": true, "byte_fallback": true, "vocab": vocab,
            "merges": ["▁ a", "▁ b"]}
    })
}

fn load(json: &Value) -> Result<Tokenizer, VocabError> {
    Tokenizer::from_json_bytes(json.to_string().as_bytes())
}

fn llama2_style() -> Value {
    sentencepiece(
        json!({"type": "Sequence", "normalizers": [
            {"type": "Prepend", "prepend": "▁"},
            {"type": "Replace", "pattern": {"String": " "}, "content": "▁"}]}),
        Value::Null,
        json!({"type": "Sequence", "decoders": [
            {"type": "Replace", "pattern": {"String": "▁"}, "content": " "},
            {"type": "ByteFallback"}, {"type": "Fuse"},
            {"type": "Strip", "content": " ", "start": 1, "stop": 0}]}),
    )
}

#[test]
fn prepended_space_is_not_added() {
    let tok = load(&llama2_style()).expect("loads");
    assert!(matches!(
        tok.spelling(),
        TokenSpelling::SentencePiece {
            space_marker: '▁'
        }
    ));
    // With the dummy prefix the ids would be `▁a ▁b`, spelling " a b".
    assert_eq!(tok.encode("a b").unwrap(), [260, 263]);
    assert_eq!(tok.decode_bytes(&[260, 263]), b"a b");
    assert_eq!(tok.encode(" a").unwrap(), [262]);
    assert_eq!(tok.decode_bytes(&[262]), b" a");
}

#[test]
fn sentencepiece_bytes_kinds_and_byte_fallback() {
    let tok = load(&llama2_style()).expect("loads");
    let vocab = tok.vocabulary();
    assert_eq!(vocab.len(), 264);
    assert_eq!(vocab.token_bytes(3 + 0x41), Some(&b"A"[..]));
    assert_eq!(vocab.token_bytes(3 + 0xF0), Some(&[0xF0u8][..]));
    assert_eq!(vocab.token_bytes(259), Some(&b" "[..]));
    assert_eq!(vocab.kind(0), Some(TokenKind::Special));
    assert_eq!(vocab.kind(1), Some(TokenKind::Special));
    assert_eq!(vocab.kind(2), Some(TokenKind::EndOfSequence));
    assert_eq!(vocab.eos_tokens(), &[2]);
    for text in ["é", "a\u{1F600}b", " a  b\n"] {
        let ids = tok.encode(text).unwrap();
        assert_eq!(
            tok.decode_bytes(&ids),
            text.as_bytes(),
            "{text:?} -> {ids:?}"
        );
    }
    // No BOS even though the post-processor would add one.
    assert_eq!(tok.encode("ab").unwrap(), [260, 261]);
}

#[test]
fn metaspace_prepend_scheme_is_switched_off() {
    let metaspace = json!({"type": "Metaspace", "replacement": "▁",
                           "prepend_scheme": "always", "split": true});
    let tok = load(&sentencepiece(Value::Null, metaspace.clone(), metaspace)).expect("loads");
    assert!(matches!(
        tok.spelling(),
        TokenSpelling::SentencePiece { .. }
    ));
    assert_eq!(tok.encode("a b").unwrap(), [260, 263]);
    assert_eq!(tok.decode_bytes(&tok.encode(" b a").unwrap()), b" b a");
}

#[test]
fn byte_level_add_prefix_space_is_switched_off() {
    let byte_level = json!({"type": "ByteLevel", "add_prefix_space": true,
                            "trim_offsets": true, "use_regex": true});
    let json = json!({
        "version": "1.0", "truncation": null, "padding": null,
        "added_tokens": [added(5, "<|endoftext|>", true)],
        "normalizer": null, "pre_tokenizer": byte_level, "post_processor": null,
        "decoder": byte_level,
        "model": {"type": "BPE", "dropout": null, "unk_token": null,
            "continuing_subword_prefix": null, "end_of_word_suffix": null,
            "fuse_unk": false, "byte_fallback": false,
            "vocab": {"a": 0, "b": 1, "Ġ": 2, "Ġa": 3, "Ġb": 4, "<|endoftext|>": 5},
            "merges": ["Ġ a", "Ġ b"]}
    });
    let tok = load(&json).expect("loads");
    assert_eq!(tok.spelling(), TokenSpelling::ByteLevel);
    assert_eq!(tok.encode("a b").unwrap(), [0, 4]);
    assert_eq!(tok.decode_bytes(&[0, 4]), b"a b");
    assert_eq!(tok.vocabulary().eos_tokens(), &[5]);
}

#[test]
fn truncation_in_the_file_is_ignored() {
    let mut json = llama2_style();
    json["truncation"] =
        json!({"direction": "Right", "max_length": 1, "strategy": "LongestFirst", "stride": 0});
    let tok = load(&json).expect("loads");
    assert_eq!(tok.encode("a b a").unwrap().len(), 3);
}

fn expect_load_error(json: &Value) -> String {
    match load(json) {
        Err(VocabError::Load { message, .. }) => message,
        other => panic!("expected a load error, got {other:?}"),
    }
}

#[test]
fn wordpiece_is_refused_with_a_reason() {
    let json = json!({
        "version": "1.0", "truncation": null, "padding": null, "added_tokens": [],
        "normalizer": null, "pre_tokenizer": {"type": "Whitespace"}, "post_processor": null,
        "decoder": {"type": "WordPiece", "prefix": "##", "cleanup": true},
        "model": {"type": "WordPiece", "unk_token": "[UNK]", "continuing_subword_prefix": "##",
            "max_input_chars_per_word": 100, "vocab": {"[UNK]": 0, "a": 1, "##b": 2}}
    });
    let message = expect_load_error(&json);
    assert!(message.contains("cannot tell"), "{message}");
}

#[test]
fn malformed_vocabularies_are_refused() {
    let mut huge_id = llama2_style();
    huge_id["model"]["vocab"]["<huge>"] = json!(4_000_000_000u32);
    let message = expect_load_error(&huge_id);
    assert!(message.contains("4000000000"), "{message}");

    let mut shared_id = llama2_style();
    shared_id["model"]["vocab"]["▁▁"] = json!(260);
    expect_load_error(&shared_id);

    let mut empty = llama2_style();
    empty["added_tokens"] = json!([]);
    empty["model"]["vocab"] = json!({});
    empty["model"]["merges"] = json!([]);
    empty["model"]["unk_token"] = Value::Null;
    let message = expect_load_error(&empty);
    assert!(message.contains("empty"), "{message}");
}

#[test]
fn encoder_problems_surface_on_encode() {
    // The vocabulary does not depend on the merges; the encoder does.
    let mut bad_merges = llama2_style();
    bad_merges["model"]["merges"] = json!(["x y"]);
    let tok = load(&bad_merges).expect("the vocabulary alone is fine");
    assert_eq!(tok.vocabulary().len(), 264);
    for _ in 0..2 {
        match tok.encode("a") {
            Err(VocabError::Load { message, .. }) => {
                assert!(message.contains("tokenizer"), "{message}")
            }
            other => panic!("expected a load error, got {other:?}"),
        }
    }
}

#[test]
fn added_token_ids_must_match_the_encoder() {
    // The tokenizer library gives an added token missing from the model the next free id
    // (264 here), whatever the file says; encoded ids would then disagree with the vocabulary.
    let mut moved = llama2_style();
    moved["added_tokens"]
        .as_array_mut()
        .unwrap()
        .push(added(300, "<extra>", true));
    let tok = load(&moved).expect("the vocabulary alone is fine");
    assert_eq!(tok.vocabulary().token_bytes(300), Some(&b"<extra>"[..]));
    match tok.encode("a") {
        Err(VocabError::Load { message, .. }) => assert!(message.contains("<extra>"), "{message}"),
        other => panic!("expected a load error, got {other:?}"),
    }
}
