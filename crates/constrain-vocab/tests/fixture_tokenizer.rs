//! The committed Qwen3 tokenizer fixture (gzip-compressed byte-level BPE): always runs.

mod common;

use std::io::Read;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use common::{assert_round_trips, assert_token, kind_counts};
use constrain_vocab::{TokenKind, TokenSpelling, Tokenizer, VocabError};

const ENDOFTEXT: u32 = 151643;
const IM_START: u32 = 151644;
const IM_END: u32 = 151645;
const TOOL_CALL: u32 = 151657;

fn qwen3() -> &'static Tokenizer {
    static TOKENIZER: OnceLock<Tokenizer> = OnceLock::new();
    TOKENIZER.get_or_init(|| {
        Tokenizer::from_file(constrain_testdata::fixture_tokenizer()).expect("fixture loads")
    })
}

fn fixture_json() -> Vec<u8> {
    let gz = std::fs::read(constrain_testdata::fixture_tokenizer()).expect("fixture readable");
    let mut json = Vec::new();
    flate2::read::GzDecoder::new(gz.as_slice())
        .read_to_end(&mut json)
        .expect("fixture is gzip");
    json
}

/// A fresh directory under the system's temporary directory.
fn scratch_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("constrain-vocab-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("temp dir");
    dir
}

fn load_error_path(result: Result<Tokenizer, VocabError>) -> (String, String) {
    match result {
        Err(VocabError::Load { path, message }) => (path, message),
        other => panic!("expected a load error, got {other:?}"),
    }
}

#[test]
fn fixture_is_byte_level_with_expected_shape() {
    let tok = qwen3();
    assert_eq!(tok.spelling(), TokenSpelling::ByteLevel);
    let vocab = tok.vocabulary();
    assert_eq!(vocab.len(), 151669);
    assert_eq!(vocab.logits_width(), 151669);
    // 151643 BPE tokens + 12 non-special added tokens; 14 special, 2 of them end tokens.
    assert_eq!(kind_counts(tok), (151655, 12, 2));
}

#[test]
fn fixture_token_bytes_and_kinds() {
    let tok = qwen3();
    assert_token(tok, 0, TokenKind::Text, b"!");
    assert_token(tok, 220, TokenKind::Text, b" ");
    assert_token(tok, 198, TokenKind::Text, b"\n");
    assert_token(tok, 23811, TokenKind::Text, b" hello");
    assert_token(tok, ENDOFTEXT, TokenKind::EndOfSequence, b"<|endoftext|>");
    assert_token(tok, IM_START, TokenKind::Special, b"<|im_start|>");
    assert_token(tok, IM_END, TokenKind::EndOfSequence, b"<|im_end|>");
    // A non-special added token is text, spelled as written.
    assert_token(tok, TOOL_CALL, TokenKind::Text, b"<tool_call>");
    assert_eq!(tok.vocabulary().eos_tokens(), &[ENDOFTEXT, IM_END]);
    // Some tokens are incomplete UTF-8.
    let partial = tok
        .vocabulary()
        .iter()
        .filter(|(_, bytes, kind)| *kind == TokenKind::Text && std::str::from_utf8(bytes).is_err())
        .count();
    assert!(partial > 100, "only {partial} tokens are partial UTF-8");
}

#[test]
fn fixture_round_trips() {
    assert_round_trips(qwen3(), "qwen3 fixture");
}

#[test]
fn encode_matches_known_ids() {
    let tok = qwen3();
    assert_eq!(tok.encode("Hello world").unwrap(), vec![9707, 1879]);
    // Non-special added tokens are matched as such.
    let ids = tok.encode("<tool_call>{}").unwrap();
    assert_eq!(ids[0], TOOL_CALL);
    // Special tokens' written forms are text, not control tokens.
    let ids = tok.encode("<|im_end|>").unwrap();
    assert!(ids.len() > 1 && !ids.contains(&IM_END), "{ids:?}");
}

#[test]
fn nfc_normalizer_rewrites_decomposed_text() {
    // Qwen3 normalizes to NFC: the ids spell the composed form, not the input.
    let tok = qwen3();
    let ids = tok.encode("cafe\u{301}").unwrap();
    assert_eq!(tok.decode_bytes(&ids), "caf\u{e9}".as_bytes());
}

#[test]
fn decode_bytes_skips_unknown_ids() {
    let tok = qwen3();
    assert_eq!(tok.decode_bytes(&[9707, 999_999, 1879]), b"Hello world");
    assert_eq!(tok.decode_bytes(&[]), b"");
}

#[test]
fn gzip_and_plain_json_give_the_same_vocabulary() {
    let dir = scratch_dir("plain");
    std::fs::write(dir.join("tokenizer.json"), fixture_json()).unwrap();
    let config = constrain_testdata::fixture_tokenizer().with_file_name("tokenizer_config.json");
    std::fs::copy(config, dir.join("tokenizer_config.json")).unwrap();
    let plain = Tokenizer::from_file(dir.join("tokenizer.json")).expect("plain json loads");
    assert!(plain.vocabulary().iter().eq(qwen3().vocabulary().iter()));
    std::fs::remove_dir_all(dir).ok();
}

#[test]
fn from_json_bytes_uses_well_known_end_tokens() {
    let tok = Tokenizer::from_json_bytes(&fixture_json()).expect("loads");
    // Both Qwen end tokens are well-known, so no configuration is needed.
    assert_eq!(tok.vocabulary().eos_tokens(), &[ENDOFTEXT, IM_END]);
}

#[test]
fn set_eos_tokens_overrides() {
    let mut tok = Tokenizer::from_json_bytes(&fixture_json()).expect("loads");
    tok.set_eos_tokens(&[IM_END]).unwrap();
    assert_eq!(tok.vocabulary().eos_tokens(), &[IM_END]);
    assert_eq!(tok.vocabulary().kind(ENDOFTEXT), Some(TokenKind::Special));
    assert!(matches!(
        tok.set_eos_tokens(&[999_999]),
        Err(VocabError::UnknownId { id: 999_999, .. })
    ));
}

#[test]
fn configured_eos_token_object_and_generation_config() {
    let dir = scratch_dir("eos");
    std::fs::write(dir.join("tokenizer.json"), fixture_json()).unwrap();
    std::fs::write(
        dir.join("tokenizer_config.json"),
        r#"{"eos_token": {"__type": "AddedToken", "content": "<|im_start|>"}}"#,
    )
    .unwrap();
    std::fs::write(
        dir.join("generation_config.json"),
        r#"{"eos_token_id": [151646, 1879]}"#,
    )
    .unwrap();
    let tok = Tokenizer::from_file(dir.join("tokenizer.json")).expect("loads");
    assert_eq!(
        tok.vocabulary().eos_tokens(),
        &[1879, ENDOFTEXT, IM_START, IM_END, 151646]
    );
    std::fs::remove_dir_all(dir).ok();
}

#[test]
fn load_errors_name_the_file() {
    let missing = Path::new("/nonexistent/dir/tokenizer.json");
    let (path, _) = load_error_path(Tokenizer::from_file(missing));
    assert_eq!(path, missing.display().to_string());

    let dir = scratch_dir("errors");
    let bad_json = dir.join("bad.json");
    std::fs::write(&bad_json, b"{\"model\": ").unwrap();
    let (path, message) = load_error_path(Tokenizer::from_file(&bad_json));
    assert_eq!(path, bad_json.display().to_string());
    assert!(message.contains("tokenizer.json"), "{message}");

    let bad_gzip = dir.join("bad.json.gz");
    std::fs::write(&bad_gzip, [0x1f, 0x8b, 8, 0, 1, 2, 3]).unwrap();
    let (_, message) = load_error_path(Tokenizer::from_file(&bad_gzip));
    assert!(message.contains("gzip"), "{message}");

    std::fs::write(dir.join("tokenizer.json"), fixture_json()).unwrap();
    let config = dir.join("tokenizer_config.json");
    std::fs::write(&config, b"not json").unwrap();
    let (path, _) = load_error_path(Tokenizer::from_file(dir.join("tokenizer.json")));
    assert_eq!(path, config.display().to_string());

    std::fs::write(&config, r#"{"eos_token": "<|no_such_token|>"}"#).unwrap();
    let (path, message) = load_error_path(Tokenizer::from_file(dir.join("tokenizer.json")));
    assert_eq!(path, config.display().to_string());
    assert!(message.contains("<|no_such_token|>"), "{message}");

    std::fs::write(&config, r#"{"eos_token": 7}"#).unwrap();
    load_error_path(Tokenizer::from_file(dir.join("tokenizer.json")));

    std::fs::write(&config, "{}").unwrap();
    let generation = dir.join("generation_config.json");
    std::fs::write(&generation, r#"{"eos_token_id": 9999999}"#).unwrap();
    let (path, _) = load_error_path(Tokenizer::from_file(dir.join("tokenizer.json")));
    assert_eq!(path, generation.display().to_string());
    std::fs::write(&generation, r#"{"eos_token_id": "x"}"#).unwrap();
    load_error_path(Tokenizer::from_file(dir.join("tokenizer.json")));

    std::fs::remove_dir_all(dir).ok();
}

#[test]
fn in_memory_errors() {
    let (path, _) = load_error_path(Tokenizer::from_json_bytes(b"[]"));
    assert!(path.contains("tokenizer.json"), "{path}");
    load_error_path(Tokenizer::from_json_bytes(b"\xff\xfe"));
    load_error_path(Tokenizer::from_json_bytes(b""));
}

#[test]
fn tokenizer_is_shareable_across_threads() {
    fn assert_send_sync<T: Send + Sync>(_: &T) {}
    let tok = qwen3();
    assert_send_sync(tok);
    let encoded: Vec<Vec<u32>> = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..2)
            .map(|_| scope.spawn(|| tok.encode("shared across threads").unwrap()))
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    assert_eq!(encoded[0], encoded[1]);
    assert_eq!(tok.decode_bytes(&encoded[0]), b"shared across threads");
}
