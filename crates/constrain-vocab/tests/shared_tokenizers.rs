//! The five real tokenizers of the shared reference data. Each test skips (with a note)
//! when that data is absent, unless `CONSTRAIN_REQUIRE_SHARED=1`.

mod common;

use common::{assert_round_trips, assert_token, kind_counts};
use constrain_vocab::TokenKind::{EndOfSequence, Special, Text};
use constrain_vocab::{TokenSpelling, Tokenizer};

/// Loads shared tokenizer `name`, or `None` (after a note) without shared data.
fn load(name: &str) -> Option<Tokenizer> {
    constrain_testdata::require_shared_or_skip(name)?;
    let path = constrain_testdata::shared_tokenizer(name)?;
    Some(Tokenizer::from_file(&path).unwrap_or_else(|e| panic!("{name}: {e}")))
}

#[test]
fn llama3_1() {
    let Some(tok) = load("llama3_1") else { return };
    assert_eq!(tok.spelling(), TokenSpelling::ByteLevel);
    assert_eq!(tok.vocabulary().len(), 128256);
    assert_eq!(kind_counts(&tok), (128000, 254, 2));
    // This vocabulary predates `<|eom_id|>`: 128008 is still reserved.
    assert_eq!(tok.vocabulary().eos_tokens(), &[128001, 128009]);
    assert_token(&tok, 128000, Special, b"<|begin_of_text|>");
    assert_token(&tok, 128001, EndOfSequence, b"<|end_of_text|>");
    assert_token(&tok, 128008, Special, b"<|reserved_special_token_4|>");
    assert_token(&tok, 128009, EndOfSequence, b"<|eot_id|>");
    assert_token(&tok, 128006, Special, b"<|start_header_id|>");
    assert_token(&tok, 220, Text, b" ");
    assert_token(&tok, 256, Text, b"  ");
    assert_eq!(tok.encode("Hello world").unwrap(), [9906, 1917]);
    assert_round_trips(&tok, "llama3_1");
}

#[test]
fn qwen3() {
    let Some(tok) = load("qwen3") else { return };
    assert_eq!(tok.spelling(), TokenSpelling::ByteLevel);
    assert_eq!(tok.vocabulary().len(), 151669);
    assert_eq!(kind_counts(&tok), (151655, 12, 2));
    assert_eq!(tok.vocabulary().eos_tokens(), &[151643, 151645]);
    assert_token(&tok, 151643, EndOfSequence, b"<|endoftext|>");
    assert_token(&tok, 151644, Special, b"<|im_start|>");
    assert_token(&tok, 151645, EndOfSequence, b"<|im_end|>");
    assert_token(&tok, 151657, Text, b"<tool_call>");
    assert_token(&tok, 151668, Text, b"</think>");
    assert_eq!(tok.encode("Hello world").unwrap(), [9707, 1879]);
    assert_round_trips(&tok, "qwen3");
    // The committed fixture is this very tokenizer.
    let fixture = Tokenizer::from_file(constrain_testdata::fixture_tokenizer()).unwrap();
    assert!(fixture.vocabulary().iter().eq(tok.vocabulary().iter()));
}

#[test]
fn gpt4o() {
    let Some(tok) = load("gpt4o") else { return };
    assert_eq!(tok.spelling(), TokenSpelling::ByteLevel);
    let vocab = tok.vocabulary();
    assert_eq!(vocab.len(), 200019);
    // Ids 199998 and 200000..=200017 are unused.
    assert_eq!(kind_counts(&tok), (199998, 1, 1));
    for gap in [199998, 200000, 200009, 200017] {
        assert_eq!(vocab.token_bytes(gap), None, "id {gap}");
        assert_eq!(vocab.kind(gap), None, "id {gap}");
    }
    assert_eq!(vocab.eos_tokens(), &[199999]);
    assert_token(&tok, 199999, EndOfSequence, b"<|endoftext|>");
    assert_token(&tok, 200018, Special, b"<|endofprompt|>");
    assert_eq!(tok.encode("Hello world").unwrap(), [13225, 2375]);
    assert_round_trips(&tok, "gpt4o");
}

#[test]
fn deepseek_v3() {
    let Some(tok) = load("deepseek_v3") else {
        return;
    };
    assert_eq!(tok.spelling(), TokenSpelling::ByteLevel);
    assert_eq!(tok.vocabulary().len(), 128815);
    // Special: 3 at the start, 800 place holders, `<|EOT|>`; 14 non-special added tokens.
    assert_eq!(kind_counts(&tok), (128011, 802, 2));
    assert_eq!(tok.vocabulary().eos_tokens(), &[1, 128805]);
    assert_token(&tok, 0, Special, "<｜begin▁of▁sentence｜>".as_bytes());
    assert_token(&tok, 1, EndOfSequence, "<｜end▁of▁sentence｜>".as_bytes());
    assert_token(&tok, 128805, EndOfSequence, b"<|EOT|>");
    assert_token(&tok, 128000, Special, "<｜place▁holder▁no▁0｜>".as_bytes());
    // Non-special added tokens are text, as written (not byte-level decoded).
    assert_token(&tok, 128800, Text, "<｜fim▁hole｜>".as_bytes());
    assert_token(&tok, 128814, Text, "<｜tool▁sep｜>".as_bytes());
    assert_eq!(tok.encode("Hello world").unwrap(), [19923, 2058]);
    assert_round_trips(&tok, "deepseek_v3");
}

#[test]
fn gemma3() {
    let Some(tok) = load("gemma3") else { return };
    assert_eq!(
        tok.spelling(),
        TokenSpelling::SentencePiece {
            space_marker: '▁'
        }
    );
    assert_eq!(tok.vocabulary().len(), 262145);
    assert_eq!(kind_counts(&tok), (262136, 7, 2));
    assert_eq!(tok.vocabulary().eos_tokens(), &[1, 106]);
    assert_token(&tok, 0, Special, b"<pad>");
    assert_token(&tok, 1, EndOfSequence, b"<eos>");
    assert_token(&tok, 2, Special, b"<bos>");
    assert_token(&tok, 105, Special, b"<start_of_turn>");
    assert_token(&tok, 106, EndOfSequence, b"<end_of_turn>");
    assert_token(&tok, 262144, Special, b"<image_soft_token>");
    // Non-special added tokens that repeat the model's own entry are spelled like it.
    assert_token(&tok, 107, Text, b"\n");
    assert_token(&tok, 138, Text, b"  ");
    assert_token(&tok, 6, Text, b"<unused0>");
    // Byte-fallback tokens and the space marker.
    assert_token(&tok, 248, Text, b"\n");
    assert_token(&tok, 270, Text, b" ");
    assert_token(&tok, 478, Text, &[0xF0]);
    assert_token(&tok, 236743, Text, b" ");
    assert_token(&tok, 1902, Text, b" world");
    // No `▁` is prepended: "Hello" starts without a space.
    assert_eq!(tok.encode("Hello world").unwrap(), [9259, 1902]);
    assert_round_trips(&tok, "gemma3");
}
