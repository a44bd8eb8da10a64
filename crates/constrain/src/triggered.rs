//! Triggered constraints: free text until a trigger string appears in the output, then a
//! grammar from the bytes right after it.
//!
//! This is how a model may answer in prose or open a tool call: with the trigger
//! `<tool_call>`, everything is allowed until the output contains `<tool_call>`, and from the
//! byte after it the output must follow the grammar of a call. The trigger may end in the
//! middle of a token (`"ok <tool_call>{"` as one token, or `"<tool"` then `"_call>{"`): the
//! token's bytes after the trigger are the grammar's first bytes, and a token whose bytes after
//! the trigger the grammar refuses is masked like any other refused token, so the output always
//! follows the grammar from the trigger on.
//!
//! ```
//! use std::sync::Arc;
//! use constrain::{CompiledGrammar, Grammar, Limits, TokenIndex, TokenKind, Trigger,
//!                 TriggeredMatcher, Vocabulary};
//!
//! let pieces = ["Hi", " there", "<call>", "<ca", "ll>7", "ll>x", "7", "<eos>"];
//! let vocab = Arc::new(Vocabulary::from_tokens(pieces.iter().enumerate().map(|(id, p)| {
//!     let kind = if *p == "<eos>" { TokenKind::EndOfSequence } else { TokenKind::Text };
//!     (id as u32, p.as_bytes().to_vec(), kind)
//! }))?);
//! let grammar = CompiledGrammar::new(
//!     &Grammar::from_regex("[0-9]+")?,
//!     TokenIndex::new(vocab.clone()),
//!     Limits::default(),
//! )?;
//! let trigger = Arc::new(Trigger::new("<call>", &vocab));
//! let mut m = TriggeredMatcher::new(trigger, grammar);
//! m.accept_token(0)?; // "Hi": free text
//! m.accept_token(3)?; // "<ca": half a trigger
//! assert!(!m.is_triggered());
//! assert!(!m.is_token_allowed(5)?); // "ll>x" would end the trigger with a byte the grammar refuses
//! m.accept_token(4)?; // "ll>7": the trigger ends mid-token, "7" is the grammar's
//! assert!(m.is_triggered());
//! assert_eq!(m.trigger_start(), Some(2));
//! assert!(m.is_accepting());
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use std::collections::HashMap;
use std::sync::Arc;

use constrain_engine::{CompiledGrammar, MatchError, Matcher};
use constrain_vocab::{TokenKind, Vocabulary};

/// A trigger string and the tokens of one vocabulary that can complete it; made once per
/// trigger and vocabulary, shared by every [`TriggeredMatcher`].
#[derive(Debug)]
pub struct Trigger {
    bytes: Vec<u8>,
    /// `completing[0]`: tokens that contain the whole trigger; `completing[k]` (k >= 1): tokens
    /// that start with the trigger's bytes from `k` on (they finish a trigger whose first `k`
    /// bytes ended the output so far).
    completing: Vec<Vec<u32>>,
    /// `leading[k]`: tokens whose bytes are a proper, non-empty prefix of the trigger's bytes
    /// from `k` on (they write more of it without finishing it).
    leading: Vec<Vec<u32>>,
    /// Every token id (text, special and end tokens): the mask of free text.
    everything: Vec<u32>,
    /// The end-of-generation tokens.
    eos: Vec<u32>,
    /// Words of a mask.
    words: usize,
}

impl Trigger {
    /// The trigger `text` for `vocabulary`. Special tokens count by their written form (a
    /// vocabulary whose `<tool_call>` is one control token completes the trigger with it);
    /// end-of-generation tokens never do.
    ///
    /// # Panics
    ///
    /// If `text` is empty.
    pub fn new(text: &str, vocabulary: &Vocabulary) -> Trigger {
        let bytes = text.as_bytes().to_vec();
        assert!(!bytes.is_empty(), "a trigger must not be empty");
        let mut completing = vec![Vec::new(); bytes.len()];
        let mut leading = vec![Vec::new(); bytes.len()];
        let words = vocabulary.logits_width().div_ceil(32);
        let mut everything = vec![0u32; words];
        let mut eos = Vec::new();
        for (id, token, kind) in vocabulary.iter() {
            everything[(id >> 5) as usize] |= 1 << (id & 31);
            if kind == TokenKind::EndOfSequence {
                eos.push(id);
                continue;
            }
            if find(token, &bytes).is_some() {
                completing[0].push(id);
            }
            for (k, list) in completing.iter_mut().enumerate().skip(1) {
                if token.starts_with(&bytes[k..]) {
                    list.push(id);
                }
            }
            for (k, list) in leading.iter_mut().enumerate() {
                if !token.is_empty()
                    && token.len() < bytes.len() - k
                    && bytes[k..].starts_with(token)
                {
                    list.push(id);
                }
            }
        }
        Trigger {
            bytes,
            completing,
            leading,
            everything,
            eos,
            words,
        }
    }

    /// The trigger's bytes.
    pub fn text(&self) -> &[u8] {
        &self.bytes
    }
}

/// Where a sequence stands under a triggered constraint: free text, or the grammar after the
/// trigger.
///
/// Masks and tokens go through it exactly as through a [`Matcher`]: before the trigger
/// [`fill_mask`](Self::fill_mask) allows every token except those that would complete the
/// trigger with bytes the grammar refuses; after it, the grammar's mask.
#[derive(Clone, Debug)]
pub struct TriggeredMatcher {
    trigger: Arc<Trigger>,
    grammar: Arc<CompiledGrammar>,
    /// The last bytes of the output (fewer than the trigger's length) while not triggered.
    tail: Vec<u8>,
    /// Bytes of output so far.
    written: usize,
    /// Where in the output the trigger starts, once it appeared.
    trigger_start: Option<usize>,
    matcher: Option<Matcher>,
    /// Whether an end token was accepted before the trigger.
    ended: bool,
    /// Whether the grammar accepts a token's bytes after the trigger, by (token, offset).
    verdicts: HashMap<(u32, usize), bool>,
    /// Most tokens of the whole output, the trigger's and the grammar's included.
    budget: Option<usize>,
    /// Tokens accepted before the trigger (the end token not counted).
    free_tokens: usize,
    /// Most tokens of free text: from then on only tokens that write the trigger are allowed.
    free_limit: Option<usize>,
    /// Whether the output must reach the trigger (no end before it).
    required: bool,
}

impl TriggeredMatcher {
    /// A sequence at the start of free text, with `grammar` to follow after `trigger`.
    ///
    /// # Panics
    ///
    /// If the grammar's masks are not as wide as the trigger's vocabulary.
    pub fn new(trigger: Arc<Trigger>, grammar: Arc<CompiledGrammar>) -> TriggeredMatcher {
        assert_eq!(
            grammar.mask_words(),
            trigger.words,
            "the trigger and the grammar must share a vocabulary"
        );
        TriggeredMatcher {
            trigger,
            grammar,
            tail: Vec::new(),
            written: 0,
            trigger_start: None,
            matcher: None,
            ended: false,
            verdicts: HashMap::new(),
            budget: None,
            free_tokens: 0,
            free_limit: None,
            required: false,
        }
    }

    /// With `true`, the output may not end before the trigger: the grammar's part is an
    /// answer that must come (after a reasoning model's thinking), not an option.
    pub fn set_trigger_required(&mut self, required: bool) {
        self.required = required;
    }

    /// Bounds the free text to `max_tokens` (`None`: no bound): once that many tokens of it
    /// are written, only tokens that go on writing the trigger are allowed, each one bringing
    /// it closer, so the trigger and the grammar's output follow (a reasoning model's thinking
    /// budget: `</think>`, then the answer).
    pub fn set_free_limit(&mut self, max_tokens: Option<usize>) {
        self.free_limit = max_tokens;
    }

    /// The most tokens the trigger and the grammar's shortest output take once the free text
    /// must end: what a whole-output budget keeps in reserve for them.
    pub fn reserve(&self) -> Result<usize, MatchError> {
        let shortest = Matcher::new(self.grammar.clone())
            .shortest_completion()?
            .map_or(0, |c| c.tokens.len());
        // At worst a token per byte of the trigger, and the end token.
        Ok(self.trigger.bytes.len() + shortest + 1)
    }

    /// Whether the free text is over its limit and the trigger must be written now.
    fn closing(&self) -> bool {
        self.matcher.is_none() && self.free_limit.is_some_and(|l| self.free_tokens >= l)
    }

    /// While [`closing`](Self::closing): the tokens that write more of the trigger (after the
    /// longest part of it the output ends with) or finish it.
    fn closing_candidates(&self) -> impl Iterator<Item = u32> + '_ {
        let t = &self.trigger;
        let k = (1..t.bytes.len())
            .rev()
            .find(|&k| self.tail.ends_with(&t.bytes[..k]))
            .unwrap_or(0);
        let completing: &[u32] = if k > 0 { &t.completing[k] } else { &[] };
        t.completing[0]
            .iter()
            .chain(completing)
            .chain(&t.leading[k])
            .copied()
    }

    /// Bounds the whole output to `max_tokens` (`None`: no bound), so that what the grammar
    /// governs always ends complete: before the trigger, a token that would complete it is
    /// allowed only if the grammar's shortest completion after it still fits; after it, the
    /// grammar's matcher has the tokens left as its budget.
    ///
    /// Errors with [`MatchError::BudgetTooSmall`] (the budget unchanged) when, once
    /// triggered, the grammar's output cannot complete within the new budget.
    pub fn set_token_budget(&mut self, max_tokens: Option<usize>) -> Result<(), MatchError> {
        if let Some(m) = self.matcher.as_mut() {
            let left = max_tokens.map(|b| b.saturating_sub(self.free_tokens));
            m.set_token_budget(left)?;
        }
        self.budget = max_tokens;
        Ok(())
    }

    /// The grammar's matcher after the trigger, with `rest` (the bytes of the triggering
    /// token after the trigger) accepted and the tokens left after that token as its budget;
    /// `None` when the grammar refuses `rest` or cannot complete in time.
    fn start_grammar(&self, rest: &[u8]) -> Option<Matcher> {
        let mut matcher = Matcher::new(self.grammar.clone());
        if !rest.is_empty() {
            matcher.accept_bytes(rest).ok()?;
        }
        if let Some(budget) = self.budget {
            let left = budget.checked_sub(self.free_tokens + 1)?;
            matcher.set_token_budget(Some(left)).ok()?;
        }
        Some(matcher)
    }

    /// Whether the trigger has appeared (the grammar applies).
    pub fn is_triggered(&self) -> bool {
        self.matcher.is_some()
    }

    /// The byte offset in the output where the trigger starts, once it appeared.
    pub fn trigger_start(&self) -> Option<usize> {
        self.trigger_start
    }

    /// The grammar's matcher, once triggered.
    pub fn matcher(&self) -> Option<&Matcher> {
        self.matcher.as_ref()
    }

    /// The grammar's matcher, once triggered (to set a token budget, for instance).
    pub fn matcher_mut(&mut self) -> Option<&mut Matcher> {
        self.matcher.as_mut()
    }

    /// The compiled grammar that applies after the trigger.
    pub fn grammar(&self) -> &Arc<CompiledGrammar> {
        &self.grammar
    }

    /// Words of a mask ([`CompiledGrammar::mask_words`]).
    pub fn mask_words(&self) -> usize {
        self.trigger.words
    }

    /// Writes the allowed tokens into `mask` (see [`Matcher::fill_mask`]).
    pub fn fill_mask(&mut self, mask: &mut [u32]) -> Result<(), MatchError> {
        if let Some(m) = self.matcher.as_mut() {
            return m.fill_mask(mask);
        }
        if mask.len() != self.trigger.words {
            return Err(MatchError::MaskLength {
                got: mask.len(),
                expected: self.trigger.words,
            });
        }
        if self.ended {
            mask.fill(0);
            return Ok(());
        }
        if self.closing() {
            mask.fill(0);
            let candidates: Vec<u32> = self.closing_candidates().collect();
            for token in candidates {
                if self.untriggered_allows(token)? {
                    mask[(token >> 5) as usize] |= 1 << (token & 31);
                }
            }
            return Ok(());
        }
        mask.copy_from_slice(&self.trigger.everything);
        for token in self.candidates() {
            if !self.untriggered_allows(token)? {
                mask[(token >> 5) as usize] &= !(1 << (token & 31));
            }
        }
        if self.required {
            for &token in &self.trigger.eos {
                mask[(token >> 5) as usize] &= !(1 << (token & 31));
            }
        }
        Ok(())
    }

    /// Whether `token` may come next.
    pub fn is_token_allowed(&mut self, token: u32) -> Result<bool, MatchError> {
        if let Some(m) = self.matcher.as_mut() {
            return m.is_token_allowed(token);
        }
        if self.ended {
            return Ok(false);
        }
        let vocab = self.grammar.vocabulary();
        if vocab.token_bytes(token).is_none() {
            return Ok(false);
        }
        if self.closing() && !self.closing_candidates().any(|c| c == token) {
            return Ok(false);
        }
        self.untriggered_allows(token)
    }

    /// Accepts `token`, or returns an error and leaves the state unchanged.
    pub fn accept_token(&mut self, token: u32) -> Result<(), MatchError> {
        if let Some(m) = self.matcher.as_mut() {
            return m.accept_token(token);
        }
        if self.ended {
            return Err(MatchError::Finished);
        }
        let vocab = self.grammar.vocabulary().clone();
        let Some(bytes) = vocab.token_bytes(token) else {
            return Err(MatchError::UnknownToken {
                token,
                vocab_size: vocab.logits_width(),
            });
        };
        if self.closing() && !self.closing_candidates().any(|c| c == token) {
            return Err(MatchError::TokenNotAllowed { token });
        }
        if vocab.kind(token) == Some(TokenKind::EndOfSequence) {
            if self.required {
                return Err(MatchError::TokenNotAllowed { token });
            }
            self.ended = true;
            return Ok(());
        }
        match self.completion(bytes) {
            Some(end) => {
                let Some(matcher) = self.start_grammar(&bytes[end..]) else {
                    return Err(MatchError::TokenNotAllowed { token });
                };
                let start = self.written + end - self.trigger.bytes.len();
                self.trigger_start = Some(start);
                self.matcher = Some(matcher);
                self.tail.clear();
            }
            None => {
                self.tail.extend_from_slice(bytes);
                let keep = self.trigger.bytes.len() - 1;
                if self.tail.len() > keep {
                    self.tail.drain(..self.tail.len() - keep);
                }
            }
        }
        self.free_tokens += 1;
        self.written += bytes.len();
        Ok(())
    }

    /// Tokens the grammar forces next (none before the trigger).
    pub fn forced_tokens(&mut self) -> Result<Vec<u32>, MatchError> {
        match self.matcher.as_mut() {
            Some(m) => m.forced_tokens(),
            None => Ok(Vec::new()),
        }
    }

    /// Whether the output may end here: always before the trigger, and where the grammar
    /// accepts after it.
    pub fn is_accepting(&self) -> bool {
        match &self.matcher {
            Some(m) => m.is_accepting(),
            None => !self.ended && !self.required && !self.closing(),
        }
    }

    /// Whether nothing but the end can follow.
    pub fn is_finished(&self) -> bool {
        match &self.matcher {
            Some(m) => m.is_finished(),
            None => self.ended,
        }
    }

    /// The tokens that could complete the trigger after the current tail.
    fn candidates(&self) -> Vec<u32> {
        let t = &self.trigger;
        let mut out = t.completing[0].clone();
        for k in 1..t.bytes.len() {
            if self.tail.ends_with(&t.bytes[..k]) {
                out.extend_from_slice(&t.completing[k]);
            }
        }
        out
    }

    /// Where the trigger first ends within `bytes` if they came next: the offset in `bytes`
    /// just after it.
    fn completion(&self, bytes: &[u8]) -> Option<usize> {
        let mut text = self.tail.clone();
        text.extend_from_slice(bytes);
        find(&text, &self.trigger.bytes).map(|at| at + self.trigger.bytes.len() - self.tail.len())
    }

    /// Before the trigger: whether `token` keeps the output valid (it does not complete the
    /// trigger, or the grammar accepts its bytes after the trigger and, under a budget, can
    /// still complete in the tokens left).
    fn untriggered_allows(&mut self, token: u32) -> Result<bool, MatchError> {
        let vocab = self.grammar.vocabulary().clone();
        let (Some(bytes), Some(kind)) = (vocab.token_bytes(token), vocab.kind(token)) else {
            return Ok(false);
        };
        if kind == TokenKind::EndOfSequence || self.trigger.eos.contains(&token) {
            return Ok(!self.required);
        }
        let Some(end) = self.completion(bytes) else {
            return Ok(true);
        };
        if self.budget.is_some() {
            // Depends on the tokens left, so not kept among the verdicts.
            return Ok(self.start_grammar(&bytes[end..]).is_some());
        }
        if end == bytes.len() {
            return Ok(true);
        }
        if let Some(&verdict) = self.verdicts.get(&(token, end)) {
            return Ok(verdict);
        }
        let verdict = self.start_grammar(&bytes[end..]).is_some();
        self.verdicts.insert((token, end), verdict);
        Ok(verdict)
    }
}

/// The first occurrence of `needle` in `haystack`.
fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    if needle.len() > haystack.len() {
        return None;
    }
    haystack.windows(needle.len()).position(|w| w == needle)
}

#[cfg(test)]
mod tests {
    use super::*;
    use constrain_engine::{Grammar, Limits, TokenIndex};

    fn setup(pieces: &[&str], trigger: &str, regex: &str) -> (TriggeredMatcher, Arc<Vocabulary>) {
        let vocab = Arc::new(
            Vocabulary::from_tokens(pieces.iter().enumerate().map(|(id, p)| {
                let kind = if p.starts_with("<eos") {
                    TokenKind::EndOfSequence
                } else {
                    TokenKind::Text
                };
                (id as u32, p.as_bytes().to_vec(), kind)
            }))
            .unwrap(),
        );
        let grammar = CompiledGrammar::new(
            &Grammar::from_regex(regex).unwrap(),
            TokenIndex::new(vocab.clone()),
            Limits::default(),
        )
        .unwrap();
        let trigger = Arc::new(Trigger::new(trigger, &vocab));
        (TriggeredMatcher::new(trigger, grammar), vocab)
    }

    fn allowed(m: &mut TriggeredMatcher) -> Vec<u32> {
        let mut mask = vec![0u32; m.mask_words()];
        m.fill_mask(&mut mask).unwrap();
        (0..mask.len() as u32 * 32)
            .filter(|&t| mask[(t >> 5) as usize] & (1 << (t & 31)) != 0)
            .collect()
    }

    #[test]
    fn free_text_until_the_trigger_then_the_grammar() {
        let pieces = ["a", "b", "<t>", "<t>x", "<t>1", "1", "2", "x", "<eos>"];
        let (mut m, _) = setup(&pieces, "<t>", "[0-9]{2}");
        // Free text: everything but "<t>x" (the grammar refuses "x" after the trigger).
        assert_eq!(allowed(&mut m), vec![0, 1, 2, 4, 5, 6, 7, 8]);
        m.accept_token(0).unwrap();
        m.accept_token(2).unwrap();
        assert!(m.is_triggered());
        assert_eq!(m.trigger_start(), Some(1));
        // The grammar: digits only, no end yet.
        assert_eq!(allowed(&mut m), vec![5, 6]);
        m.accept_token(5).unwrap();
        m.accept_token(6).unwrap();
        assert!(m.is_finished());
        assert_eq!(allowed(&mut m), vec![8]);
    }

    #[test]
    fn a_trigger_split_across_tokens_and_ending_mid_token() {
        let pieces = ["<", "t", ">1", ">x", "q", "<eos>"];
        let (mut m, _) = setup(&pieces, "<t>", "[0-9]+");
        m.accept_token(4).unwrap();
        m.accept_token(0).unwrap();
        m.accept_token(1).unwrap();
        // "<t" so far: ">x" would complete the trigger with a refused byte.
        assert!(!m.is_token_allowed(3).unwrap());
        assert!(m.is_token_allowed(2).unwrap());
        assert_eq!(
            m.accept_token(3),
            Err(MatchError::TokenNotAllowed { token: 3 })
        );
        assert!(!m.is_triggered());
        m.accept_token(2).unwrap();
        assert!(m.is_triggered());
        assert_eq!(m.trigger_start(), Some(1));
        assert!(m.is_accepting());
    }

    #[test]
    fn past_the_free_limit_only_the_trigger_is_written() {
        let pieces = ["a", "<", "t", ">", "<t", "<t>", "<t>1", "1", "<eos>", "<x"];
        let (mut m, _) = setup(&pieces, "<t>", "[0-9]");
        m.set_free_limit(Some(2));
        m.set_trigger_required(true);
        // No end before the trigger when it is required.
        assert!(!allowed(&mut m).contains(&8));
        assert!(!m.is_accepting());
        m.accept_token(0).unwrap();
        m.accept_token(0).unwrap();
        // Over the limit: tokens that begin or finish the trigger ("<x" neither).
        assert_eq!(allowed(&mut m), vec![1, 4, 5, 6]);
        assert!(m.accept_token(0).is_err());
        m.accept_token(4).unwrap();
        // "<t" written: only what finishes it ("<" would start over, and is refused).
        assert_eq!(allowed(&mut m), vec![3, 5, 6]);
        m.accept_token(3).unwrap();
        assert!(m.is_triggered());
        assert_eq!(allowed(&mut m), vec![7]);
        // Three bytes of trigger, one digit, the end.
        assert_eq!(m.reserve().unwrap(), 5);
    }

    #[test]
    fn ending_before_the_trigger() {
        let pieces = ["a", "<eos>"];
        let (mut m, _) = setup(&pieces, "<t>", "[0-9]");
        assert!(m.is_accepting());
        m.accept_token(0).unwrap();
        m.accept_token(1).unwrap();
        assert!(m.is_finished());
        assert!(!m.is_triggered());
        assert_eq!(allowed(&mut m), Vec::<u32>::new());
    }

    #[test]
    fn under_a_budget_the_trigger_comes_only_while_the_grammar_can_complete() {
        let pieces = ["a", "b", "<t>", "<t>x", "<t>1", "1", "2", "x", "<eos>"];
        let (mut m, _) = setup(&pieces, "<t>", "[0-9]{2}");
        m.set_token_budget(Some(3)).unwrap();
        m.accept_token(0).unwrap();
        // Two tokens left: "<t>" would leave one for two digits; "<t>1" leaves one for one.
        assert_eq!(allowed(&mut m), vec![0, 1, 4, 5, 6, 7, 8]);
        assert_eq!(
            m.accept_token(2),
            Err(MatchError::TokenNotAllowed { token: 2 })
        );
        m.accept_token(4).unwrap();
        assert!(m.is_triggered());
        assert_eq!(m.matcher().and_then(Matcher::tokens_left), Some(1));
        assert_eq!(allowed(&mut m), vec![5, 6]);
        m.accept_token(5).unwrap();
        assert!(m.is_finished());
        // Lowering the budget below what the grammar took is refused once triggered.
        assert!(matches!(
            m.set_token_budget(Some(2)),
            Err(MatchError::BudgetTooSmall { .. })
        ));
    }
}
