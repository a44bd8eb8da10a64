//! A [`TextCheck`] beside the automaton: masks, acceptance, rollback, clones and reset all
//! see it. The check here refuses a letter that repeats the one before it.

use std::sync::Arc;

use constrain_engine::{
    BoundTextCheck, CheckState, CompiledGrammar, Grammar, Limits, Matcher, TextCheck, TokenIndex,
};
use constrain_vocab::{TokenKind, Vocabulary};

#[derive(Debug)]
struct NoDoubleLetters;

impl TextCheck for NoDoubleLetters {
    fn bind(&self, index: &Arc<TokenIndex>) -> Arc<dyn BoundTextCheck> {
        Arc::new(Bound(index.vocabulary().clone()))
    }
}

struct Bound(Arc<Vocabulary>);

impl BoundTextCheck for Bound {
    fn start(&self) -> Box<dyn CheckState> {
        Box::new(Text {
            vocabulary: self.0.clone(),
            text: Vec::new(),
            steps: Vec::new(),
        })
    }
}

#[derive(Clone)]
struct Text {
    vocabulary: Arc<Vocabulary>,
    text: Vec<u8>,
    steps: Vec<usize>,
}

impl CheckState for Text {
    fn boxed_clone(&self) -> Box<dyn CheckState> {
        Box::new(self.clone())
    }

    fn allows(&self, bytes: &[u8]) -> bool {
        let mut last = self.text.last().copied();
        bytes.iter().all(|&b| {
            let repeat = last == Some(b);
            last = Some(b);
            !repeat
        })
    }

    fn accept(&mut self, bytes: &[u8]) {
        self.text.extend_from_slice(bytes);
        self.steps.push(self.text.len());
    }

    fn rollback(&mut self, steps: usize) {
        self.steps.truncate(self.steps.len() - steps);
        self.text.truncate(self.steps.last().copied().unwrap_or(0));
    }

    fn refine(&self, mask: &mut [u32]) {
        for id in 0..self.vocabulary.logits_width() as u32 {
            if let Some(bytes) = self.vocabulary.token_bytes(id) {
                if !self.allows(bytes) {
                    mask[(id >> 5) as usize] &= !(1 << (id & 31));
                }
            }
        }
    }
}

const WORDS: [&str; 6] = ["a", "b", "ab", "ba", "aa", "</s>"];

fn matcher() -> Matcher {
    let vocab = Vocabulary::from_tokens(WORDS.iter().enumerate().map(|(i, w)| {
        let kind = if w.starts_with('<') {
            TokenKind::EndOfSequence
        } else {
            TokenKind::Text
        };
        (i as u32, w.as_bytes().to_vec(), kind)
    }))
    .expect("vocabulary");
    let grammar = Grammar::from_regex("[ab]{1,6}")
        .expect("grammar")
        .with_text_check(Arc::new(NoDoubleLetters));
    let compiled = CompiledGrammar::new(
        &grammar,
        TokenIndex::new(Arc::new(vocab)),
        Limits::default(),
    )
    .expect("compiles");
    Matcher::new(compiled)
}

fn allowed(m: &mut Matcher) -> Vec<&'static str> {
    let mut mask = vec![0u32; m.grammar().mask_words()];
    m.fill_mask(&mut mask).expect("mask");
    (0..WORDS.len())
        .filter(|&i| mask[0] & (1 << i) != 0)
        .map(|i| WORDS[i])
        .collect()
}

#[test]
fn the_check_refuses_what_the_grammar_allows() {
    let mut m = matcher();
    assert_eq!(allowed(&mut m), ["a", "b", "ab", "ba"]);
    m.accept_token(0).expect("a");
    assert_eq!(allowed(&mut m), ["b", "ba", "</s>"]);
    assert!(!m.is_token_allowed(0).expect("asked"));
    assert!(m.accept_token(2).is_err(), "ab after a");
    let mut fork = m.clone();
    m.accept_token(3).expect("ba");
    assert_eq!(allowed(&mut m), ["b", "ba", "</s>"]);
    // The fork is still after "a".
    assert!(fork.accept_token(1).is_ok());
    assert_eq!(allowed(&mut fork), ["a", "ab", "</s>"]);
    // Rolled back to after "a", then to the start.
    m.rollback(1).expect("rollback");
    assert_eq!(allowed(&mut m), ["b", "ba", "</s>"]);
    m.accept_token(5).expect("end");
    m.rollback(2).expect("rollback past the end");
    assert_eq!(allowed(&mut m), ["a", "b", "ab", "ba"]);
    assert_eq!(
        m.accept_bytes(b"abba"),
        Err(constrain_engine::MatchError::BytesRejected { offset: 2 })
    );
    m.accept_bytes(b"abab").expect("no double letter");
    m.reset();
    assert_eq!(allowed(&mut m), ["a", "b", "ab", "ba"]);
}
