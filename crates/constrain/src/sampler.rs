//! [`ConstrainedSampler`]: a matcher and the sampling funnel, stepping together.

use std::sync::Arc;

use constrain_engine::{CompiledGrammar, Matcher};
use constrain_sampling::{DraftCheck, Funnel, History, SamplerConfig, Xoshiro256StarStar};
use constrain_vocab::TokenKind;

use crate::constraint::Error;
use crate::lookup::{grammar_prefix, prompt_lookup};

/// Samples tokens that keep the output in the grammar's language.
///
/// Per step: [`sample`](Self::sample) the model's logits (the mask is applied first, then the
/// funnel), feed the token to the model, [`accept`](Self::accept) it here. Tokens the grammar
/// forces can be appended without sampling ([`forced_tokens`](Self::forced_tokens)).
#[derive(Clone, Debug)]
pub struct ConstrainedSampler {
    matcher: Matcher,
    funnel: Funnel,
    history: History,
    rng: Xoshiro256StarStar,
    mask: Vec<u32>,
    /// Tokens of the context the lookup drafts from (the prompt; the output is added as it
    /// grows).
    prompt: Vec<u32>,
    /// Longest draft of speculative decoding by prompt lookup (0: off).
    lookup: usize,
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
}

impl ConstrainedSampler {
    /// A sampler at the start of `grammar`, drawing with a generator seeded by `seed`.
    pub fn new(
        grammar: Arc<CompiledGrammar>,
        config: SamplerConfig,
        seed: u64,
    ) -> Result<Self, Error> {
        let words = grammar.mask_words();
        Ok(ConstrainedSampler {
            matcher: Matcher::new(grammar),
            funnel: Funnel::new(config)?,
            history: History::new(),
            rng: Xoshiro256StarStar::seed_from_u64(seed),
            mask: vec![0; words],
            prompt: Vec::new(),
            lookup: 0,
        })
    }

    /// Lets the penalties see the prompt (when the penalty window includes it).
    pub fn with_prompt(mut self, prompt: &[u32]) -> Self {
        self.history = History::from_prompt(prompt);
        self.prompt = prompt.to_vec();
        self
    }

    /// Speculative decoding by prompt lookup in [`generate`](Self::generate): drafts of up to
    /// `max_draft` tokens ([`prompt_lookup`](crate::prompt_lookup) over the prompt given to
    /// [`with_prompt`](Self::with_prompt) and the output so far, cut where the grammar
    /// refuses), each verified with [`Funnel::verify_token`]. The output is distributed
    /// exactly as without it, and identical when greedy. 0 turns it off.
    pub fn set_lookup(&mut self, max_draft: usize) {
        self.lookup = max_draft;
    }

    /// Bounds the whole output to `max_tokens` tokens, which it then completes within (see
    /// [`Matcher::set_token_budget`]); `None` lifts the bound.
    pub fn set_token_budget(&mut self, max_tokens: Option<usize>) -> Result<(), Error> {
        Ok(self.matcher.set_token_budget(max_tokens)?)
    }

    /// The matcher (for masks, rollback, state queries).
    pub fn matcher(&self) -> &Matcher {
        &self.matcher
    }

    /// Draws the next token from one step's `logits` (one per id; at least as wide as the
    /// vocabulary's logits width is not required: ids beyond the slice are never drawn). The
    /// token is not accepted yet: call [`accept`](Self::accept) once the model has it.
    pub fn sample(&mut self, logits: &[f32]) -> Result<u32, Error> {
        self.matcher.fill_mask(&mut self.mask)?;
        Ok(self
            .funnel
            .sample_from(logits, Some(&self.mask), &self.history, &mut self.rng)?)
    }

    /// Records that `token` was fed to the model (sampled or forced).
    pub fn accept(&mut self, token: u32) -> Result<(), Error> {
        self.matcher.accept_token(token)?;
        self.history.push(token);
        Ok(())
    }

    /// Tokens the grammar forces next, to feed without sampling (and then [`accept`](Self::accept)).
    pub fn forced_tokens(&mut self) -> Result<Vec<u32>, Error> {
        Ok(self.matcher.forced_tokens()?)
    }

    /// Whether the output so far is complete (an end token is allowed).
    pub fn is_accepting(&self) -> bool {
        self.matcher.is_accepting()
    }

    /// Whether nothing but the end can follow.
    pub fn is_finished(&self) -> bool {
        self.matcher.is_finished()
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
        self.set_token_budget(Some(max_tokens))?;
        self.run(model, max_tokens)
    }

    /// As [`generate`](Self::generate), but cut off at `max_tokens` wherever the output is
    /// then (a prefix of a valid one; [`StopReason::MaxTokens`] says so): what the engines of
    /// this field do.
    pub fn generate_truncated(
        &mut self,
        model: &mut dyn FnMut(&[u32]) -> Vec<f32>,
        max_tokens: usize,
    ) -> Result<Generation, Error> {
        self.set_token_budget(None)?;
        self.run(model, max_tokens)
    }

    /// The lookup's draft after `output`, at most `max_len` tokens, cut where plain decoding
    /// would not draw (see [`grammar_prefix`]).
    fn draft(&mut self, output: &[u32], max_len: usize) -> Result<(Vec<u32>, bool), Error> {
        if self.lookup == 0 || max_len == 0 {
            return Ok((Vec::new(), true));
        }
        let context: Vec<u32> = self.prompt.iter().chain(output).copied().collect();
        let draft = prompt_lookup(&context, self.lookup.min(max_len));
        let cut = grammar_prefix(&mut self.matcher, draft, true)?;
        Ok((draft[..cut.tokens].to_vec(), cut.then_draw))
    }

    fn run(
        &mut self,
        model: &mut dyn FnMut(&[u32]) -> Vec<f32>,
        max_tokens: usize,
    ) -> Result<Generation, Error> {
        let vocab = self.matcher.grammar().vocabulary().clone();
        let mut tokens = Vec::new();
        let mut forced_count = 0;
        let (mut drafted, mut accepted) = (0, 0);
        let mut stop = StopReason::MaxTokens;
        while tokens.len() < max_tokens {
            if self.matcher.is_finished() {
                stop = StopReason::Complete;
                break;
            }
            let forced = self.forced_tokens()?;
            if !forced.is_empty() {
                for token in forced.into_iter().take(max_tokens - tokens.len()) {
                    self.accept(token)?;
                    tokens.push(token);
                    forced_count += 1;
                }
                continue;
            }
            let room = max_tokens - tokens.len();
            let (draft, then_draw) = self.draft(&tokens, room - 1)?;
            drafted += draft.len();
            // The model scores each drafted position (a backend does it in one batch); the
            // first rejection, or the token after a fully accepted draft, ends the step.
            let mut token = None;
            for &drafted in &draft {
                let logits = model(&tokens);
                self.matcher.fill_mask(&mut self.mask)?;
                match self.funnel.verify_token(
                    &logits,
                    Some(&self.mask),
                    &self.history,
                    drafted,
                    &mut self.rng,
                )? {
                    DraftCheck::Accepted => {
                        self.accept(drafted)?;
                        tokens.push(drafted);
                        accepted += 1;
                    }
                    DraftCheck::Rejected { replacement } => {
                        token = Some(replacement);
                        break;
                    }
                }
            }
            let token = match token {
                Some(token) => token,
                // A fully accepted draft that ends where the grammar forces or finishes: the
                // loop takes it from there, as plain decoding would.
                None if !then_draw => continue,
                None => self.sample(&model(&tokens))?,
            };
            self.accept(token)?;
            if vocab.kind(token) == Some(TokenKind::EndOfSequence) {
                stop = StopReason::Complete;
                break;
            }
            tokens.push(token);
        }
        if stop == StopReason::MaxTokens
            && (self.matcher.is_finished()
                || (self.matcher.is_accepting() && self.matcher.tokens_left() == Some(0)))
        {
            stop = StopReason::Complete;
        }
        let bytes = tokens
            .iter()
            .filter_map(|&t| vocab.token_bytes(t))
            .flatten()
            .copied()
            .collect();
        Ok(Generation {
            tokens,
            bytes,
            forced: forced_count,
            drafted,
            accepted,
            stop,
        })
    }
}
