//! [`ConstrainedSampler`]: a matcher and the sampling funnel, stepping together.

use std::sync::Arc;

use constrain_engine::{CompiledGrammar, Matcher};
use constrain_sampling::SamplerConfig;

use crate::constraint::Error;
use crate::step::{Next, Step, StepConstraint, StepOptions, Stop, Verified};
use crate::trace::StepTrace;

/// Samples tokens that keep the output in the grammar's language.
///
/// Per step: [`sample`](Self::sample) the model's logits (the mask is applied first, then the
/// funnel), feed the token to the model, [`accept`](Self::accept) it here. Tokens the grammar
/// forces can be appended without sampling ([`forced_tokens`](Self::forced_tokens)).
/// [`generate`](Self::generate) runs the whole loop on a [`Step`].
#[derive(Clone, Debug)]
pub struct ConstrainedSampler {
    step: Step,
}

/// Why [`ConstrainedSampler::generate`] stopped.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum StopReason {
    /// The output is complete: nothing else could follow, an end token was drawn, or the
    /// token budget ran out on a complete output.
    Complete,
    /// The token limit ran out before the output was complete (only with
    /// [`generate_truncated`](ConstrainedSampler::generate_truncated)).
    MaxTokens,
}

/// The result of [`ConstrainedSampler::generate`].
#[derive(Clone, Debug)]
pub struct Generation {
    /// The generated token ids (sampled and forced, end token excluded).
    pub tokens: Vec<u32>,
    /// Their bytes, concatenated.
    pub bytes: Vec<u8>,
    /// Tokens appended without sampling because the grammar forced them.
    pub forced: usize,
    /// Tokens the lookup drafted (see [`ConstrainedSampler::set_lookup`]).
    pub drafted: usize,
    /// Drafted tokens that verification accepted.
    pub accepted: usize,
    /// Why generation stopped.
    pub stop: StopReason,
    /// With [`ConstrainedSampler::set_trace`], what each step did (forced tokens included).
    pub trace: Vec<StepTrace>,
}

impl ConstrainedSampler {
    /// A sampler at the start of `grammar`, drawing with a generator seeded by `seed`.
    pub fn new(
        grammar: Arc<CompiledGrammar>,
        config: SamplerConfig,
        seed: u64,
    ) -> Result<Self, Error> {
        let vocabulary = grammar.vocabulary().clone();
        let options = StepOptions {
            // A closure model costs the same per row whatever the draft: drafts stay full.
            adaptive_drafts: false,
            ..StepOptions::default()
        };
        let constraint = StepConstraint::Grammar(Matcher::new(grammar));
        let step = Step::new(constraint, vocabulary, config, seed, &[], options)?;
        Ok(ConstrainedSampler { step })
    }

    /// Lets the penalties see the prompt (when the penalty window includes it).
    pub fn with_prompt(mut self, prompt: &[u32]) -> Self {
        self.step.set_prompt(prompt);
        self
    }

    /// Speculative decoding by prompt lookup in [`generate`](Self::generate): drafts of up to
    /// `max_draft` tokens ([`prompt_lookup`](crate::prompt_lookup) over the prompt given to
    /// [`with_prompt`](Self::with_prompt) and the output so far, cut where the grammar
    /// refuses), each verified with [`Funnel::verify_token`](crate::Funnel::verify_token). The
    /// output is distributed exactly as without it, and identical when greedy. 0 turns it off.
    pub fn set_lookup(&mut self, max_draft: usize) {
        self.step.set_lookup(max_draft);
    }

    /// Traces every token from here on with `candidates` per distribution ([`StepTrace`]):
    /// [`take_trace`](Self::take_trace) gives the tokens fed with [`accept`](Self::accept),
    /// [`Generation::trace`] those of [`generate`](Self::generate). `None` turns it off.
    pub fn set_trace(&mut self, candidates: Option<usize>) {
        self.step.set_trace(candidates);
    }

    /// The traces of the tokens accepted since the last call: a sampled token's trace, or,
    /// for a token fed without [`sample`](Self::sample) (a forced one), a trace that says so.
    pub fn take_trace(&mut self) -> Vec<StepTrace> {
        self.step.take_fed_trace()
    }

    /// Bounds the whole output to `max_tokens` tokens, which it then completes within (see
    /// [`Matcher::set_token_budget`]); `None` lifts the bound.
    pub fn set_token_budget(&mut self, max_tokens: Option<usize>) -> Result<(), Error> {
        Ok(self.step.constraint_mut().set_token_budget(max_tokens)?)
    }

    /// The matcher (for masks, rollback, state queries).
    pub fn matcher(&self) -> &Matcher {
        match self.step.constraint() {
            StepConstraint::Grammar(m) => m,
            _ => unreachable!("a sampler's step is made with a grammar and keeps it"),
        }
    }

    /// Draws the next token from one step's `logits` (one per id; at least as wide as the
    /// vocabulary's logits width is not required: ids beyond the slice are never drawn). The
    /// token is not accepted yet: call [`accept`](Self::accept) once the model has it.
    pub fn sample(&mut self, logits: &[f32]) -> Result<u32, Error> {
        self.step.draw_unaccepted(logits)
    }

    /// Records that `token` was fed to the model (sampled or forced).
    pub fn accept(&mut self, token: u32) -> Result<(), Error> {
        Ok(self.step.accept_fed(token)?)
    }

    /// Tokens the grammar forces next, to feed without sampling (and then [`accept`](Self::accept)).
    pub fn forced_tokens(&mut self) -> Result<Vec<u32>, Error> {
        Ok(self.step.constraint_mut().forced_tokens()?)
    }

    /// Whether the output so far is complete (an end token is allowed).
    pub fn is_accepting(&self) -> bool {
        self.matcher().is_accepting()
    }

    /// Whether nothing but the end can follow.
    pub fn is_finished(&self) -> bool {
        self.matcher().is_finished()
    }

    /// Runs a whole generation with `model` (tokens so far -> logits) that ends complete
    /// within `max_tokens` tokens: `max_tokens` is the matcher's token budget (see
    /// [`Matcher::set_token_budget`]), so near its end the mask narrows to tokens that close
    /// the output in time. Fails at once when the constraint needs more tokens than that.
    pub fn generate(
        &mut self,
        model: &mut dyn FnMut(&[u32]) -> Vec<f32>,
        max_tokens: usize,
    ) -> Result<Generation, Error> {
        self.run(model, max_tokens, true)
    }

    /// As [`generate`](Self::generate), but cut off at `max_tokens` wherever the output is
    /// then (a prefix of a valid one; [`StopReason::MaxTokens`] says so): what the engines of
    /// this field do.
    pub fn generate_truncated(
        &mut self,
        model: &mut dyn FnMut(&[u32]) -> Vec<f32>,
        max_tokens: usize,
    ) -> Result<Generation, Error> {
        self.run(model, max_tokens, false)
    }

    /// Drives the step with `model`, called once per row on the output so far: lazily, so a
    /// draft's rows past its first rejection cost nothing.
    fn run(
        &mut self,
        model: &mut dyn FnMut(&[u32]) -> Vec<f32>,
        max_tokens: usize,
        complete_within: bool,
    ) -> Result<Generation, Error> {
        let start = self.step.history().len();
        // The model sees every token at each call: nothing is evaluated ahead.
        let unevaluated = self.step.history().tokens().to_vec();
        self.step
            .restart(max_tokens, complete_within, unevaluated)?;
        let mut trace = Vec::new();
        let mut emit = |e: crate::step::Emitted| {
            trace.extend(e.trace.map(|t| *t));
            true
        };
        let stop = loop {
            match self.step.next(&mut emit)? {
                Next::Done(stop) => break stop,
                Next::Evaluate { .. } => loop {
                    let logits = model(&self.step.history().tokens()[start..]);
                    if let Verified::Done { .. } = self.step.sample_row(&logits, &mut emit)? {
                        break;
                    }
                },
            }
        };
        let mut tokens = self.step.history().tokens()[start..].to_vec();
        if stop == Stop::EndOfSequence {
            tokens.pop();
        }
        let m = self.matcher();
        let complete = match stop {
            Stop::GrammarFinished | Stop::EndOfSequence => true,
            _ => m.is_finished() || (m.is_accepting() && m.tokens_left() == Some(0)),
        };
        let vocab = m.grammar().vocabulary();
        let bytes = tokens
            .iter()
            .filter_map(|&t| vocab.token_bytes(t))
            .flatten()
            .copied()
            .collect();
        let stats = self.step.stats();
        Ok(Generation {
            bytes,
            forced: stats.forced,
            drafted: stats.drafted,
            accepted: stats.accepted_drafts,
            stop: if complete {
                StopReason::Complete
            } else {
                StopReason::MaxTokens
            },
            tokens,
            trace,
        })
    }
}
