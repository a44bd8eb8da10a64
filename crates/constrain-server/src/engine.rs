//! Jobs and sequences: what a request asks of the model ([`Job`]), what comes back
//! ([`Event`]), and the decode loop of one sequence.
//!
//! A request becomes a [`Job`] (prompt tokens, `n` sequences, sampling, a compiled constraint,
//! a deadline) and reaches the scheduler ([`crate::scheduler`]) through the bounded queue of
//! [`crate::worker::Engine`]; what a sequence generates goes back to the request's handler as
//! [`Event`]s, token by token. A handler that goes away (a client that disconnected) closes its
//! channel, and the scheduler frees that job's slots at the next step.
//!
//! A [`Sequence`] runs the facade's sequence step ([`constrain::Step`]), split for batching:
//! [`Sequence::next_tokens`] says which tokens a sequence needs evaluated next (forced tokens
//! are consumed there), [`Sequence::sample`] takes the logits that follow them; the sequence
//! adds the server's own concerns: the text, stop strings, deltas and log-probability events.

use std::sync::{Arc, OnceLock};
use std::time::Instant;

use constrain::{
    CompiledGrammar, Emitted, Matcher, Step, StepConstraint, StepOptions, StepTrace, Stop,
    TokenLogprobs, Trigger, TriggeredMatcher,
};
use constrain_sampling::SamplerConfig;
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
    /// Trace every token with this many candidates per distribution (`None`: off).
    pub trace: Option<usize>,
}

/// A compiled constraint as a sequence follows it.
#[derive(Clone)]
pub enum ConstraintKind {
    /// The grammar from the first token.
    Grammar(Arc<CompiledGrammar>),
    /// Free text until the trigger, then the grammar.
    Triggered(Arc<Trigger>, Arc<CompiledGrammar>),
    /// A reasoning model's thinking until `end`, then the grammar of its answer, which must
    /// come: the thinking ends by `budget` tokens, and early enough for the answer to complete
    /// within `max_tokens`.
    Reasoning {
        /// The end of the thinking.
        end: Arc<Trigger>,
        /// The answer's grammar.
        grammar: Arc<CompiledGrammar>,
        /// Most tokens of thinking.
        budget: Option<usize>,
    },
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
        /// With [`GenParams::trace`], what each step since the last delta did.
        trace: Vec<StepTrace>,
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

/// One sequence being generated: the facade's step ([`constrain::Step`]) and the text it
/// writes.
pub struct Sequence {
    index: usize,
    step: Step,
    prompt: Vec<u32>,
    /// Tokens evaluated in the context so far (maintained by the driver).
    pub position: usize,
    /// Rows of logits the evaluation under way needs: 1, or 1 plus a draft's length.
    rows: usize,
    text: Text,
    /// Counters, for the metrics.
    pub stats: SequenceStats,
}

/// What a sequence has written and not yet sent.
struct Text {
    vocabulary: Arc<Vocabulary>,
    /// Strings that end free text.
    stop: Vec<String>,
    output: Vec<u8>,
    /// Bytes of `output` already sent.
    sent: usize,
    logprobs: Vec<TokenLogprob>,
    trace: Vec<StepTrace>,
    /// Removed mass of the traced drawn tokens, until the metrics take it.
    removed_mass: Vec<f64>,
}

impl Text {
    /// Takes a token the step appended; false when a stop string ends the output with it (the
    /// string is cut off). Stop strings apply to free text only: one inside constrained output
    /// would leave it invalid.
    fn emit(&mut self, emitted: Emitted) -> bool {
        if let Some(scored) = emitted.logprobs {
            self.logprobs.push(spelled(scored, &self.vocabulary));
        }
        if let Some(trace) = emitted.trace {
            self.removed_mass.extend(trace.removed_mass);
            self.trace.push(*trace);
        }
        if emitted.end {
            return true;
        }
        let before = self.output.len();
        if let Some(bytes) = self.vocabulary.token_bytes(emitted.token) {
            self.output.extend_from_slice(bytes);
        }
        if emitted.free_text && !self.stop.is_empty() {
            if let Some(at) = find_stop(&self.output, before, &self.stop) {
                self.output.truncate(at);
                return false;
            }
        }
        true
    }
}

impl Sequence {
    /// Sequence `index` of `job`.
    pub fn new(
        job: &Job,
        index: usize,
        vocabulary: Arc<Vocabulary>,
        ctx_size: usize,
    ) -> Result<Sequence, ApiError> {
        let constraint = match &job.constraint {
            None => StepConstraint::None,
            Some(ConstraintKind::Grammar(g)) => StepConstraint::Grammar(Matcher::new(g.clone())),
            Some(ConstraintKind::Triggered(t, g)) => {
                StepConstraint::Triggered(TriggeredMatcher::new(t.clone(), g.clone()))
            }
            Some(ConstraintKind::Reasoning {
                end,
                grammar,
                budget,
            }) => {
                let mut m = TriggeredMatcher::new(end.clone(), grammar.clone());
                m.set_trigger_required(true);
                let reserve = m
                    .reserve()
                    .map_err(|e| ApiError::bad_request(e.to_string()))?;
                let room = ctx_size.saturating_sub(job.prompt.len());
                let within = job.params.max_tokens.min(room).saturating_sub(reserve);
                m.set_free_limit(Some(budget.map_or(within, |b| b.min(within))));
                StepConstraint::Triggered(m)
            }
        };
        // `max_tokens` is a budget the constrained output completes within (the context's
        // room bounds it too); after a trigger, what is left of it.
        let options = StepOptions {
            max_tokens: job.params.max_tokens,
            room: Some(ctx_size.saturating_sub(job.prompt.len())),
            complete_within: true,
            fast_forward: job.params.fast_forward,
            lookup: job.params.lookup,
            adaptive_drafts: true,
            logprobs: job.params.logprobs,
            trace: job.params.trace,
        };
        let step = Step::new(
            constraint,
            vocabulary.clone(),
            job.params.sampling.clone(),
            job.params.seed.wrapping_add(index as u64),
            &job.prompt,
            options,
        )
        .map_err(|e| match e {
            constrain::Error::Match(e) => ApiError::invalid_param(
                "max_tokens",
                format!("{e}; raise max_tokens (or shorten the prompt)"),
            ),
            other => ApiError::bad_request(other.to_string()),
        })?;
        Ok(Sequence {
            index,
            step,
            prompt: job.prompt.clone(),
            position: 0,
            rows: 1,
            text: Text {
                vocabulary,
                stop: job.params.stop.clone(),
                output: Vec::new(),
                sent: 0,
                logprobs: Vec::new(),
                trace: Vec::new(),
                removed_mass: Vec::new(),
            },
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
        let next = self.step.next(&mut |e| self.text.emit(e));
        self.count();
        match next.map_err(step_error)? {
            constrain::Next::Evaluate { tokens, rows } => {
                self.rows = rows;
                Ok(Next::Evaluate { tokens, rows })
            }
            constrain::Next::Done(stop) => {
                let finish = self.finish(stop);
                Ok(Next::Done(self.done(finish)))
            }
        }
    }

    /// How a sequence that stopped for `stop` finishes: at a limit, `stop` if its constrained
    /// output is complete there, else `length`.
    fn finish(&self, stop: Stop) -> Finish {
        match stop {
            Stop::GrammarFinished | Stop::EndOfSequence | Stop::Halted => Finish::Stop,
            Stop::BudgetComplete | Stop::MaxTokens | Stop::ContextFull => {
                if self.step.constraint().is_complete() {
                    Finish::Stop
                } else {
                    Finish::Length
                }
            }
        }
    }

    /// Draws the next token from the logits after the evaluated tokens, verifying the draft
    /// first when there is one: `rows[i]` are the logits that verify the draft's token `i`,
    /// the last the logits after the whole draft. Returns the text (and log-probabilities)
    /// that can be sent now, and how many drafted tokens were rejected: the caller cuts them
    /// from the cache.
    pub fn sample(&mut self, rows: &[&[f32]]) -> Result<(Option<Event>, usize), ApiError> {
        let wanted = std::mem::replace(&mut self.rows, 1);
        if rows.len() != wanted {
            return Err(ApiError::internal(format!(
                "{} rows of logits for a draft of {} tokens",
                rows.len(),
                wanted - 1
            )));
        }
        let rejected = self.step.sample(rows, &mut |e| self.text.emit(e));
        self.count();
        self.stats.last_mask = self.step.take_mask_times().last().copied();
        let rejected = rejected.map_err(step_error)?;
        Ok((self.delta(), rejected))
    }

    /// Fills the mask of the next draw ahead of [`Sequence::sample`], while the model evaluates
    /// this sequence's tokens (see [`Step::prefill_mask`]).
    pub fn prefill_mask(&mut self) {
        self.step.prefill_mask();
    }

    /// Copies the step's counters into the metrics' view.
    fn count(&mut self) {
        let counts = self.step.stats();
        self.stats.sampled = counts.drawn;
        self.stats.forced = counts.forced;
        self.stats.drafted = counts.drafted;
        self.stats.accepted_drafts = counts.accepted_drafts;
        self.stats.removed_mass.append(&mut self.text.removed_mass);
    }

    /// The text that is safe to send: whole characters, minus what may become a stop string.
    fn delta(&mut self) -> Option<Event> {
        let text = &mut self.text;
        let mut end = text.output.len();
        if self.step.constraint().is_free_text() && self.step.stop().is_none() {
            end -= held_back(&text.output, &text.stop);
        }
        let delta = if end > text.sent {
            match std::str::from_utf8(&text.output[text.sent..end]) {
                Ok(s) => s.to_string(),
                Err(e) if e.error_len().is_none() => {
                    end = text.sent + e.valid_up_to();
                    String::from_utf8_lossy(&text.output[text.sent..end]).into_owned()
                }
                Err(_) => String::from_utf8_lossy(&text.output[text.sent..end]).into_owned(),
            }
        } else {
            end = text.sent;
            String::new()
        };
        text.sent = end;
        let logprobs = std::mem::take(&mut text.logprobs);
        let trace = std::mem::take(&mut text.trace);
        if delta.is_empty() && logprobs.is_empty() && trace.is_empty() {
            return None;
        }
        Some(Event::Delta {
            index: self.index,
            text: delta,
            logprobs,
            trace,
        })
    }

    fn done(&mut self, finish: Finish) -> Done {
        Done {
            index: self.index,
            text: String::from_utf8_lossy(&self.text.output).into_owned(),
            finish,
            completion_tokens: self.step.generated(),
            trigger_start: self.step.constraint().trigger_start(),
            drafted: self.stats.drafted,
            accepted_drafts: self.stats.accepted_drafts,
        }
    }

    /// The text not yet sent (at the end: everything left), with the pending log-probabilities.
    pub fn flush(&mut self) -> Option<Event> {
        let text = &mut self.text;
        let rest =
            String::from_utf8_lossy(&text.output[text.sent.min(text.output.len())..]).into_owned();
        text.sent = text.output.len();
        let logprobs = std::mem::take(&mut text.logprobs);
        let trace = std::mem::take(&mut text.trace);
        (!rest.is_empty() || !logprobs.is_empty() || !trace.is_empty()).then_some(Event::Delta {
            index: self.index,
            text: rest,
            logprobs,
            trace,
        })
    }
}

fn step_error(e: constrain::Error) -> ApiError {
    match e {
        constrain::Error::Sampling(e) => ApiError::internal(format!("sampling: {e}")),
        other => ApiError::internal(format!("constraint: {other}")),
    }
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
    let scored = constrain_sampling::token_logprobs(logits, None, token, top)?;
    Ok(spelled(scored, vocabulary))
}

/// A token's scores with its ids spelled as bytes (an end token as none).
fn spelled(scored: TokenLogprobs, vocabulary: &Vocabulary) -> TokenLogprob {
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
    TokenLogprob {
        bytes: bytes(scored.token),
        logprob: scored.logprob,
        top: scored
            .top
            .into_iter()
            .map(|(id, logprob)| (bytes(id), logprob))
            .collect(),
    }
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
