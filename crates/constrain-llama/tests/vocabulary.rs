//! The vocabulary read from the GGUF model agrees with the model's `tokenizer.json`.

mod common;

use std::collections::HashMap;

use constrain_vocab::{TokenKind, Tokenizer};

#[test]
fn gguf_vocabulary_matches_the_gemma3_tokenizer_json() {
    let Some(model) = common::model_or_skip("gguf_vocabulary_matches_the_gemma3_tokenizer_json")
    else {
        return;
    };
    let Some(tokenizer_path) = constrain_testdata::shared_tokenizer("gemma3") else {
        return;
    };
    let tokenizer = Tokenizer::from_file(&tokenizer_path).expect("gemma3 tokenizer.json loads");
    let from_json = tokenizer.vocabulary();
    let from_gguf = model.vocabulary();

    // The GGUF vocabulary is the logits width; tokenizer.json adds one image placeholder after it.
    assert_eq!(from_gguf.len(), 262_144);
    assert_eq!(from_gguf.logits_width(), 262_144);
    assert!(from_json.len() >= from_gguf.len());

    let mut text_compared = 0;
    let mut mismatches = Vec::new();
    for (id, gguf_bytes, gguf_kind) in from_gguf.iter() {
        let (Some(json_bytes), Some(json_kind)) = (from_json.token_bytes(id), from_json.kind(id))
        else {
            continue;
        };
        if gguf_kind == TokenKind::Text && json_kind == TokenKind::Text {
            text_compared += 1;
            if gguf_bytes != json_bytes {
                mismatches.push((id, gguf_bytes.to_vec(), json_bytes.to_vec()));
            }
        }
    }
    assert!(
        mismatches.is_empty(),
        "{} of {text_compared} text tokens differ, e.g. {:?}",
        mismatches.len(),
        &mismatches[..mismatches.len().min(10)]
    );
    assert!(
        text_compared > 250_000,
        "only {text_compared} text tokens compared"
    );

    // Token kinds come from GGUF's token types, which differ from tokenizer.json's `special`
    // flags in exactly these places: llama.cpp ends generation at `</s>`; `<mask>` and the
    // `<unusedN>` placeholders are control tokens; the image delimiters are user-defined text.
    let mut differences = Vec::new();
    for (id, bytes, kind) in from_gguf.iter() {
        let Some(json_kind) = from_json.kind(id) else {
            continue;
        };
        if json_kind == kind {
            continue;
        }
        let text = String::from_utf8_lossy(bytes);
        let expected = match (kind, json_kind) {
            (TokenKind::EndOfSequence, TokenKind::Text) => text == "</s>",
            (TokenKind::Special, TokenKind::Text) => {
                text == "<mask>" || text.starts_with("<unused")
            }
            (TokenKind::Text, TokenKind::Special) => {
                text == "<start_of_image>" || text == "<end_of_image>"
            }
            _ => false,
        };
        if !expected {
            differences.push((id, text.into_owned(), kind, json_kind));
        }
    }
    assert!(
        differences.is_empty(),
        "unexpected kind differences: {differences:?}"
    );
}

#[test]
fn byte_tokens_are_single_bytes_and_end_tokens_are_eos_and_end_of_turn() {
    let Some(model) = common::model_or_skip(
        "byte_tokens_are_single_bytes_and_end_tokens_are_eos_and_end_of_turn",
    ) else {
        return;
    };
    let Some(tokenizer_path) = constrain_testdata::shared_tokenizer("gemma3") else {
        return;
    };
    let json: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&tokenizer_path).unwrap()).unwrap();
    let vocab: HashMap<&str, u32> = json["model"]["vocab"]
        .as_object()
        .unwrap()
        .iter()
        .map(|(k, v)| (k.as_str(), v.as_u64().unwrap() as u32))
        .collect();
    let v = model.vocabulary();

    for byte in 0..=255u8 {
        let id = vocab[format!("<0x{byte:02X}>").as_str()];
        assert_eq!(
            v.token_bytes(id),
            Some(&[byte][..]),
            "byte token <0x{byte:02X}> (id {id})"
        );
        assert_eq!(v.kind(id), Some(TokenKind::Text));
    }
    // `▁` is a space in the model's output.
    assert_eq!(v.token_bytes(vocab["▁the"]), Some(&b" the"[..]));

    let eos = vocab["<eos>"];
    let end_of_turn = vocab["<end_of_turn>"];
    assert!(v.eos_tokens().contains(&eos), "{:?}", v.eos_tokens());
    assert!(
        v.eos_tokens().contains(&end_of_turn),
        "{:?}",
        v.eos_tokens()
    );
    let start_of_turn = vocab["<start_of_turn>"];
    assert_eq!(v.kind(start_of_turn), Some(TokenKind::Special));
    assert_eq!(v.token_bytes(start_of_turn), Some(&b"<start_of_turn>"[..]));
}
