//! What each step of a sequence did, for a person asking why the output went where it went:
//! which tokens the mask allowed, how much of the model's probability it took away, and what
//! the candidates were before and after the mask and the funnel.
//!
//! A trace is computed only when [`StepOptions::trace`](crate::StepOptions::trace) asks for
//! it; off, a step pays one branch. On, each drawn token costs a pass over the logits (a
//! softmax and a top-k) besides the draw itself.

use serde::{Deserialize, Serialize};

use constrain_sampling::Distribution;
use constrain_vocab::Vocabulary;

/// How a token came to be in the output.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Origin {
    /// Drawn from the model's logits (a verified draft counts: it is distributed as a draw).
    Sampled,
    /// Appended without a draw: the grammar allowed nothing else.
    Forced,
    /// Drawn from a mask the token budget narrowed, so that the output completes in time.
    Budget,
}

/// One candidate token and its probability in one distribution.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Candidate {
    /// The token id.
    pub token: u32,
    /// Its text (invalid UTF-8 replaced).
    pub text: String,
    /// Its probability.
    pub prob: f64,
}

/// What one step of a sequence did.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct StepTrace {
    /// The token appended.
    pub token: u32,
    /// Its text (invalid UTF-8 replaced).
    pub text: String,
    /// Sampled, forced or budget-constrained.
    pub origin: Origin,
    /// How many tokens the mask allowed; `None` when no mask applied (no constraint, free
    /// text, or a forced token).
    pub allowed: Option<usize>,
    /// The softmax mass, under the model's raw logits, of the tokens the mask refused: 0
    /// when the model agreed with the constraint, near 1 when it was forced away from where
    /// it wanted to go. `None` for a forced token (no logits were read).
    pub removed_mass: Option<f64>,
    /// The most likely tokens under the model's raw logits.
    pub before_mask: Vec<Candidate>,
    /// The most likely allowed tokens, renormalized over the allowed ones.
    pub after_mask: Vec<Candidate>,
    /// The most likely tokens of the distribution the draw came from (after penalties,
    /// temperature and truncation).
    pub after_funnel: Vec<Candidate>,
    /// Tokens the budget left before this one, when the output must complete within one.
    pub budget_left: Option<usize>,
}

impl StepTrace {
    /// The trace of a token the grammar forced.
    pub(crate) fn forced(vocabulary: &Vocabulary, token: u32, budget_left: Option<usize>) -> Self {
        StepTrace {
            token,
            text: token_text(vocabulary, token),
            origin: Origin::Forced,
            allowed: None,
            removed_mass: None,
            before_mask: Vec::new(),
            after_mask: Vec::new(),
            after_funnel: Vec::new(),
            budget_left,
        }
    }
}

/// What a drawn step's trace is made of, besides the token.
pub(crate) struct DrawnStep<'a> {
    pub logits: &'a [f32],
    pub mask: Option<&'a [u32]>,
    pub funnel: &'a Distribution,
    pub budget_narrowed: bool,
    pub budget_left: Option<usize>,
    pub top: usize,
}

/// Logits this far below the largest are left out of the sums: each weighs under `e^-40`
/// (4e-18) of the largest, so all of them together stay far below any figure a trace shows.
const NEGLIGIBLE: f32 = 40.0;

impl DrawnStep<'_> {
    /// The trace of `token`, drawn at this step: one pass over the logits for the softmax's
    /// normalizer and the top candidates, one over the mask's allowed ids for theirs.
    pub(crate) fn trace(&self, vocabulary: &Vocabulary, token: u32) -> StepTrace {
        let logits = self.logits;
        // The top candidates before the mask come with the largest logit, the softmax's shift.
        let before = top_k(logits.iter().copied().enumerate(), self.top.max(1));
        let max = before.first().map_or(f32::NEG_INFINITY, |&(_, l)| l);
        let floor = max - NEGLIGIBLE;
        let weight = |logit: f32| {
            if logit > floor {
                f64::from((logit - max).exp())
            } else {
                0.0
            }
        };
        // One pass: every logit's weight counts in the normalizer, and in the kept mass when
        // its bit is set (no branch on the mask); four sums at a time, so that the additions
        // do not wait on one another.
        let (mut all, mut kept) = ([0.0f64; 4], [0.0f64; 4]);
        for (chunk, logits) in logits.chunks(4).enumerate() {
            for (lane, &logit) in logits.iter().enumerate() {
                let id = chunk * 4 + lane;
                let w = weight(logit);
                all[lane] += w;
                if let Some(mask) = self.mask {
                    let bit = mask.get(id / 32).map_or(0, |word| word >> (id % 32) & 1);
                    kept[lane] += w * f64::from(bit);
                }
            }
        }
        let all: f64 = all.iter().sum();
        let mut kept: f64 = kept.iter().sum();
        if self.mask.is_none() {
            kept = all;
        }
        let allowed_ids = || {
            self.mask
                .into_iter()
                .flat_map(set_bits)
                .take_while(|&id| id < logits.len())
        };
        let removed_mass = self.mask.map(|_| {
            if all > 0.0 {
                (1.0 - kept / all).clamp(0.0, 1.0)
            } else {
                0.0
            }
        });
        let spelled = |ids: Vec<(usize, f32)>, normalizer: f64| -> Vec<Candidate> {
            ids.into_iter()
                .map(|(id, logit)| candidate(vocabulary, id, weight(logit) / normalizer))
                .collect()
        };
        let after = match self.mask {
            Some(_) => top_k(allowed_ids().map(|id| (id, logits[id])), self.top),
            None => before.clone(),
        };
        let mut after_funnel: Vec<(u32, f32)> = self.funnel.iter().collect();
        after_funnel.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
        after_funnel.truncate(self.top);
        StepTrace {
            token,
            text: token_text(vocabulary, token),
            origin: if self.budget_narrowed {
                Origin::Budget
            } else {
                Origin::Sampled
            },
            allowed: self.mask.map(|_| allowed_ids().count()),
            removed_mass,
            before_mask: spelled(before.into_iter().take(self.top).collect(), all),
            after_mask: spelled(after, kept),
            after_funnel: after_funnel
                .into_iter()
                .map(|(id, p)| candidate(vocabulary, id as usize, f64::from(p)))
                .collect(),
            budget_left: self.budget_left,
        }
    }
}

/// The ids whose bit is set in `mask`, increasing.
fn set_bits(mask: &[u32]) -> impl Iterator<Item = usize> + '_ {
    mask.iter().enumerate().flat_map(|(word, &bits)| {
        let mut bits = bits;
        std::iter::from_fn(move || {
            (bits != 0).then(|| {
                let bit = bits.trailing_zeros() as usize;
                bits &= bits - 1;
                word * 32 + bit
            })
        })
    })
}

/// The `k` largest finite logits of `logits` (id, logit), largest first (lower id first on
/// ties).
fn top_k(logits: impl Iterator<Item = (usize, f32)>, k: usize) -> Vec<(usize, f32)> {
    let mut best: Vec<(usize, f32)> = Vec::with_capacity(k + 1);
    if k == 0 {
        return best;
    }
    for (id, logit) in logits {
        if !logit.is_finite() || (best.len() == k && best[k - 1].1 >= logit) {
            continue;
        }
        let at = best.partition_point(|&(_, l)| l >= logit);
        best.insert(at, (id, logit));
        best.truncate(k);
    }
    best
}

fn candidate(vocabulary: &Vocabulary, id: usize, prob: f64) -> Candidate {
    let token = u32::try_from(id).unwrap_or(u32::MAX);
    Candidate {
        token,
        text: token_text(vocabulary, token),
        prob,
    }
}

fn token_text(vocabulary: &Vocabulary, token: u32) -> String {
    String::from_utf8_lossy(vocabulary.token_bytes(token).unwrap_or_default()).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn top_k_keeps_the_largest_in_order() {
        let logits = [1.0, 5.0, f32::NEG_INFINITY, 3.0, 5.0, 2.0];
        let all = || logits.iter().copied().enumerate();
        assert_eq!(top_k(all(), 3), [(1, 5.0), (4, 5.0), (3, 3.0)]);
        assert_eq!(
            top_k(all().filter(|(id, _)| id % 2 == 0), 2),
            [(4, 5.0), (0, 1.0)]
        );
        assert!(top_k(all(), 0).is_empty());
    }

    #[test]
    fn set_bits_lists_the_allowed_ids() {
        let mask = [0b1010_0001u32, 0, 1 << 31];
        assert_eq!(set_bits(&mask).collect::<Vec<_>>(), [0, 5, 7, 95]);
    }
}
