//! Constrained beam search on a llama.cpp context: one sequence per beam, every beam of a step
//! evaluated in one batch, a branching beam's cache copied, a dropped one's removed.

use std::time::Instant;

use constrain::{beam_search, BeamConfig, BeamModel, BeamOutput};
use constrain_engine::Matcher;

use crate::sequences::SequenceTokens;
use crate::{LlamaError, Session};

/// One beam search: a prompt, a constraint and the search's settings.
#[derive(Clone, Debug)]
pub struct BeamRequest<'a> {
    /// The prompt's tokens.
    pub prompt: &'a [u32],
    /// The grammar's matcher at its start (each beam gets a clone).
    pub constraint: Matcher,
    /// Beams kept at every step (1: greedy decoding). The session needs at least this many
    /// [`sequences`](crate::SessionOptions::sequences).
    pub beams: usize,
    /// `A` in `score / length^A`, the ranking of complete outputs.
    pub length_penalty: f64,
    /// The token budget of every beam (bounded further by the context's room).
    pub max_tokens: usize,
}

/// What a beam search produced.
#[derive(Clone, Debug)]
pub struct BeamGeneration {
    /// The best output's bytes.
    pub output: Vec<u8>,
    /// The search's result: the best output, every completed one, the batches evaluated.
    pub search: BeamOutput,
    /// Seconds spent in the search (prompt included).
    pub decode_s: f64,
}

/// The session as [`BeamModel`]: beam `i`'s sequence is the context's sequence `i`.
struct Beams<'s, 'm> {
    session: &'s mut Session<'m>,
    /// Tokens of the prompt not decoded yet: the first batch starts with them.
    prompt_len: usize,
}

impl BeamModel for Beams<'_, '_> {
    type Error = LlamaError;

    fn decode(&mut self, work: &[(usize, &[u32])]) -> Result<(), LlamaError> {
        if let (&[(seq, tokens)], true) = (work, self.prompt_len > 0) {
            // The prompt in a batch of its own, then what the grammar forced after it: the
            // batches of plain decoding, whose logits one beam must reproduce exactly
            // (llama.cpp's arithmetic depends on how tokens are batched).
            let (prompt, forced) = tokens.split_at(self.prompt_len.min(tokens.len()));
            self.prompt_len = 0;
            self.session.decode(&[SequenceTokens {
                seq,
                tokens: prompt,
                logits_from: prompt.len().saturating_sub(1),
            }])?;
            if forced.is_empty() {
                return Ok(());
            }
            return self.session.decode(&[SequenceTokens {
                seq,
                tokens: forced,
                logits_from: forced.len() - 1,
            }]);
        }
        let batch: Vec<SequenceTokens<'_>> = work
            .iter()
            .map(|&(seq, tokens)| SequenceTokens {
                seq,
                tokens,
                logits_from: tokens.len().saturating_sub(1),
            })
            .collect();
        self.session.decode(&batch)
    }

    fn logits(&self, seq: usize) -> &[f32] {
        self.session.last_logits_of(seq)
    }

    fn fork(&mut self, from: usize, to: usize) -> Result<(), LlamaError> {
        self.session.copy_sequence(from, to)
    }

    fn release(&mut self, seq: usize) -> Result<(), LlamaError> {
        self.session.remove_sequence(seq)
    }
}

impl Session<'_> {
    /// Runs constrained beam search (see [`constrain::beam_search`]); the best output is
    /// complete and valid.
    ///
    /// # Errors
    ///
    /// [`LlamaError::EmptyPrompt`], [`LlamaError::PromptTooLong`]; [`LlamaError::Sequence`]
    /// when the session holds fewer sequences than beams; the search's errors.
    pub fn generate_beams(
        &mut self,
        request: BeamRequest<'_>,
    ) -> Result<BeamGeneration, LlamaError> {
        let room = self.room_after(request.prompt)?;
        if request.beams > self.sequences() {
            return Err(LlamaError::Sequence(format!(
                "{} beams need as many sequences; this session holds {}",
                request.beams,
                self.sequences()
            )));
        }
        // Every beam's output takes cells of its own; the prompt's are shared.
        let config = BeamConfig {
            beams: request.beams,
            length_penalty: request.length_penalty,
            max_tokens: request.max_tokens.min(room / request.beams.max(1)),
        };
        self.clear();
        let start = Instant::now();
        let search = beam_search(
            &mut Beams {
                session: self,
                prompt_len: request.prompt.len(),
            },
            request.prompt,
            request.constraint,
            &config,
        );
        self.clear();
        let search = search?;
        let vocabulary = self.model.vocabulary();
        let output = search
            .best
            .tokens
            .iter()
            .filter_map(|&t| vocabulary.token_bytes(t))
            .flatten()
            .copied()
            .collect();
        Ok(BeamGeneration {
            output,
            search,
            decode_s: start.elapsed().as_secs_f64(),
        })
    }
}
