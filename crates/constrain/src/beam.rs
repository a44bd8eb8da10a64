//! Constrained beam search: the `B` most likely partial outputs, each with its own matcher.
//!
//! A hypothesis's score is the sum of its chosen tokens' log-probabilities in the model's
//! distribution masked to the grammar's tokens and renormalized over them (a token the grammar
//! forces has no alternative and adds 0). Each step extends every live hypothesis by its `B`
//! best allowed tokens and keeps the `B` best extensions: those that end the output (an end
//! token) join the complete ones, the others are the next step's beams; forced tokens extend
//! a hypothesis without branching, and one the grammar or the budget ends is complete. The
//! search ends when no beam is left (ranked by likelihood alone, a beam no likelier than the
//! best complete output is dropped: it can only fall further behind), and returns the complete
//! output with the best `score / length^A` (`A`: the length penalty; 0 ranks by likelihood
//! alone). With `B = 1` it is greedy decoding, token for token.
//!
//! The model is anything that implements [`BeamModel`]: several sequences side by side, each
//! with its own cache, so a backend can evaluate all hypotheses of a step in one batch.

use constrain_engine::{MatchError, Matcher};
use constrain_sampling::{log_normalizer, top_tokens, SamplingError};
use constrain_vocab::TokenKind;

/// A model that evaluates several sequences at once, for [`beam_search`].
///
/// Sequences are named by small ids (`0..beams`); each holds the tokens decoded into it so
/// far, with whatever cache the backend keeps. Sequence 0 starts empty and gets the prompt
/// in the first [`decode`](Self::decode).
pub trait BeamModel {
    /// The backend's error; matcher and sampling errors convert into it.
    type Error: From<MatchError> + From<SamplingError>;

    /// Appends each entry's tokens to its sequence (every entry names a different sequence)
    /// and computes, for each, the next-token logits after its last token.
    fn decode(&mut self, work: &[(usize, &[u32])]) -> Result<(), Self::Error>;

    /// The logits after the last token of `seq` in the latest [`decode`](Self::decode) that
    /// named it.
    fn logits(&self, seq: usize) -> &[f32];

    /// Makes sequence `to` a copy of sequence `from` (dropping what `to` held).
    fn fork(&mut self, from: usize, to: usize) -> Result<(), Self::Error>;

    /// Empties sequence `seq`; the search no longer needs it.
    fn release(&mut self, seq: usize) -> Result<(), Self::Error>;
}

/// The settings of [`beam_search`].
#[derive(Clone, Debug, PartialEq)]
pub struct BeamConfig {
    /// How many hypotheses are kept (`B`, at least 1; 1 is greedy decoding).
    pub beams: usize,
    /// `A` in `score / length^A`, the ranking of complete outputs (0: by likelihood alone;
    /// larger values favour longer outputs).
    pub length_penalty: f64,
    /// The token budget of every hypothesis (see [`Matcher::set_token_budget`]): each
    /// completes within it, end token excluded.
    pub max_tokens: usize,
}

/// One complete output of the search.
#[derive(Clone, Debug, PartialEq)]
pub struct Beam {
    /// The output tokens, forced and chosen (the end token excluded).
    pub tokens: Vec<u32>,
    /// The end-of-sequence token that closed it, if one did (else the grammar or the budget
    /// ended it).
    pub end: Option<u32>,
    /// Its log-probability under the constraint (the sum described in the module docs).
    pub logprob: f64,
    /// `logprob / max(1, tokens)^A`: what the final ranking compares.
    pub score: f64,
    /// How many of its tokens the grammar forced.
    pub forced: usize,
}

/// The result of [`beam_search`].
#[derive(Clone, Debug, PartialEq)]
pub struct BeamOutput {
    /// The best complete output by [`Beam::score`].
    pub best: Beam,
    /// Every output completed during the search, best score first (`best` included).
    pub completed: Vec<Beam>,
    /// How many batches the model evaluated.
    pub decode_calls: usize,
}

/// A partial output of the search.
#[derive(Clone, Debug)]
struct Hypothesis {
    matcher: Matcher,
    tokens: Vec<u32>,
    /// Tokens appended since the sequence was last decoded.
    pending: Vec<u32>,
    logprob: f64,
    forced: usize,
    /// The model's sequence (`None` once complete: it needs no more evaluation).
    seq: Option<usize>,
    end: Option<u32>,
}

impl Hypothesis {
    fn finish(&self, length_penalty: f64) -> Beam {
        let length = self.tokens.len().max(1) as f64;
        Beam {
            tokens: self.tokens.clone(),
            end: self.end,
            logprob: self.logprob,
            score: self.logprob / length.powf(length_penalty),
            forced: self.forced,
        }
    }
}

/// An extension of a live hypothesis by one token.
struct Candidate {
    parent: usize,
    token: u32,
    logprob: f64,
}

/// Runs constrained beam search from `matcher` (at the start of the output) after `prompt`.
///
/// Every output validates against the matcher's grammar and completes within
/// `config.max_tokens` tokens.
///
/// # Errors
///
/// The model's errors; [`MatchError::BudgetTooSmall`] when the constraint needs more tokens
/// than `max_tokens`; [`SamplingError::InvalidSetting`] for `beams = 0` or a length penalty
/// that is not finite.
pub fn beam_search<M: BeamModel>(
    model: &mut M,
    prompt: &[u32],
    mut matcher: Matcher,
    config: &BeamConfig,
) -> Result<BeamOutput, M::Error> {
    if config.beams == 0 {
        return Err(SamplingError::InvalidSetting {
            setting: "beams",
            value: "0".into(),
            expected: "at least 1",
        }
        .into());
    }
    if !config.length_penalty.is_finite() {
        return Err(SamplingError::InvalidSetting {
            setting: "length_penalty",
            value: config.length_penalty.to_string(),
            expected: "a finite number",
        }
        .into());
    }
    matcher.set_token_budget(Some(config.max_tokens))?;
    let vocabulary = matcher.grammar().vocabulary().clone();
    let mut mask = vec![0u32; matcher.grammar().mask_words()];
    let mut pool = vec![Hypothesis {
        matcher,
        tokens: Vec::new(),
        pending: prompt.to_vec(),
        logprob: 0.0,
        forced: 0,
        seq: Some(0),
        end: None,
    }];
    let mut completed: Vec<Beam> = Vec::new();
    let mut decode_calls = 0;

    loop {
        // Forced tokens first; a hypothesis that completes leaves the pool for good.
        let mut live = Vec::with_capacity(pool.len());
        for mut hypothesis in pool {
            if advance_forced(&mut hypothesis, &vocabulary)? {
                if let Some(seq) = hypothesis.seq.take() {
                    model.release(seq)?;
                }
                completed.push(hypothesis.finish(config.length_penalty));
            } else {
                live.push(hypothesis);
            }
        }
        pool = prune(model, live, &completed, config)?;
        if pool.is_empty() {
            break;
        }
        let work: Vec<(usize, &[u32])> = pool
            .iter()
            .filter_map(|h| h.seq.map(|seq| (seq, h.pending.as_slice())))
            .collect();
        model.decode(&work)?;
        decode_calls += 1;

        let mut candidates = Vec::new();
        for (i, hypothesis) in pool.iter_mut().enumerate() {
            hypothesis.pending.clear();
            let Some(seq) = hypothesis.seq else { continue };
            hypothesis.matcher.fill_mask(&mut mask)?;
            let logits = model.logits(seq);
            let normalizer = log_normalizer(logits, Some(&mask))?;
            for (token, logit) in top_tokens(logits, Some(&mask), config.beams) {
                candidates.push(Candidate {
                    parent: i,
                    token,
                    logprob: hypothesis.logprob + (f64::from(logit) - normalizer),
                });
            }
        }
        // The best B extensions, best first; among equals, the earlier candidate (a parent's
        // tokens come by decreasing logit, lower id first among equals: greedy's choice).
        // Those that end the output complete; the others are the next step's beams.
        candidates.sort_by(|a, b| b.logprob.total_cmp(&a.logprob));
        candidates.truncate(config.beams);
        pool = next_pool(
            model,
            pool,
            &candidates,
            &vocabulary,
            config,
            &mut completed,
        )?;
    }

    completed.sort_by(|a, b| b.score.total_cmp(&a.score));
    let best = completed
        .first()
        .cloned()
        .ok_or(SamplingError::NoTokenLeft {
            after: "beam search",
        })?;
    Ok(BeamOutput {
        best,
        completed,
        decode_calls,
    })
}

/// Drops the live hypotheses that can no longer win: ranked by likelihood alone (`A = 0`), a
/// partial output scored at most the best complete one only falls further behind it (every
/// token adds a log-probability of at most 0).
fn prune<M: BeamModel>(
    model: &mut M,
    live: Vec<Hypothesis>,
    completed: &[Beam],
    config: &BeamConfig,
) -> Result<Vec<Hypothesis>, M::Error> {
    let best = completed.iter().map(|b| b.logprob).max_by(f64::total_cmp);
    let Some(best) = best.filter(|_| config.length_penalty == 0.0) else {
        return Ok(live);
    };
    let mut kept = Vec::with_capacity(live.len());
    for hypothesis in live {
        if hypothesis.logprob > best {
            kept.push(hypothesis);
        } else if let Some(seq) = hypothesis.seq {
            model.release(seq)?;
        }
    }
    Ok(kept)
}

/// Appends the tokens the grammar forces; true when the hypothesis is then complete (the
/// grammar admits nothing more, the budget is spent, or an end token was forced). As the
/// decode loop of a single sequence does it, so that one beam is greedy decoding exactly.
fn advance_forced(
    hypothesis: &mut Hypothesis,
    vocabulary: &constrain_vocab::Vocabulary,
) -> Result<bool, MatchError> {
    loop {
        let matcher = &mut hypothesis.matcher;
        if matcher.is_finished() || matcher.tokens_left() == Some(0) {
            return Ok(true);
        }
        let forced = matcher.forced_tokens()?;
        if forced.is_empty() {
            return Ok(false);
        }
        for token in forced {
            hypothesis.matcher.accept_token(token)?;
            hypothesis.forced += 1;
            if vocabulary.kind(token) == Some(TokenKind::EndOfSequence) {
                hypothesis.end = Some(token);
                return Ok(true);
            }
            hypothesis.tokens.push(token);
            hypothesis.pending.push(token);
        }
    }
}

/// The kept candidates as the next pool: each child gets a clone of its parent's matcher and a
/// sequence of the model (its parent's for the first live child, a copy of it for the
/// others); sequences of parents without a live child are released.
fn next_pool<M: BeamModel>(
    model: &mut M,
    pool: Vec<Hypothesis>,
    kept: &[Candidate],
    vocabulary: &constrain_vocab::Vocabulary,
    config: &BeamConfig,
    completed: &mut Vec<Beam>,
) -> Result<Vec<Hypothesis>, M::Error> {
    let mut next = Vec::with_capacity(kept.len());
    // Children of each parent that keep decoding, in order.
    let mut live_children: Vec<Vec<usize>> = vec![Vec::new(); pool.len()];
    for candidate in kept {
        let parent = &pool[candidate.parent];
        let token = candidate.token;
        let mut child = Hypothesis {
            matcher: parent.matcher.clone(),
            tokens: parent.tokens.clone(),
            pending: Vec::new(),
            logprob: candidate.logprob,
            forced: parent.forced,
            seq: None,
            end: None,
        };
        child.matcher.accept_token(token)?;
        if vocabulary.kind(token) == Some(TokenKind::EndOfSequence) {
            child.end = Some(token);
            completed.push(child.finish(config.length_penalty));
            continue;
        }
        child.tokens.push(token);
        child.pending.push(token);
        live_children[candidate.parent].push(next.len());
        next.push(child);
    }
    // Parents without a live child give their sequence back; the children that need a copy
    // of their parent's take one of the sequences no parent keeps.
    for (parent, children) in pool.iter().zip(&live_children) {
        if let (Some(seq), true) = (parent.seq, children.is_empty()) {
            model.release(seq)?;
        }
    }
    let kept_seqs: Vec<usize> = pool
        .iter()
        .zip(&live_children)
        .filter(|(_, children)| !children.is_empty())
        .filter_map(|(parent, _)| parent.seq)
        .collect();
    let mut available: Vec<usize> = (0..config.beams)
        .rev()
        .filter(|seq| !kept_seqs.contains(seq))
        .collect();
    for (parent, children) in pool.iter().zip(&live_children) {
        let Some(seq) = parent.seq else { continue };
        for (k, &child) in children.iter().enumerate() {
            let target = if k == 0 {
                seq
            } else {
                let target = available.pop().ok_or(SamplingError::NoTokenLeft {
                    after: "beam search (no free sequence)",
                })?;
                model.fork(seq, target)?;
                target
            };
            next[child].seq = Some(target);
        }
    }
    Ok(next)
}

#[cfg(test)]
mod tests;
