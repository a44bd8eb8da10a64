//! `Vocabulary::from_tokens` and its accessors on hand-made vocabularies.

use constrain_vocab::{TokenKind, VocabError, Vocabulary, MAX_TOKEN_ID};

fn token(id: u32, bytes: &str, kind: TokenKind) -> (u32, Vec<u8>, TokenKind) {
    (id, bytes.as_bytes().to_vec(), kind)
}

#[test]
fn gaps_are_absent_ids() {
    let vocab = Vocabulary::from_tokens([
        token(5, "five", TokenKind::Text),
        token(0, "zero", TokenKind::Text),
        token(2, "</s>", TokenKind::EndOfSequence),
    ])
    .unwrap();
    assert_eq!(vocab.len(), 6);
    assert_eq!(vocab.logits_width(), 6);
    for gap in [1, 3, 4] {
        assert_eq!(vocab.token_bytes(gap), None);
        assert_eq!(vocab.kind(gap), None);
    }
    assert_eq!(vocab.token_bytes(5), Some(&b"five"[..]));
    assert_eq!(vocab.kind(2), Some(TokenKind::EndOfSequence));
    assert_eq!(vocab.token_bytes(6), None);
    assert_eq!(vocab.kind(u32::MAX), None);
    let ids: Vec<u32> = vocab.iter().map(|(id, _, _)| id).collect();
    assert_eq!(ids, [0, 2, 5]);
    assert_eq!(vocab.eos_tokens(), &[2]);
}

#[test]
fn empty_and_zero_length_tokens() {
    let vocab = Vocabulary::from_tokens(std::iter::empty()).unwrap();
    assert!(vocab.is_empty());
    assert_eq!(vocab.iter().count(), 0);

    let vocab = Vocabulary::from_tokens([token(0, "", TokenKind::Special)]).unwrap();
    assert_eq!(vocab.token_bytes(0), Some(&b""[..]));
}

#[test]
fn duplicate_ids_are_rejected() {
    let result = Vocabulary::from_tokens([
        token(1, "a", TokenKind::Text),
        token(0, "b", TokenKind::Text),
        token(1, "c", TokenKind::Text),
    ]);
    assert!(matches!(result, Err(VocabError::DuplicateId(1))));
}

#[test]
fn huge_ids_are_rejected_without_allocating() {
    let result = Vocabulary::from_tokens([token(u32::MAX, "x", TokenKind::Text)]);
    assert!(matches!(
        result,
        Err(VocabError::IdTooLarge { id: u32::MAX })
    ));
    let result = Vocabulary::from_tokens([token(MAX_TOKEN_ID + 1, "x", TokenKind::Text)]);
    assert!(matches!(result, Err(VocabError::IdTooLarge { .. })));
}

#[test]
fn logits_width() {
    let vocab = || {
        Vocabulary::from_tokens([
            token(0, "a", TokenKind::Text),
            token(2, "b", TokenKind::Text),
        ])
        .unwrap()
    };
    let padded = vocab().with_logits_width(8).unwrap();
    assert_eq!(padded.len(), 3);
    assert_eq!(padded.logits_width(), 8);
    assert_eq!(padded.token_bytes(7), None);
    assert_eq!(vocab().with_logits_width(3).unwrap().logits_width(), 3);
    assert!(matches!(
        vocab().with_logits_width(2),
        Err(VocabError::WidthTooSmall { width: 2, len: 3 })
    ));
}

#[test]
fn set_eos_tokens_replaces_the_set() {
    let mut vocab = Vocabulary::from_tokens([
        token(0, "<eos>", TokenKind::EndOfSequence),
        token(1, "<end_of_turn>", TokenKind::Special),
        token(2, "x", TokenKind::Text),
    ])
    .unwrap();
    vocab.set_eos_tokens(&[1, 1]).unwrap();
    assert_eq!(vocab.eos_tokens(), &[1]);
    assert_eq!(vocab.kind(0), Some(TokenKind::Special));
    assert_eq!(vocab.kind(1), Some(TokenKind::EndOfSequence));

    assert!(matches!(
        vocab.set_eos_tokens(&[3]),
        Err(VocabError::UnknownId { id: 3, len: 3 })
    ));
    // A failed call changes nothing.
    assert_eq!(vocab.eos_tokens(), &[1]);

    vocab.set_eos_tokens(&[]).unwrap();
    assert!(vocab.eos_tokens().is_empty());
    assert_eq!(vocab.kind(1), Some(TokenKind::Special));
}

#[test]
fn gap_ids_cannot_become_eos() {
    let mut vocab = Vocabulary::from_tokens([
        token(0, "a", TokenKind::Text),
        token(2, "b", TokenKind::Text),
    ])
    .unwrap();
    assert!(matches!(
        vocab.set_eos_tokens(&[1]),
        Err(VocabError::UnknownId { id: 1, .. })
    ));
}
