//! Jobs and sequences: what a request asks of the model ([`Job`]), what comes back
//! ([`Event`]), and the decode loop of one sequence.
//!
//! A request becomes a [`Job`] (prompt tokens, `n` sequences, sampling, a compiled constraint,
//! a deadline) and reaches the scheduler ([`crate::scheduler`]) through the bounded queue of
//! [`crate::worker::Engine`]; what a sequence generates goes back to the request's handler as
//! [`Event`]s, token by token. A handler that goes away (a client that disconnected) closes its
//! channel, and the scheduler frees that job's slots at the next step.
//!
//! The decode loop of one sequence is split for batching: [`Sequence::next_tokens`] says which
//! tokens a sequence needs evaluated next (forced tokens are consumed there),
//! [`Sequence::sample`] takes the logits that follow them.

use std::sync::{Arc, OnceLock};
use std::time::Instant;

use constrain::{CompiledGrammar, DraftLength, Matcher, Trigger, TriggeredMatcher};
use constrain_sampling::{DraftCheck, Funnel, History, SamplerConfig, Xoshiro256StarStar};
use constrain_vocab::{TokenKind, Vocabulary};
use tokio::sync::mpsc::UnboundedSender;

use crate::error::ApiError;
use crate::metrics::SequenceStats;

/// What one request asks of the model.
pub struct Job {
    /// The prompt's tokens.
    pub prompt: Vec<u32>,
    /// How many sequences (choices) to generate from it.
    pub n: usize,
    /// Sampling, seed, limits.
    pub params: GenParams,
    /// The constraint, compiled; `None` for free text.
    pub constraint: Option<ConstraintKind>,
    /// Where the results go.
    pub events: UnboundedSender<Event>,
    /// When the job is abandoned if not done (it then fails with 504).
    pub deadline: Option<Instant>,
    /// Set by the scheduler when the job's first sequence takes a slot: the end of its wait
    /// in the queue, for the request's log line.
    pub admitted: Arc<OnceLock<Instant>>,
}

/// How a job's sequences are generated.
#[derive(Clone, Debug)]
pub struct GenParams {
    /// The sampling funnel's settings.
    pub sampling: SamplerConfig,
    /// Seed of the first sequence; sequence `i` uses `seed + i`.
    pub seed: u64,
    /// Most tokens per sequence.
    pub max_tokens: usize,
    /// Strings that end free text (not included in the output).
    pub stop: Vec<String>,
    /// Log-probabilities: `Some(k)` with the `k` most likely alternatives per token.
    pub logprobs: Option<usize>,
    /// Append forced tokens without sampling (off when log-probabilities are asked for: every
    /// token then has the model's own distribution).
    pub fast_forward: bool,
    /// Speculative decoding by prompt lookup: drafts of up to this many tokens, verified in
    /// the sequence's next decode (0: off).
    pub lookup: usize,
}

/// A compiled constraint as a sequence follows it.
#[derive(Clone)]
pub enum ConstraintKind {
    /// The grammar from the first token.
    Grammar(Arc<CompiledGrammar>),
    /// Free text until the trigger, then the grammar.
    Triggered(Arc<Trigger>, Arc<CompiledGrammar>),
}

/// What the scheduler reports about a job.
#[derive(Clone, Debug)]
pub enum Event {
    /// New text of sequence `index` (whole characters; may be empty when only log-probabilities
    /// are new).
    Delta {
        /// Which sequence.
        index: usize,
        /// The text.
        text: String,
        /// Log-probabilities of the tokens since the last delta.
        logprobs: Vec<TokenLogprob>,
    },
    /// Sequence `index` is complete.
    Done(Done),
    /// The job failed; nothing more follows.
    Failed(ApiError),
}

/// A finished sequence.
#[derive(Clone, Debug)]
pub struct Done {
    /// Which sequence.
    pub index: usize,
    /// The whole output text.
    pub text: String,
    /// Why it ended.
    pub finish: Finish,
    /// Tokens generated (sampled and forced, the end token included).
    pub completion_tokens: usize,
    /// Where a triggered constraint's trigger starts in the text, if it appeared.
    pub trigger_start: Option<usize>,
    /// Drafted tokens verified (with `lookup`; 0 without).
    pub drafted: usize,
    /// Drafted tokens the verification kept.
    pub accepted_drafts: usize,
}

/// Why a sequence ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Finish {
    /// The model ended, the grammar completed, or a stop string appeared.
    Stop,
    /// The token limit or the context ran out.
    Length,
}

/// One token's log-probability and its most likely alternatives.
#[derive(Clone, Debug, PartialEq)]
pub struct TokenLogprob {
    /// The token's bytes.
    pub bytes: Vec<u8>,
    /// Its log-probability under the model.
    pub logprob: f32,
    /// The most likely tokens at that step (bytes, log-probability), most likely first.
    pub top: Vec<(Vec<u8>, f32)>,
}

/// What a sequence needs next.
pub enum Next {
    /// These tokens evaluated (after those already evaluated), then [`Sequence::sample`] with
    /// the logits after each of the last `rows` of them: 1, or 1 plus a draft's length.
    Evaluate {
        /// The tokens, a draft last.
        tokens: Vec<u32>,
        /// How many of the last tokens need logits.
        rows: usize,
    },
    /// It is complete.
    Done(Done),
}

enum SeqConstraint {
    None,
    Grammar(Matcher),
    Triggered(TriggeredMatcher),
}

impl SeqConstraint {
    fn is_finished(&self) -> bool {
        match self {
            SeqConstraint::None => false,
            SeqConstraint::Grammar(m) => m.is_finished(),
            SeqConstraint::Triggered(t) => t.is_finished(),
        }
    }

    fn forced_tokens(&mut self) -> Result<Vec<u32>, constrain::MatchError> {
        match self {
            SeqConstraint::None => Ok(Vec::new()),
            SeqConstraint::Grammar(m) => m.forced_tokens(),
            SeqConstraint::Triggered(t) => t.forced_tokens(),
        }
    }

    fn accept(&mut self, token: u32) -> Result<(), constrain::MatchError> {
        match self {
            SeqConstraint::None => Ok(()),
            SeqConstraint::Grammar(m) => m.accept_token(token),
            SeqConstraint::Triggered(t) => t.accept_token(token),
        }
    }

    /// Fills `mask`; false when every token is allowed (no mask needed).
    fn fill_mask(&mut self, mask: &mut [u32]) -> Result<bool, constrain::MatchError> {
        match self {
            SeqConstraint::None => Ok(false),
            SeqConstraint::Grammar(m) => m.fill_mask(mask).map(|()| true),
            SeqConstraint::Triggered(t) => t.fill_mask(mask).map(|()| true),
        }
    }

    /// Whether stop strings apply: free text only (a stop string inside constrained output
    /// would leave it invalid).
    fn is_free_text(&self) -> bool {
        match self {
            SeqConstraint::None => true,
            SeqConstraint::Grammar(_) => false,
            SeqConstraint::Triggered(t) => !t.is_triggered(),
        }
    }

    /// Whether the constrained output is complete here (a cut-off at the token limit then
    /// leaves a valid output: the sequence ends as `stop`, not `length`).
    fn is_complete(&self) -> bool {
        match self {
            SeqConstraint::None => false,
            SeqConstraint::Grammar(m) => m.is_accepting(),
            SeqConstraint::Triggered(t) => t.is_triggered() && t.is_accepting(),
        }
    }

    fn trigger_start(&self) -> Option<usize> {
        match self {
            SeqConstraint::Triggered(t) => t.trigger_start(),
            _ => None,
        }
    }
}

/// One sequence being generated: its constraint, sampler and output.
pub struct Sequence {
    index: usize,
    vocabulary: Arc<Vocabulary>,
    constraint: SeqConstraint,
    funnel: Funnel,
    history: History,
    rng: Xoshiro256StarStar,
    mask: Vec<u32>,
    params: GenParams,
    prompt: Vec<u32>,
    ctx_size: usize,
    /// Tokens evaluated in the context so far (maintained by the driver).
    pub position: usize,
    /// Tokens chosen and not yet evaluated.
    pending: Vec<u32>,
    /// Drafted tokens evaluated after `pending`, to verify when their logits come.
    draft: Vec<u32>,
    /// Whether a token is drawn after a wholly accepted draft (false: the grammar forces or
    /// ends there).
    draw_after_draft: bool,
    /// How long the next draft may be (`lookup`, shortened after rejections).
    draft_length: DraftLength,
    /// `Some(constrained)` when `mask` was filled for the next draw already, while the model
    /// evaluated ([`Sequence::prefill_mask`]).
    prefilled: Option<bool>,
    output: Vec<u8>,
    /// Bytes of `output` already sent.
    sent: usize,
    generated: usize,
    logprobs: Vec<TokenLogprob>,
    finished: Option<Finish>,
    /// Counters, for the metrics.
    pub stats: SequenceStats,
}

impl Sequence {
    /// Sequence `index` of `job`.
    pub fn new(
        job: &Job,
        index: usize,
        vocabulary: Arc<Vocabulary>,
        ctx_size: usize,
    ) -> Result<Sequence, ApiError> {
        // `max_tokens` is a budget the constrained output completes within (the context's
        // room bounds it too); after a trigger, what is left of it.
        let budget = Some(
            job.params
                .max_tokens
                .min(ctx_size.saturating_sub(job.prompt.len())),
        );
        let too_small = |e: constrain::MatchError| {
            ApiError::invalid_param(
                "max_tokens",
                format!("{e}; raise max_tokens (or shorten the prompt)"),
            )
        };
        let constraint = match &job.constraint {
            None => SeqConstraint::None,
            Some(ConstraintKind::Grammar(g)) => {
                let mut m = Matcher::new(g.clone());
                m.set_token_budget(budget).map_err(too_small)?;
                SeqConstraint::Grammar(m)
            }
            Some(ConstraintKind::Triggered(t, g)) => {
                let mut m = TriggeredMatcher::new(t.clone(), g.clone());
                m.set_token_budget(budget).map_err(too_small)?;
                SeqConstraint::Triggered(m)
            }
        };
        let funnel = Funnel::new(job.params.sampling.clone())
            .map_err(|e| ApiError::bad_request(e.to_string()))?;
        Ok(Sequence {
            index,
            mask: vec![0; vocabulary.logits_width().div_ceil(32)],
            vocabulary,
            constraint,
            funnel,
            history: History::from_prompt(&job.prompt),
            rng: Xoshiro256StarStar::seed_from_u64(job.params.seed.wrapping_add(index as u64)),
            params: job.params.clone(),
            prompt: job.prompt.clone(),
            ctx_size,
            position: 0,
            pending: Vec::new(),
            draft: Vec::new(),
            draw_after_draft: true,
            draft_length: DraftLength::new(job.params.lookup),
            prefilled: None,
            output: Vec::new(),
            sent: 0,
            generated: 0,
            logprobs: Vec::new(),
            finished: None,
            stats: SequenceStats::default(),
        })
    }

    /// Which choice of its job this is.
    pub fn index(&self) -> usize {
        self.index
    }

    /// The tokens to evaluate before the next draw (the prompt first), or the end. Tokens the
    /// grammar forces are appended here, without a draw.
    pub fn next_tokens(&mut self) -> Result<Next, ApiError> {
        if self.position == 0 {
            return Ok(Next::Evaluate {
                tokens: self.prompt.clone(),
                rows: 1,
            });
        }
        loop {
            if let Some(finish) = self.finished {
                return Ok(Next::Done(self.done(finish)));
            }
            let budget = self.params.max_tokens.saturating_sub(self.generated);
            let room = self
                .ctx_size
                .saturating_sub(self.position + self.pending.len());
            if self.constraint.is_finished() {
                self.finished = Some(Finish::Stop);
                continue;
            }
            if self.params.fast_forward {
                let forced = self.constraint.forced_tokens().map_err(match_error)?;
                if !forced.is_empty() {
                    let take = forced.len().min(budget).min(room);
                    if take == 0 {
                        self.finished = Some(self.limit_finish());
                        continue;
                    }
                    for &token in &forced[..take] {
                        self.constraint.accept(token).map_err(match_error)?;
                        self.stats.forced += 1;
                        if self.push(token) {
                            break;
                        }
                    }
                    continue;
                }
            }
            if budget == 0 || room == 0 {
                self.finished = Some(self.limit_finish());
                continue;
            }
            // A draft must leave room for the token drawn after it, in the budget and the
            // context.
            self.draft_next(budget.min(room) - 1)?;
            let mut tokens = std::mem::take(&mut self.pending);
            tokens.extend_from_slice(&self.draft);
            return Ok(Next::Evaluate {
                tokens,
                rows: 1 + self.draft.len(),
            });
        }
    }

    /// Sets `draft` to the prompt lookup's continuation of up to `max_len` tokens (fewer, or
    /// none, after rejected drafts: [`DraftLength`]), cut where plain decoding would not draw
    /// them (see [`constrain::grammar_prefix`]). Tool-call sequences (free text before a
    /// trigger) and sequences with nothing pending (whose first verifying row would be another
    /// decode's) draft nothing.
    fn draft_next(&mut self, max_len: usize) -> Result<(), ApiError> {
        self.draft.clear();
        self.draw_after_draft = true;
        if self.pending.is_empty() || matches!(self.constraint, SeqConstraint::Triggered(_)) {
            return Ok(());
        }
        let max_len = max_len.min(self.draft_length.at_draw_point());
        if max_len == 0 {
            return Ok(());
        }
        let mut draft = constrain::prompt_lookup(self.history.tokens(), max_len).to_vec();
        match &mut self.constraint {
            SeqConstraint::None => {
                let end = draft
                    .iter()
                    .position(|&t| self.vocabulary.kind(t) == Some(TokenKind::EndOfSequence));
                draft.truncate(end.unwrap_or(draft.len()));
            }
            SeqConstraint::Grammar(m) => {
                let cut = constrain::grammar_prefix(m, &draft, self.params.fast_forward)
                    .map_err(match_error)?;
                draft.truncate(cut.tokens);
                self.draw_after_draft = cut.then_draw;
            }
            SeqConstraint::Triggered(_) => draft.clear(),
        }
        self.draft = draft;
        Ok(())
    }

    /// How a sequence ends at the token limit: `stop` if its constrained output is complete
    /// there, else `length`.
    fn limit_finish(&self) -> Finish {
        if self.constraint.is_complete() {
            Finish::Stop
        } else {
            Finish::Length
        }
    }

    /// Draws the next token from the logits after the evaluated tokens, verifying the draft
    /// first when there is one: `rows[i]` are the logits that verify `draft[i]`, the last the
    /// logits after the whole draft. Returns the text (and log-probabilities) that can be sent
    /// now, and how many drafted tokens were rejected: the caller cuts them from the cache.
    pub fn sample(&mut self, rows: &[&[f32]]) -> Result<(Option<Event>, usize), ApiError> {
        let draft = std::mem::take(&mut self.draft);
        if rows.len() != draft.len() + 1 {
            return Err(ApiError::internal(format!(
                "{} rows of logits for a draft of {} tokens",
                rows.len(),
                draft.len()
            )));
        }
        let mut accepted = 0;
        for (i, logits) in rows.iter().enumerate() {
            if i == draft.len() && !self.draw_after_draft {
                // The grammar forces or ends here: `next_tokens` goes on, as without a draft.
                break;
            }
            let token = self.draw(logits, draft.get(i).copied())?;
            let ended = self.push(token);
            if draft.get(i) != Some(&token) {
                break;
            }
            accepted += 1;
            if ended {
                break;
            }
        }
        self.prefilled = None;
        // Accepted drafted tokens are in the cache already; only a drawn token is pending.
        self.pending.drain(..accepted.min(self.pending.len()));
        self.stats.drafted += draft.len();
        self.stats.accepted_drafts += accepted;
        self.draft_length.record(draft.len(), accepted);
        Ok((self.delta(), draft.len() - accepted))
    }

    /// Fills the mask of the next draw ahead of [`Sequence::sample`], while the model evaluates
    /// this sequence's tokens: the mask depends only on the tokens accepted so far, not on the
    /// logits. It serves the first row only (a draft's later rows need masks of the states
    /// after its tokens). A failure is left for `sample` to meet again and report.
    pub fn prefill_mask(&mut self) {
        let t = Instant::now();
        if let Ok(masked) = self.constraint.fill_mask(&mut self.mask) {
            self.stats.last_mask = masked.then(|| t.elapsed());
            self.prefilled = Some(masked);
        }
    }

    /// One token from `logits` under the mask of the current state: `drafted` when the
    /// verification keeps it, else a draw (the replacement of a rejected draft).
    fn draw(&mut self, logits: &[f32], drafted: Option<u32>) -> Result<u32, ApiError> {
        let masked = match self.prefilled.take() {
            Some(masked) => masked,
            None => {
                let t = Instant::now();
                let masked = self
                    .constraint
                    .fill_mask(&mut self.mask)
                    .map_err(match_error)?;
                self.stats.last_mask = masked.then(|| t.elapsed());
                masked
            }
        };
        let mask = masked.then_some(self.mask.as_slice());
        let sampling =
            |e: constrain_sampling::SamplingError| ApiError::internal(format!("sampling: {e}"));
        let token = match drafted {
            None => self
                .funnel
                .sample_from(logits, mask, &self.history, &mut self.rng)
                .map_err(sampling)?,
            Some(drafted) => match self
                .funnel
                .verify_token(logits, mask, &self.history, drafted, &mut self.rng)
                .map_err(sampling)?
            {
                DraftCheck::Accepted => drafted,
                DraftCheck::Rejected { replacement } => replacement,
            },
        };
        if let Some(top) = self.params.logprobs {
            let scored = token_logprob(logits, token, top, &self.vocabulary)
                .map_err(|e| ApiError::internal(format!("logprobs: {e}")))?;
            self.logprobs.push(scored);
        }
        self.constraint.accept(token).map_err(match_error)?;
        self.stats.sampled += 1;
        Ok(token)
    }

    /// Records a chosen token; true when it ended the sequence.
    fn push(&mut self, token: u32) -> bool {
        self.history.push(token);
        self.generated += 1;
        if self.vocabulary.kind(token) == Some(TokenKind::EndOfSequence) {
            self.finished = Some(Finish::Stop);
            return true;
        }
        let free_before = self.constraint.is_free_text();
        let before = self.output.len();
        if let Some(bytes) = self.vocabulary.token_bytes(token) {
            self.output.extend_from_slice(bytes);
        }
        self.pending.push(token);
        if free_before && !self.params.stop.is_empty() {
            if let Some(at) = find_stop(&self.output, before, &self.params.stop) {
                self.output.truncate(at);
                self.finished = Some(Finish::Stop);
                return true;
            }
        }
        false
    }

    /// The text that is safe to send: whole characters, minus what may become a stop string.
    fn delta(&mut self) -> Option<Event> {
        let mut end = self.output.len();
        if self.constraint.is_free_text() && self.finished.is_none() {
            end -= held_back(&self.output, &self.params.stop);
        }
        let text = if end > self.sent {
            match std::str::from_utf8(&self.output[self.sent..end]) {
                Ok(s) => s.to_string(),
                Err(e) if e.error_len().is_none() => {
                    end = self.sent + e.valid_up_to();
                    String::from_utf8_lossy(&self.output[self.sent..end]).into_owned()
                }
                Err(_) => String::from_utf8_lossy(&self.output[self.sent..end]).into_owned(),
            }
        } else {
            end = self.sent;
            String::new()
        };
        self.sent = end;
        let logprobs = std::mem::take(&mut self.logprobs);
        if text.is_empty() && logprobs.is_empty() {
            return None;
        }
        Some(Event::Delta {
            index: self.index,
            text,
            logprobs,
        })
    }

    fn done(&mut self, finish: Finish) -> Done {
        Done {
            index: self.index,
            text: String::from_utf8_lossy(&self.output).into_owned(),
            finish,
            completion_tokens: self.generated,
            trigger_start: self.constraint.trigger_start(),
            drafted: self.stats.drafted,
            accepted_drafts: self.stats.accepted_drafts,
        }
    }

    /// The text not yet sent (at the end: everything left), with the pending log-probabilities.
    pub fn flush(&mut self) -> Option<Event> {
        let text =
            String::from_utf8_lossy(&self.output[self.sent.min(self.output.len())..]).into_owned();
        self.sent = self.output.len();
        let logprobs = std::mem::take(&mut self.logprobs);
        (!text.is_empty() || !logprobs.is_empty()).then_some(Event::Delta {
            index: self.index,
            text,
            logprobs,
        })
    }
}

fn match_error(e: constrain::MatchError) -> ApiError {
    ApiError::internal(format!("constraint: {e}"))
}

/// Where the first stop string starts, looking only at matches that end after `from`.
fn find_stop(output: &[u8], from: usize, stops: &[String]) -> Option<usize> {
    stops
        .iter()
        .filter_map(|s| {
            let s = s.as_bytes();
            let start = from.saturating_sub(s.len().saturating_sub(1));
            output[start..]
                .windows(s.len())
                .position(|w| w == s)
                .map(|p| start + p)
        })
        .min()
}

/// Bytes at the end of `output` that may be the start of a stop string.
fn held_back(output: &[u8], stops: &[String]) -> usize {
    stops
        .iter()
        .map(|s| {
            let s = s.as_bytes();
            let max = (s.len().saturating_sub(1)).min(output.len());
            (1..=max)
                .rev()
                .find(|&n| s.starts_with(&output[output.len() - n..]))
                .unwrap_or(0)
        })
        .max()
        .unwrap_or(0)
}

/// The log-probability of `token` under the model's distribution `softmax(logits)`, with the
/// `top` most likely tokens (computed by [`constrain_sampling::token_logprobs`], which the CLI
/// shares), spelled as bytes.
///
/// # Errors
///
/// The funnel's error for logits it refuses, or a token beyond them.
pub fn token_logprob(
    logits: &[f32],
    token: u32,
    top: usize,
    vocabulary: &Vocabulary,
) -> Result<TokenLogprob, constrain_sampling::SamplingError> {
    let bytes = |id: u32| {
        if vocabulary.kind(id) == Some(TokenKind::EndOfSequence) {
            Vec::new()
        } else {
            vocabulary
                .token_bytes(id)
                .map(<[u8]>::to_vec)
                .unwrap_or_default()
        }
    };
    let scored = constrain_sampling::token_logprobs(logits, None, token, top)?;
    Ok(TokenLogprob {
        bytes: bytes(token),
        logprob: scored.logprob,
        top: scored
            .top
            .into_iter()
            .map(|(id, logprob)| (bytes(id), logprob))
            .collect(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stop_strings_are_found_across_tokens_and_held_back() {
        let stops = vec!["END".to_string(), "\n\n".to_string()];
        assert_eq!(find_stop(b"abcEN", 3, &stops), None);
        assert_eq!(find_stop(b"abcEND", 5, &stops), Some(3));
        assert_eq!(find_stop(b"a\n\nb", 2, &stops), Some(1));
        assert_eq!(held_back(b"abcEN", &stops), 2);
        assert_eq!(held_back(b"abc\n", &stops), 1);
        assert_eq!(held_back(b"abc", &stops), 0);
    }

    #[test]
    fn logprobs_are_log_softmax_with_the_best_first() {
        let vocab = Vocabulary::from_tokens(
            ["a", "b", "c"]
                .iter()
                .enumerate()
                .map(|(i, t)| (i as u32, t.as_bytes().to_vec(), TokenKind::Text)),
        )
        .unwrap();
        let logits = [0.0f32, (2.0f32).ln(), 0.0];
        let lp = token_logprob(&logits, 1, 2, &vocab).unwrap();
        assert!((lp.logprob - 0.5f32.ln()).abs() < 1e-6);
        assert_eq!(lp.top.len(), 2);
        assert_eq!(lp.top[0].0, b"b");
        assert!((lp.top[1].1 - 0.25f32.ln()).abs() < 1e-6);
    }
}
