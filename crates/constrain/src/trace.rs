//! What each step of a sequence did, for a person asking why the output went where it went:
//! which tokens the mask allowed, how much of the model's probability it took away, and what
//! the candidates were before and after the mask and the funnel.
//!
//! A trace is computed only when [`StepOptions::trace`](crate::StepOptions::trace) asks for
//! it; off, a step pays one branch. On, each drawn token costs one pass over the logits for
//! the softmax's normalizers and the funnel crate's top-k ([`top_tokens`]) with and without
//! the mask, besides the draw itself.

use serde::{Deserialize, Serialize};

use constrain_sampling::{allowed_ids, top_tokens, Distribution, SamplingError};
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

impl DrawnStep<'_> {
    /// The trace of `token`, drawn at this step: the softmax's normalizers over every logit
    /// and over the allowed ones, and the top candidates of each.
    ///
    /// # Errors
    ///
    /// [`SamplingError::NoTokenLeft`] when no logit is finite, which a successful draw from
    /// the same logits rules out.
    pub(crate) fn trace(
        &self,
        vocabulary: &Vocabulary,
        token: u32,
    ) -> Result<StepTrace, SamplingError> {
        let logits = self.logits;
        // The top candidates before the mask come with the largest logit, the softmax's shift.
        let mut before = top_tokens(logits, None, self.top.max(1));
        let Some(&(_, max)) = before.first() else {
            return Err(SamplingError::NoTokenLeft { after: "input" });
        };
        // The softmax's normalizers over every logit and over the allowed ones, in one pass
        // and exact to f32's `exp` (the probabilities shown must not add up past 1). Logits
        // more than 40 below the largest weigh under e^-40 each and are left out.
        let weight = |logit: f32| {
            if logit > max - 40.0 {
                f64::from((logit - max).exp())
            } else {
                0.0
            }
        };
        let (mut all, mut kept) = (0.0f64, 0.0f64);
        for (id, &logit) in logits.iter().enumerate() {
            let w = weight(logit);
            all += w;
            if let Some(mask) = self.mask {
                let bit = mask.get(id / 32).map_or(0, |word| word >> (id % 32) & 1);
                kept += w * f64::from(bit);
            }
        }
        if self.mask.is_none() {
            kept = all;
        }
        before.truncate(self.top);
        let after = match self.mask {
            Some(mask) => top_tokens(logits, Some(mask), self.top),
            None => before.clone(),
        };
        let spelled = |candidates: Vec<(u32, f32)>, normalizer: f64| -> Vec<Candidate> {
            candidates
                .into_iter()
                .map(|(id, logit)| candidate(vocabulary, id, weight(logit) / normalizer))
                .collect()
        };
        let mut after_funnel: Vec<(u32, f32)> = self.funnel.iter().collect();
        after_funnel.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
        after_funnel.truncate(self.top);
        Ok(StepTrace {
            token,
            text: token_text(vocabulary, token),
            origin: if self.budget_narrowed {
                Origin::Budget
            } else {
                Origin::Sampled
            },
            allowed: self
                .mask
                .map(|mask| allowed_ids(mask, logits.len()).count()),
            removed_mass: self.mask.map(|_| (1.0 - kept / all).clamp(0.0, 1.0)),
            before_mask: spelled(before, all),
            after_mask: spelled(after, kept),
            after_funnel: after_funnel
                .into_iter()
                .map(|(id, p)| candidate(vocabulary, id, f64::from(p)))
                .collect(),
            budget_left: self.budget_left,
        })
    }
}

fn candidate(vocabulary: &Vocabulary, token: u32, prob: f64) -> Candidate {
    Candidate {
        token,
        text: token_text(vocabulary, token),
        prob,
    }
}

fn token_text(vocabulary: &Vocabulary, token: u32) -> String {
    String::from_utf8_lossy(vocabulary.token_bytes(token).unwrap_or_default()).into_owned()
}
