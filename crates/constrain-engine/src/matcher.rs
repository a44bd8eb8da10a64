//! [`Matcher`]: the state of one sequence under a compiled grammar.

use std::borrow::Cow;
use std::sync::Arc;

use constrain_vocab::TokenKind;
use rayon::prelude::*;

use crate::automaton::{Automaton, StateId, DEAD};
use crate::bytes::special_token_bytes;
use crate::compiled::CompiledGrammar;
use crate::completion::Completion;
use crate::error::MatchError;
use crate::text_check::CheckState;

/// Longest run of forced bytes looked at by [`Matcher::forced_tokens`].
const MAX_FORCED_BYTES: usize = 4096;

/// Tracks one sequence: which tokens are allowed next, and the tokens accepted so far.
///
/// Cloning is cheap (a vector of state ids and an [`Arc`]), so a beam or a speculative branch
/// can fork a matcher freely.
///
/// ```
/// use std::sync::Arc;
/// use constrain_engine::{CompiledGrammar, Grammar, Limits, Matcher, MatchError, TokenIndex};
/// use constrain_vocab::{TokenKind, Vocabulary};
///
/// let words = ["yes", "no", "maybe", "<eos>"];
/// let vocab = Vocabulary::from_tokens(words.iter().enumerate().map(|(i, w)| {
///     let kind = if w.starts_with('<') { TokenKind::EndOfSequence } else { TokenKind::Text };
///     (i as u32, w.as_bytes().to_vec(), kind)
/// }))?;
/// let grammar = CompiledGrammar::new(
///     &Grammar::from_regex("yes|no")?,
///     TokenIndex::new(Arc::new(vocab)),
///     Limits::default(),
/// )?;
/// let mut m = Matcher::new(grammar);
/// assert!(m.is_token_allowed(0)?);
/// assert!(!m.is_token_allowed(2)?);
/// assert_eq!(m.accept_token(2), Err(MatchError::TokenNotAllowed { token: 2 }));
/// m.accept_token(1)?;
/// assert!(m.is_accepting() && m.is_finished());
/// m.rollback(1)?;
/// assert!(!m.is_accepting());
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct Matcher {
    grammar: Arc<CompiledGrammar>,
    /// The state after each accepted step; `history[0]` is the initial state.
    history: Vec<StateId>,
    /// Number of steps when an end-of-sequence token was accepted.
    ended_at: Option<usize>,
    /// Where the text stands for the grammar's [`TextCheck`](crate::TextCheck), if it has one.
    check: Option<Box<dyn CheckState>>,
    /// Per entry of `history`: tokens accepted up to it, and the completion it follows.
    budget_steps: Vec<BudgetStep>,
    /// Most tokens of the whole output (end-of-sequence not counted), if bounded.
    budget: Option<usize>,
    /// Steps whose mask the budget narrowed, and the last one counted.
    narrowed: (usize, Option<usize>),
}

/// The budget's view of one step.
#[derive(Clone, Debug, Default)]
struct BudgetStep {
    /// Tokens accepted up to this step.
    tokens: usize,
    /// A completion known to fit that the output has followed so far: the state's own
    /// shortest completion may take more tokens than the rest of one begun earlier (token
    /// counts do not shrink with bytes), and this one still fits.
    plan: Option<Plan>,
}

/// The rest of a completion: `tokens[next..]`.
#[derive(Clone, Debug)]
struct Plan {
    tokens: Arc<[u32]>,
    next: usize,
}

impl Plan {
    fn len(&self) -> usize {
        self.tokens.len() - self.next
    }

    fn head(&self) -> Option<u32> {
        self.tokens.get(self.next).copied()
    }
}

impl Clone for Matcher {
    fn clone(&self) -> Matcher {
        Matcher {
            grammar: self.grammar.clone(),
            history: self.history.clone(),
            ended_at: self.ended_at,
            check: self.check.as_ref().map(|c| c.boxed_clone()),
            budget_steps: self.budget_steps.clone(),
            budget: self.budget,
            narrowed: self.narrowed,
        }
    }
}

impl Matcher {
    /// A matcher at the start of `grammar`.
    pub fn new(grammar: Arc<CompiledGrammar>) -> Matcher {
        let initial = grammar.initial();
        let check = grammar.text_check().map(|c| c.start());
        Matcher {
            grammar,
            history: vec![initial],
            ended_at: None,
            check,
            budget_steps: vec![BudgetStep::default()],
            budget: None,
            narrowed: (0, None),
        }
    }

    /// A matcher at the start of `grammar` whose output takes at most `max_tokens` tokens
    /// (see [`Matcher::set_token_budget`]).
    pub fn with_token_budget(
        grammar: Arc<CompiledGrammar>,
        max_tokens: usize,
    ) -> Result<Matcher, MatchError> {
        let mut m = Matcher::new(grammar);
        m.set_token_budget(Some(max_tokens))?;
        Ok(m)
    }

    /// Bounds the whole output to `max_tokens` tokens (those accepted so far included; the
    /// end-of-sequence token is not counted), or lifts the bound with `None`.
    ///
    /// Under a budget the mask allows only tokens after which the shortest completion (see
    /// [`Matcher::shortest_completion`]) still fits, so the output is complete when the budget
    /// runs out: when tokens are ample the mask is exactly the unbudgeted one, and as they run
    /// out it narrows to the tokens that close the output in time. Returns
    /// [`MatchError::BudgetTooSmall`] (and leaves the budget as it was) when even the
    /// shortest completion does not fit.
    pub fn set_token_budget(&mut self, max_tokens: Option<usize>) -> Result<(), MatchError> {
        if let Some(budget) = max_tokens {
            let used = self.tokens_used();
            let needed = used.saturating_add(self.tokens_to_complete()?);
            if needed > budget {
                return Err(MatchError::BudgetTooSmall { needed, budget });
            }
        }
        self.budget = max_tokens;
        Ok(())
    }

    /// The token budget, if one is set.
    pub fn token_budget(&self) -> Option<usize> {
        self.budget
    }

    /// Tokens accepted so far (end-of-sequence and byte runs not counted).
    pub fn tokens_used(&self) -> usize {
        self.budget_steps.last().map_or(0, |b| b.tokens)
    }

    /// Tokens the budget leaves, if one is set.
    pub fn tokens_left(&self) -> Option<usize> {
        self.budget.map(|b| b.saturating_sub(self.tokens_used()))
    }

    /// Steps whose mask the budget narrowed so far (the tokens it constrained).
    pub fn budget_constrained_steps(&self) -> usize {
        self.narrowed.0
    }

    /// Whether the budget narrowed the mask filled at the current step (the next token, if
    /// drawn from that mask, is budget-constrained).
    pub fn budget_narrowed_now(&self) -> bool {
        self.narrowed.1 == Some(self.steps())
    }

    /// The shortest completion of the output so far: the fewest bytes that make it a
    /// complete sentence, and their longest-match tokens (a sound bound on the fewest
    /// tokens). `None` when the output has ended or nothing completes it.
    pub fn shortest_completion(&self) -> Result<Option<Completion>, MatchError> {
        if self.is_ended() {
            return Ok(None);
        }
        self.grammar.completion(self.state())
    }

    /// At the current state: the budget's bound on the tokens the shortest completion takes
    /// after any allowed token (`u64::MAX` where it has none), and the most they take, found
    /// by a walk of the trie; `None` once ended. The bound must never be below the walk's
    /// figure: this exists to test that.
    #[doc(hidden)]
    pub fn budget_bound_and_widest(&self) -> Result<Option<(u64, u64)>, MatchError> {
        if self.is_ended() {
            return Ok(None);
        }
        let state = self.state();
        Ok(Some((
            self.grammar.bound_after(state),
            self.grammar.widest_after(state)?,
        )))
    }

    /// The fewest tokens known to complete the output: the shortest completion's, or those
    /// left of the completion the output follows.
    fn tokens_to_complete(&self) -> Result<usize, MatchError> {
        if self.is_ended() {
            return Ok(0);
        }
        let own = self.grammar.completion_tokens(self.state())?;
        let own = usize::try_from(own).unwrap_or(usize::MAX);
        Ok(match self.plan() {
            Some(p) => own.min(p.len()),
            None => own,
        })
    }

    /// The completion the output follows at this step, if it follows one begun earlier.
    fn plan(&self) -> Option<&Plan> {
        self.budget_steps.last().and_then(|b| b.plan.as_ref())
    }

    /// The next token of a completion that fits: the followed one's, else the state's own.
    fn plan_head(&self) -> Result<Option<u32>, MatchError> {
        if let Some(head) = self.plan().and_then(Plan::head) {
            return Ok(Some(head));
        }
        Ok(self
            .grammar
            .completion(self.state())?
            .and_then(|c| c.tokens.first().copied()))
    }

    /// Whether the budget lets `token`, which leads to `next`, come now; and the completion
    /// the output then follows.
    fn budget_step(&self, token: u32, next: StateId) -> Result<Option<BudgetStep>, MatchError> {
        let tokens = self.tokens_used() + 1;
        let Some(left) = self.tokens_left() else {
            return Ok(Some(BudgetStep { tokens, plan: None }));
        };
        if left == 0 {
            return Ok(None);
        }
        let room = (left - 1) as u64;
        if self.grammar.budget_is_ample(self.state(), room) {
            // Whatever comes, what completes the output then fits.
            return Ok(Some(BudgetStep { tokens, plan: None }));
        }
        // Following the completion that fits keeps it.
        let followed = match self.plan() {
            Some(p) if p.head() == Some(token) => Some(Plan {
                tokens: p.tokens.clone(),
                next: p.next + 1,
            }),
            Some(_) => None,
            None => self
                .grammar
                .completion(self.state())?
                .filter(|c| c.tokens.first() == Some(&token))
                .map(|c| Plan {
                    tokens: c.tokens,
                    next: 1,
                }),
        };
        if followed.is_some() {
            return Ok(Some(BudgetStep {
                tokens,
                plan: followed,
            }));
        }
        let bytes = step_bytes(self.grammar.vocabulary(), token).unwrap_or_default();
        let Some(after) = self.grammar.completion_after(self.state(), &bytes, next)? else {
            return Ok(None);
        };
        if after.tokens.len() as u64 > room {
            return Ok(None);
        }
        // From a state of several scans, the completion that fits may be one scan's alone,
        // longer in tokens than `next`'s own: the output follows it then.
        let plan = (self.grammar.completion_tokens(next)? > room).then_some(Plan {
            tokens: after.tokens,
            next: 0,
        });
        Ok(Some(BudgetStep { tokens, plan }))
    }

    /// The compiled grammar.
    pub fn grammar(&self) -> &Arc<CompiledGrammar> {
        &self.grammar
    }

    /// The automaton state of the output so far (for the crate's tests).
    #[cfg(test)]
    pub(crate) fn current_state(&self) -> StateId {
        self.state()
    }

    fn state(&self) -> StateId {
        self.history.last().copied().unwrap_or(DEAD)
    }

    fn is_ended(&self) -> bool {
        self.ended_at.is_some()
    }

    /// Writes the allowed tokens into `mask`: bit `j % 32` of word `j / 32` is 1 when token `j`
    /// may come next. `mask` must have [`CompiledGrammar::mask_words`] words. End-of-sequence
    /// tokens are allowed exactly when [`Matcher::is_accepting`]; ids without a token, and
    /// padding ids up to the logits width, never are.
    pub fn fill_mask(&mut self, mask: &mut [u32]) -> Result<(), MatchError> {
        let expected = self.grammar.mask_words();
        if mask.len() != expected {
            return Err(MatchError::MaskLength {
                got: mask.len(),
                expected,
            });
        }
        if self.is_ended() {
            mask.fill(0);
            return Ok(());
        }
        let state = self.state();
        mask.copy_from_slice(&self.grammar.mask(state)?);
        if let Some(check) = &self.check {
            check.refine(mask);
        }
        if let Some(left) = self.tokens_left() {
            let narrowed = if left == 0 {
                let any = mask.iter().any(|&w| w != 0);
                mask.fill(0);
                any
            } else if self.grammar.budget_is_ample(state, (left - 1) as u64) {
                false
            } else {
                let keep = self.plan_head()?;
                self.grammar
                    .fit_to_budget(state, mask, (left - 1) as u64, keep)?
            };
            let step = self.steps();
            if narrowed && self.narrowed.1 != Some(step) {
                self.narrowed = (self.narrowed.0 + 1, Some(step));
            }
        }
        if self.grammar.with_automaton(|a| a.is_accepting(state)) {
            for &eos in self.grammar.token_index().eos() {
                mask[(eos >> 5) as usize] |= 1 << (eos & 31);
            }
        }
        Ok(())
    }

    /// Whether `token` may come next.
    pub fn is_token_allowed(&mut self, token: u32) -> Result<bool, MatchError> {
        Ok(self.step_token(token)?.is_some())
    }

    /// Accepts `token`, or returns an error and leaves the state unchanged.
    pub fn accept_token(&mut self, token: u32) -> Result<(), MatchError> {
        match self.step_token(token)? {
            Some(Step::Eos) => {
                self.ended_at = Some(self.history.len());
                self.history.push(self.state());
                let tokens = self.tokens_used();
                self.budget_steps.push(BudgetStep { tokens, plan: None });
                Ok(())
            }
            Some(Step::To(next, budget)) => {
                if let Some(check) = &mut self.check {
                    check.accept(&step_bytes(self.grammar.vocabulary(), token).unwrap_or_default());
                }
                self.history.push(next);
                self.budget_steps.push(budget);
                Ok(())
            }
            None => Err(MatchError::TokenNotAllowed { token }),
        }
    }

    /// Where `token` leads, or `None` if it is not allowed (by the grammar, the text check
    /// or the budget).
    fn step_token(&self, token: u32) -> Result<Option<Step>, MatchError> {
        match self.grammar_step(token)? {
            Some(GrammarStep::To(next)) => Ok(self
                .budget_step(token, next)?
                .map(|budget| Step::To(next, budget))),
            Some(GrammarStep::Eos) => Ok(Some(Step::Eos)),
            None => Ok(None),
        }
    }

    /// Where `token` leads by the grammar and the text check alone.
    fn grammar_step(&self, token: u32) -> Result<Option<GrammarStep>, MatchError> {
        if self.is_ended() {
            return Err(MatchError::Finished);
        }
        let vocab = self.grammar.vocabulary();
        if token as usize >= vocab.logits_width() {
            return Err(MatchError::UnknownToken {
                token,
                vocab_size: vocab.logits_width(),
            });
        }
        let state = self.state();
        if let Some(check) = &self.check {
            let text = step_bytes(vocab, token).unwrap_or_default();
            if !text.is_empty() && !check.allows(&text) {
                return Ok(None);
            }
        }
        if vocab.kind(token) == Some(TokenKind::EndOfSequence) {
            return Ok(self
                .grammar
                .with_automaton(|a| a.is_accepting(state))
                .then_some(GrammarStep::Eos));
        }
        let Some(bytes) = step_bytes(vocab, token) else {
            return Ok(None);
        };
        let next = self.grammar.with_automaton(|a| walk(a, state, &bytes))?;
        Ok((next != DEAD).then_some(GrammarStep::To(next)))
    }

    /// Accepts raw bytes (any number of them, as one step for [`Matcher::rollback`]), or
    /// returns an error and leaves the state unchanged.
    pub fn accept_bytes(&mut self, bytes: &[u8]) -> Result<(), MatchError> {
        if self.is_ended() {
            return Err(MatchError::Finished);
        }
        let state = self.state();
        let next =
            self.grammar
                .with_automaton(|a| -> Result<Result<StateId, usize>, MatchError> {
                    let mut s = state;
                    for (offset, &b) in bytes.iter().enumerate() {
                        s = a.next_byte(s, b)?;
                        if s == DEAD {
                            return Ok(Err(offset));
                        }
                    }
                    Ok(Ok(s))
                })?;
        match next {
            Ok(s) => {
                if let Some(check) = &mut self.check {
                    if !check.allows(bytes) {
                        // The first byte after which the check refuses.
                        let offset = (1..=bytes.len())
                            .find(|&n| !check.allows(&bytes[..n]))
                            .map_or(0, |n| n - 1);
                        return Err(MatchError::BytesRejected { offset });
                    }
                }
                if let Some(budget) = self.budget {
                    // Bytes take no tokens, but what completes the output after them must fit.
                    let needed = self.grammar.completion_tokens(s)?;
                    let needed = usize::try_from(needed)
                        .unwrap_or(usize::MAX)
                        .saturating_add(self.tokens_used());
                    if needed > budget {
                        return Err(MatchError::BudgetTooSmall { needed, budget });
                    }
                }
                if let Some(check) = &mut self.check {
                    check.accept(bytes);
                }
                self.history.push(s);
                let tokens = self.tokens_used();
                self.budget_steps.push(BudgetStep { tokens, plan: None });
                Ok(())
            }
            Err(offset) => Err(MatchError::BytesRejected { offset }),
        }
    }

    /// Whether the output so far is complete: end-of-sequence is allowed now.
    pub fn is_accepting(&self) -> bool {
        !self.is_ended()
            && self
                .grammar
                .with_automaton(|a| a.is_accepting(self.state()))
    }

    /// Whether nothing but the end can follow (or the end was already accepted).
    pub fn is_finished(&self) -> bool {
        self.is_ended() || self.grammar.with_automaton(|a| a.is_finished(self.state()))
    }

    /// Whether an end-of-sequence token has been accepted.
    pub fn has_ended(&self) -> bool {
        self.is_ended()
    }

    /// Tokens the grammar forces next, to append without sampling.
    ///
    /// Follows the bytes the grammar allows as the only continuation and splits them into the
    /// longest vocabulary tokens, stopping before a token that a longer allowed token could
    /// extend beyond the forced bytes (so the forced text never cuts a better tokenization).
    pub fn forced_tokens(&mut self) -> Result<Vec<u32>, MatchError> {
        let tokens = self.forced_by_grammar()?;
        if self.budget.is_none() || tokens.is_empty() {
            return Ok(tokens);
        }
        // Under a budget, the forced text must also be tokenized so that the output still
        // completes in time: keep the tokens the budget allows one after another.
        let mut ahead = self.clone();
        let mut kept = Vec::with_capacity(tokens.len());
        for token in tokens {
            if ahead.accept_token(token).is_err() {
                break;
            }
            kept.push(token);
        }
        Ok(kept)
    }

    /// [`Matcher::forced_tokens`] by the grammar alone.
    fn forced_by_grammar(&mut self) -> Result<Vec<u32>, MatchError> {
        if self.is_ended() {
            return Ok(Vec::new());
        }
        let forced = self
            .grammar
            .with_automaton(|a| forced_bytes(a, self.state()))?;
        let index = self.grammar.token_index();
        let mut tokens = Vec::new();
        let mut at = 0;
        while at < forced.len() {
            let mut node = 0usize;
            let mut best: Option<(usize, u32)> = None;
            let mut consumed = 0;
            for &b in &forced[at..] {
                match index.child(node, b) {
                    Some(child) => {
                        node = child;
                        consumed += 1;
                        if let Some(&t) = index.tokens_of(node).first() {
                            best = Some((consumed, t));
                        }
                    }
                    None => break,
                }
            }
            if at + consumed == forced.len() && index.has_children(node) {
                // A token longer than the forced text could be the model's choice.
                break;
            }
            match best {
                Some((len, token)) => {
                    tokens.push(token);
                    at += len;
                }
                None => break,
            }
        }
        Ok(tokens)
    }

    /// Undoes the last `n` accepted steps (tokens or byte runs).
    pub fn rollback(&mut self, n: usize) -> Result<(), MatchError> {
        let available = self.history.len() - 1;
        if n > available {
            return Err(MatchError::RollbackTooFar {
                requested: n,
                available,
            });
        }
        // The end-of-sequence step is not the check's.
        let ended_step = self.ended_at.is_some_and(|at| at + n >= self.history.len());
        self.history.truncate(self.history.len() - n);
        self.budget_steps.truncate(self.history.len());
        if self.ended_at.is_some_and(|at| at >= self.history.len()) {
            self.ended_at = None;
        }
        if let Some(check) = &mut self.check {
            check.rollback(n - usize::from(ended_step));
        }
        Ok(())
    }

    /// Number of steps accepted so far.
    pub fn steps(&self) -> usize {
        self.history.len() - 1
    }

    /// Back to the start of the grammar.
    pub fn reset(&mut self) {
        self.history.truncate(1);
        self.budget_steps.truncate(1);
        self.ended_at = None;
        self.check = self.grammar.text_check().map(|c| c.start());
    }
}

impl std::fmt::Debug for Matcher {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Matcher")
            .field("steps", &self.steps())
            .field("state", &self.state())
            .field("ended", &self.is_ended())
            .finish()
    }
}

/// The text `token` spells (a special token as its marker bytes); empty for end of sequence.
/// The bytes the automaton reads for `token`: a text token's own, a special token's marker
/// and id; `None` for end-of-sequence and ids without bytes.
fn step_bytes(vocab: &constrain_vocab::Vocabulary, token: u32) -> Option<Cow<'_, [u8]>> {
    match (vocab.kind(token), vocab.token_bytes(token)) {
        (Some(TokenKind::Special), _) => Some(Cow::Owned(special_token_bytes(token).to_vec())),
        (Some(TokenKind::Text), Some(bytes)) if !bytes.is_empty() => Some(Cow::Borrowed(bytes)),
        _ => None,
    }
}

enum Step {
    To(StateId, BudgetStep),
    Eos,
}

enum GrammarStep {
    To(StateId),
    Eos,
}

fn walk(a: &mut Automaton, mut state: StateId, bytes: &[u8]) -> Result<StateId, MatchError> {
    for &b in bytes {
        state = a.next_byte(state, b)?;
        if state == DEAD {
            break;
        }
    }
    Ok(state)
}

/// The bytes that must come next, up to the first choice (several bytes, or the end).
fn forced_bytes(a: &mut Automaton, mut state: StateId) -> Result<Vec<u8>, MatchError> {
    let mut bytes = Vec::new();
    while bytes.len() < MAX_FORCED_BYTES && !a.is_accepting(state) {
        let mut only = None;
        for class in 0..a.classes() {
            let next = a.next(state, class)?;
            if next == DEAD {
                continue;
            }
            if only.is_some() {
                return Ok(bytes);
            }
            only = Some((class, next));
        }
        let Some((class, next)) = only else { break };
        let Some(byte) = a.lexer.single_byte_of_class(class) else {
            break;
        };
        bytes.push(byte);
        state = next;
    }
    Ok(bytes)
}

/// Fills the masks of many matchers in parallel: `masks` holds one
/// [`CompiledGrammar::mask_words`]-sized slice per matcher, in order.
pub fn fill_masks(matchers: &mut [Matcher], masks: &mut [u32]) -> Result<(), MatchError> {
    let Some(words) = matchers.first().map(|m| m.grammar.mask_words()) else {
        return Ok(());
    };
    if matchers.iter().any(|m| m.grammar.mask_words() != words)
        || masks.len() != words * matchers.len()
    {
        return Err(MatchError::MaskLength {
            got: masks.len(),
            expected: words * matchers.len(),
        });
    }
    matchers
        .par_iter_mut()
        .zip(masks.par_chunks_mut(words))
        .try_for_each(|(m, mask)| m.fill_mask(mask))
}
