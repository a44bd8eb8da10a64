//! [`Step`]: one sequence's decoding, step by step, for any driver.
//!
//! Every decode loop does the same per sequence: stop when the grammar is finished, the budget
//! spent or the context full; append the tokens the grammar forces; otherwise draft from the
//! prompt lookup, have the model score the draft, verify it, and draw under the mask. What
//! differs is how the model is run: a scheduler batches many sequences into one decode, a
//! single-sequence loop evaluates while the next mask is filled on another thread, a closure
//! model is called once per row. So the step is split at the model:
//!
//! 1. [`Step::next`] says which tokens to evaluate and how many rows of logits the draw needs
//!    ([`Next::Evaluate`]), or that the sequence is over ([`Next::Done`]);
//! 2. [`Step::sample`] (all rows at once) or [`Step::sample_row`] (one at a time, until it
//!    says [`Verified::Done`]) verifies the draft and draws from those rows.
//!
//! Every token the step appends (forced, verified, drawn, the end token) goes to the driver's
//! `emit` callback as an [`Emitted`], which may end the sequence there (a stop string).
//!
//! The outputs depend only on the constraint, the settings, the seed and the logits: the same
//! inputs give the same tokens whichever driver runs the step.

use std::time::{Duration, Instant};

use constrain_engine::{MatchError, Matcher};
use constrain_sampling::{
    log_normalizer, token_logprobs, DraftCheck, Funnel, History, SamplerConfig, TokenLogprobs,
    Xoshiro256StarStar,
};
use constrain_vocab::{TokenKind, Vocabulary};

use crate::constraint::Error;
use crate::lookup::{grammar_prefix, prompt_lookup, DraftLength};
use crate::trace::{DrawnStep, StepTrace};
use crate::triggered::TriggeredMatcher;

mod constraint;
#[cfg(test)]
mod tests;

pub use constraint::StepConstraint;

/// How a [`Step`] runs: limits, forced tokens, drafts, log-probabilities.
#[derive(Clone, Debug)]
pub struct StepOptions {
    /// Most tokens to generate, forced and drawn together (the end token not counted).
    pub max_tokens: usize,
    /// Tokens the model's context holds after the prompt (`None`: no bound).
    pub room: Option<usize>,
    /// Whether the output completes within `max_tokens` and `room`: the constraint gets them
    /// as its token budget, so its mask narrows in time (see [`Matcher::set_token_budget`]).
    /// Without it the output is cut off where the limit falls.
    pub complete_within: bool,
    /// Append the tokens the grammar forces without drawing them. Off, every token is drawn
    /// from the masked logits, forced text included (the model picks its own tokenization).
    pub fast_forward: bool,
    /// Longest prompt-lookup draft (0: no drafts; see [`prompt_lookup`]).
    pub lookup: usize,
    /// Shorten drafts, and pause them, after rejections ([`DraftLength`]): where each drafted
    /// row costs the model time. Off, every draft is up to `lookup` long.
    pub adaptive_drafts: bool,
    /// Score every drawn token: `Some(k)` gives its log-probability under the model and the
    /// `k` most likely alternatives ([`Emitted::logprobs`]), and sums the output's score under
    /// the constraint ([`StepStats::sequence_logprob`]).
    pub logprobs: Option<usize>,
    /// Trace every appended token: `Some(k)` gives each [`Emitted::trace`], with the `k` most
    /// likely candidates before and after the mask and the funnel (see [`StepTrace`]).
    pub trace: Option<usize>,
}

impl Default for StepOptions {
    /// No limit, no context bound, forced tokens fast-forwarded, no drafts, no scores.
    fn default() -> StepOptions {
        StepOptions {
            max_tokens: usize::MAX,
            room: None,
            complete_within: false,
            fast_forward: true,
            lookup: 0,
            adaptive_drafts: true,
            logprobs: None,
            trace: None,
        }
    }
}

/// What the driver does next.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Next {
    /// Evaluate these tokens (after those already evaluated), then sample from the logits
    /// after each of the last `rows` of them: 1, or 1 plus a draft's length.
    Evaluate {
        /// The tokens, a draft last.
        tokens: Vec<u32>,
        /// How many of the last tokens need logits.
        rows: usize,
    },
    /// The sequence is over.
    Done(Stop),
}

/// Why a sequence ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stop {
    /// The grammar admits nothing more.
    GrammarFinished,
    /// An end-of-sequence token was drawn.
    EndOfSequence,
    /// The constraint's token budget is spent, on an output it completed in time.
    BudgetComplete,
    /// `max_tokens` tokens were generated.
    MaxTokens,
    /// The context is full.
    ContextFull,
    /// The driver's `emit` ended it (a stop string).
    Halted,
}

/// One token the step appended, as the driver's `emit` callback sees it.
#[derive(Clone, Debug)]
pub struct Emitted {
    /// The token.
    pub token: u32,
    /// Whether the grammar forced it (appended without a draw).
    pub forced: bool,
    /// Whether it is an end-of-sequence token: the sequence ends with it.
    pub end: bool,
    /// Whether no grammar governs the output after it (no constraint, or free text before a
    /// trigger): what a driver may cut at a stop string without breaking the output.
    pub free_text: bool,
    /// Its score, with [`StepOptions::logprobs`] (drawn tokens only).
    pub logprobs: Option<TokenLogprobs>,
    /// What the step did, with [`StepOptions::trace`].
    pub trace: Option<Box<StepTrace>>,
}

/// Where a verification stands, after [`Step::sample_row`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Verified {
    /// Another row is wanted: the logits after the token just kept.
    More,
    /// This evaluation's rows are done; the last `rejected` evaluated tokens (a draft's
    /// rejected tail) are not part of the output and must be cut from the model's cache.
    Done {
        /// Drafted tokens verification rejected.
        rejected: usize,
    },
}

/// Counters of one sequence.
#[derive(Clone, Debug, Default)]
pub struct StepStats {
    /// Tokens drawn from logits (verified drafts and end tokens included).
    pub drawn: usize,
    /// Tokens appended because the grammar forced them.
    pub forced: usize,
    /// Drafted tokens verified.
    pub drafted: usize,
    /// Drafted tokens verification kept.
    pub accepted_drafts: usize,
    /// With [`StepOptions::logprobs`]: the sum, over drawn tokens, of their log-probability in
    /// the model's distribution masked to the allowed tokens and renormalized.
    pub sequence_logprob: f64,
}

/// One sequence's decoding state: the constraint, the sampling funnel with its history and
/// seeded generator, the limits, the pending tokens and the draft under verification.
#[derive(Clone, Debug)]
pub struct Step {
    constraint: StepConstraint,
    funnel: Funnel,
    history: History,
    rng: Xoshiro256StarStar,
    vocabulary: std::sync::Arc<Vocabulary>,
    options: StepOptions,
    mask: Vec<u32>,
    /// `Some(constrained)` when `mask` already holds the next draw's mask.
    prefilled: Option<bool>,
    /// How long each mask took since the driver last asked ([`Step::take_mask_times`]).
    mask_times: Vec<Duration>,
    /// Tokens appended and not yet evaluated.
    pending: Vec<u32>,
    /// The draft under verification, evaluated after `pending`.
    draft: Vec<u32>,
    /// Whether a token is drawn after a wholly kept draft (false: the grammar forces or ends
    /// there, and [`Step::next`] goes on from it).
    draw_after_draft: bool,
    draft_length: DraftLength,
    /// Rows of the current evaluation verified so far, and drafted tokens kept among them.
    row: usize,
    kept: usize,
    /// Tokens generated (forced and drawn, the end token included).
    generated: usize,
    stop: Option<Stop>,
    stats: StepStats,
    /// The trace of the token [`Step::draw_unaccepted`] drew last, until it is fed.
    drawn: Option<Box<StepTrace>>,
    /// Traces of the tokens fed by the driver, until taken.
    fed_trace: Vec<StepTrace>,
}

impl Step {
    /// A sequence after `prompt` (which the penalties and the lookup see, and which the driver
    /// evaluates itself), under `constraint`, drawing with a generator seeded by `seed`.
    ///
    /// # Errors
    ///
    /// [`Error::Match`] ([`MatchError::BudgetTooSmall`]) when the constraint cannot complete
    /// within the limits and [`StepOptions::complete_within`] asks it to; [`Error::Sampling`]
    /// for sampling settings the funnel refuses.
    pub fn new(
        constraint: StepConstraint,
        vocabulary: std::sync::Arc<Vocabulary>,
        sampling: SamplerConfig,
        seed: u64,
        prompt: &[u32],
        options: StepOptions,
    ) -> Result<Step, Error> {
        let mut constraint = constraint;
        constraint.set_token_budget(budget(&options))?;
        Ok(Step {
            mask: vec![0; constraint.mask_words()],
            constraint,
            funnel: Funnel::new(sampling)?,
            history: History::from_prompt(prompt),
            rng: Xoshiro256StarStar::seed_from_u64(seed),
            vocabulary,
            draft_length: DraftLength::new(options.lookup),
            options,
            prefilled: None,
            mask_times: Vec::new(),
            pending: Vec::new(),
            draft: Vec::new(),
            draw_after_draft: true,
            row: 0,
            kept: 0,
            generated: 0,
            stop: None,
            stats: StepStats::default(),
            drawn: None,
            fed_trace: Vec::new(),
        })
    }

    /// Starts a new run from the current state, under new limits: the counters, the stop and
    /// the draft lengths start over; the constraint, history and generator go on. `unevaluated`
    /// are the tokens the model has not seen (for a model that sees every token at each call,
    /// all of them).
    pub(crate) fn restart(
        &mut self,
        max_tokens: usize,
        complete_within: bool,
        unevaluated: Vec<u32>,
    ) -> Result<(), MatchError> {
        self.options.max_tokens = max_tokens;
        self.options.complete_within = complete_within;
        self.constraint.set_token_budget(budget(&self.options))?;
        self.pending = unevaluated;
        self.draft.clear();
        self.draw_after_draft = true;
        self.draft_length = DraftLength::new(self.options.lookup);
        (self.row, self.kept, self.generated) = (0, 0, 0);
        self.stop = None;
        self.prefilled = None;
        self.stats = StepStats::default();
        Ok(())
    }

    /// Makes `prompt` the history's start (before anything was generated).
    pub(crate) fn set_prompt(&mut self, prompt: &[u32]) {
        self.history = History::from_prompt(prompt);
    }

    /// Sets the longest draft (0: none), for the runs that follow.
    pub(crate) fn set_lookup(&mut self, max_draft: usize) {
        self.options.lookup = max_draft;
        self.draft_length = DraftLength::new(max_draft);
    }

    /// The constraint in its current state.
    pub fn constraint(&self) -> &StepConstraint {
        &self.constraint
    }

    /// Every token so far, prompt first.
    pub fn history(&self) -> &History {
        &self.history
    }

    /// Tokens generated (forced and drawn, the end token included).
    pub fn generated(&self) -> usize {
        self.generated
    }

    /// Why the sequence ended, once it has.
    pub fn stop(&self) -> Option<Stop> {
        self.stop
    }

    /// The counters.
    pub fn stats(&self) -> &StepStats {
        &self.stats
    }

    /// How long each mask filled since the last call took (constrained steps only).
    pub fn take_mask_times(&mut self) -> Vec<Duration> {
        std::mem::take(&mut self.mask_times)
    }

    /// The tokens to evaluate before the next draw, or the end. Tokens the grammar forces are
    /// appended here (and emitted) without a draw.
    ///
    /// # Errors
    ///
    /// The constraint's errors.
    pub fn next(&mut self, emit: &mut dyn FnMut(Emitted) -> bool) -> Result<Next, Error> {
        loop {
            if let Some(stop) = self.stop {
                return Ok(Next::Done(stop));
            }
            let budget = self.options.max_tokens.saturating_sub(self.generated);
            let room = match self.options.room {
                Some(room) => room.saturating_sub(self.generated),
                None => usize::MAX,
            };
            if self.constraint.is_finished() {
                self.stop = Some(Stop::GrammarFinished);
                continue;
            }
            if self.constraint.budget_spent() {
                self.stop = Some(Stop::BudgetComplete);
                continue;
            }
            if self.options.fast_forward {
                let forced = self.constraint.forced_tokens()?;
                if !forced.is_empty() {
                    let take = forced.len().min(budget).min(room);
                    if take == 0 {
                        self.stop = Some(limit_stop(budget));
                        continue;
                    }
                    for &token in &forced[..take] {
                        let trace = self.options.trace.map(|_| {
                            let left = self.constraint.tokens_left();
                            Box::new(StepTrace::forced(&self.vocabulary, token, left))
                        });
                        self.constraint.accept_token(token)?;
                        self.stats.forced += 1;
                        if !self.push(token, true, None, trace, emit) {
                            break;
                        }
                    }
                    continue;
                }
            }
            if budget == 0 || room == 0 {
                self.stop = Some(limit_stop(budget));
                continue;
            }
            // A draft leaves room for the token drawn after it, in the budget and the context.
            self.draft_next(budget.min(room) - 1)?;
            let mut tokens = std::mem::take(&mut self.pending);
            tokens.extend_from_slice(&self.draft);
            (self.row, self.kept) = (0, 0);
            return Ok(Next::Evaluate {
                tokens,
                rows: 1 + self.draft.len(),
            });
        }
    }

    /// Sets the draft to the prompt lookup's continuation of up to `max_len` tokens (fewer, or
    /// none, after rejected drafts when adaptive), cut where plain decoding would not draw them
    /// ([`grammar_prefix`]). Nothing is drafted with nothing pending (the first verifying row
    /// would be another evaluation's) or under a triggered constraint (free text, then a
    /// grammar: the cut would need both).
    fn draft_next(&mut self, max_len: usize) -> Result<(), MatchError> {
        self.draft.clear();
        self.draw_after_draft = true;
        if self.pending.is_empty() || matches!(self.constraint, StepConstraint::Triggered(_)) {
            return Ok(());
        }
        let max_len = max_len.min(self.draft_length.at_draw_point());
        if max_len == 0 {
            return Ok(());
        }
        let mut draft = prompt_lookup(self.history.tokens(), max_len).to_vec();
        match &mut self.constraint {
            StepConstraint::None => {
                let end = draft
                    .iter()
                    .position(|&t| self.vocabulary.kind(t) == Some(TokenKind::EndOfSequence));
                draft.truncate(end.unwrap_or(draft.len()));
            }
            StepConstraint::Grammar(m) => {
                let cut = grammar_prefix(m, &draft, self.options.fast_forward)?;
                draft.truncate(cut.tokens);
                self.draw_after_draft = cut.then_draw || draft.is_empty();
            }
            StepConstraint::Triggered(_) => draft.clear(),
        }
        self.draft = draft;
        Ok(())
    }

    /// Fills the mask of the next draw ahead of [`Step::sample`], while the model evaluates:
    /// the mask depends only on the tokens accepted so far, not on the logits. It serves the
    /// first row only. A failure is left for the draw to meet again and report.
    pub fn prefill_mask(&mut self) {
        let t = Instant::now();
        if let Ok(masked) = self.constraint.fill_mask(&mut self.mask) {
            if masked {
                self.mask_times.push(t.elapsed());
            }
            self.prefilled = Some(masked);
        }
    }

    /// Verifies the draft and draws from `rows`, the logits after each of the last `rows`
    /// evaluated tokens ([`Next::Evaluate`]); returns how many drafted tokens were rejected
    /// (to cut from the model's cache). Rows past the first rejection are not read.
    ///
    /// # Errors
    ///
    /// The constraint's and the funnel's errors.
    pub fn sample(
        &mut self,
        rows: &[&[f32]],
        emit: &mut dyn FnMut(Emitted) -> bool,
    ) -> Result<usize, Error> {
        for logits in rows {
            if let Verified::Done { rejected } = self.sample_row(logits, emit)? {
                return Ok(rejected);
            }
        }
        // Fewer rows than asked for: what was verified stands, the rest of the draft goes.
        Ok(self.end_rows())
    }

    /// Whether the current evaluation has a row left to verify or draw at.
    fn wants_row(&self) -> bool {
        self.row < self.draft.len() || (self.row == self.draft.len() && self.draw_after_draft)
    }

    /// One row of [`Step::sample`]: verifies the drafted token at this row, or draws the token
    /// after the draft, from `logits`.
    ///
    /// # Errors
    ///
    /// The constraint's and the funnel's errors.
    pub fn sample_row(
        &mut self,
        logits: &[f32],
        emit: &mut dyn FnMut(Emitted) -> bool,
    ) -> Result<Verified, Error> {
        let drafted = self.draft.get(self.row).copied();
        let Drawn {
            token,
            logprobs,
            trace,
        } = self.draw(logits, drafted)?;
        let go_on = self.push(token, false, logprobs, trace, emit);
        self.row += 1;
        if drafted == Some(token) {
            self.kept += 1;
            if go_on && self.wants_row() {
                return Ok(Verified::More);
            }
        }
        Ok(Verified::Done {
            rejected: self.end_rows(),
        })
    }

    /// Closes an evaluation's verification: kept drafted tokens are evaluated already, so only
    /// a drawn token stays pending. Returns the rejected drafted tokens.
    fn end_rows(&mut self) -> usize {
        let (drafted, kept) = (self.draft.len(), self.kept);
        self.pending.drain(..kept.min(self.pending.len()));
        self.stats.drafted += drafted;
        self.stats.accepted_drafts += kept;
        if self.options.adaptive_drafts {
            self.draft_length.record(drafted, kept);
        }
        self.draft.clear();
        self.draw_after_draft = true;
        self.prefilled = None;
        (self.row, self.kept) = (0, 0);
        drafted - kept
    }

    /// One token from `logits` under the mask of the current state: `drafted` when the
    /// verification keeps it, else a draw (the replacement of a rejected draft), with its
    /// score and trace when asked for. The constraint accepts it.
    fn draw(&mut self, logits: &[f32], drafted: Option<u32>) -> Result<Drawn, Error> {
        let masked = match self.prefilled.take() {
            Some(masked) => masked,
            None => self.fill_mask()?,
        };
        let mask = masked.then_some(self.mask.as_slice());
        let token = match drafted {
            None => self
                .funnel
                .sample_from(logits, mask, &self.history, &mut self.rng)?,
            Some(drafted) => match self.funnel.verify_token(
                logits,
                mask,
                &self.history,
                drafted,
                &mut self.rng,
            )? {
                DraftCheck::Accepted => drafted,
                DraftCheck::Rejected { replacement } => replacement,
            },
        };
        let logprobs = match self.options.logprobs {
            Some(top) => {
                let scored = token_logprobs(logits, None, token, top)?;
                let logit = logits.get(token as usize).copied().unwrap_or(f32::NAN);
                self.stats.sequence_logprob += f64::from(logit) - log_normalizer(logits, mask)?;
                Some(scored)
            }
            None => None,
        };
        let trace = self.drawn_trace(logits, mask, token)?;
        self.constraint.accept_token(token)?;
        self.stats.drawn += 1;
        Ok(Drawn {
            token,
            logprobs,
            trace,
        })
    }

    /// With [`StepOptions::trace`], the trace of `token`, just drawn from `logits` under
    /// `mask` (before the constraint accepts it).
    fn drawn_trace(
        &self,
        logits: &[f32],
        mask: Option<&[u32]>,
        token: u32,
    ) -> Result<Option<Box<StepTrace>>, Error> {
        let Some(top) = self.options.trace else {
            return Ok(None);
        };
        let step = DrawnStep {
            logits,
            mask,
            funnel: self.funnel.last_distribution(),
            budget_narrowed: self.constraint.budget_narrowed_now(),
            budget_left: self.constraint.tokens_left(),
            top,
        };
        Ok(Some(Box::new(step.trace(&self.vocabulary, token)?)))
    }

    /// Fills the mask for the current state; false when every token is allowed.
    fn fill_mask(&mut self) -> Result<bool, MatchError> {
        let t = Instant::now();
        let masked = self.constraint.fill_mask(&mut self.mask)?;
        if masked {
            self.mask_times.push(t.elapsed());
        }
        Ok(masked)
    }

    /// Records an appended token (accepted by the constraint already) and emits it; false
    /// when the sequence ends with it.
    fn push(
        &mut self,
        token: u32,
        forced: bool,
        logprobs: Option<TokenLogprobs>,
        trace: Option<Box<StepTrace>>,
        emit: &mut dyn FnMut(Emitted) -> bool,
    ) -> bool {
        self.history.push(token);
        self.generated += 1;
        let end = self.vocabulary.kind(token) == Some(TokenKind::EndOfSequence);
        let emitted = Emitted {
            token,
            forced,
            end,
            free_text: self.constraint.is_free_text(),
            logprobs,
            trace,
        };
        if end {
            emit(emitted);
            self.stop = Some(Stop::EndOfSequence);
            return false;
        }
        self.pending.push(token);
        if !emit(emitted) {
            self.stop = Some(Stop::Halted);
            return false;
        }
        true
    }

    /// A draw from `logits` under the current mask, not accepted (for drivers that feed the
    /// token themselves).
    pub(crate) fn draw_unaccepted(&mut self, logits: &[f32]) -> Result<u32, Error> {
        let masked = self.fill_mask()?;
        let mask = masked.then_some(self.mask.as_slice());
        let token = self
            .funnel
            .sample_from(logits, mask, &self.history, &mut self.rng)?;
        self.drawn = self.drawn_trace(logits, mask, token)?;
        Ok(token)
    }

    /// Records a token the driver fed itself (the constraint and the penalties see it; the
    /// counters do not). With [`StepOptions::trace`], its trace is kept for
    /// [`take_fed_trace`](Self::take_fed_trace): the draw's, when it is the token last drawn,
    /// else that of a token appended without a draw.
    pub(crate) fn accept_fed(&mut self, token: u32) -> Result<(), MatchError> {
        let drawn = self.drawn.take().filter(|t| t.token == token);
        let trace = match (self.options.trace, drawn) {
            (None, _) => None,
            (Some(_), Some(drawn)) => Some(*drawn),
            (Some(_), None) => {
                let left = self.constraint.tokens_left();
                Some(StepTrace::forced(&self.vocabulary, token, left))
            }
        };
        self.constraint.accept_token(token)?;
        self.history.push(token);
        self.fed_trace.extend(trace);
        Ok(())
    }

    /// Traces every token fed with [`accept_fed`](Self::accept_fed) since the last call.
    pub(crate) fn take_fed_trace(&mut self) -> Vec<StepTrace> {
        std::mem::take(&mut self.fed_trace)
    }

    /// Turns tracing on with `candidates` per distribution, or off.
    pub(crate) fn set_trace(&mut self, candidates: Option<usize>) {
        self.options.trace = candidates;
        self.drawn = None;
    }

    /// The constraint, to query or change.
    pub(crate) fn constraint_mut(&mut self) -> &mut StepConstraint {
        &mut self.constraint
    }
}

/// A token [`Step::draw`] appended, with its score and trace when asked for.
struct Drawn {
    token: u32,
    logprobs: Option<TokenLogprobs>,
    trace: Option<Box<StepTrace>>,
}

/// The constraint's token budget under `options`: the limits, when the output must complete
/// within them.
fn budget(options: &StepOptions) -> Option<usize> {
    options
        .complete_within
        .then(|| options.max_tokens.min(options.room.unwrap_or(usize::MAX)))
}

/// Which limit stopped a sequence with no room left: the token limit or the context.
fn limit_stop(budget: usize) -> Stop {
    if budget == 0 {
        Stop::MaxTokens
    } else {
        Stop::ContextFull
    }
}

impl From<Matcher> for StepConstraint {
    fn from(matcher: Matcher) -> StepConstraint {
        StepConstraint::Grammar(matcher)
    }
}

impl From<TriggeredMatcher> for StepConstraint {
    fn from(matcher: TriggeredMatcher) -> StepConstraint {
        StepConstraint::Triggered(matcher)
    }
}
