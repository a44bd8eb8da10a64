//! The distribution the funnel ends in.

use crate::{SamplingError, Xoshiro256StarStar};

/// A probability distribution over the tokens that survived the funnel, by increasing id.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Distribution {
    ids: Vec<u32>,
    /// Logits while the funnel runs, probabilities once it is done.
    pub(crate) probs: Vec<f32>,
}

impl Distribution {
    /// The surviving token ids, increasing.
    pub fn ids(&self) -> &[u32] {
        &self.ids
    }

    /// Their probabilities (same order as [`ids`](Self::ids)); they sum to 1.
    pub fn probs(&self) -> &[f32] {
        &self.probs
    }

    /// How many tokens survived.
    pub fn len(&self) -> usize {
        self.ids.len()
    }

    /// Whether no token survived (never the case for a distribution the funnel returns).
    pub fn is_empty(&self) -> bool {
        self.ids.is_empty()
    }

    /// `(token, probability)` pairs by increasing token id.
    pub fn iter(&self) -> impl Iterator<Item = (u32, f32)> + '_ {
        self.ids.iter().copied().zip(self.probs.iter().copied())
    }

    /// The probability of `token` (0 if it did not survive).
    pub fn probability(&self, token: u32) -> f32 {
        self.ids
            .binary_search(&token)
            .map_or(0.0, |i| self.probs[i])
    }

    /// The probabilities of the tokens `0..width` (0 for those that did not survive).
    pub fn to_dense(&self, width: usize) -> Vec<f32> {
        let mut dense = vec![0.0; width];
        for (token, p) in self.iter() {
            if let Some(slot) = dense.get_mut(token as usize) {
                *slot = p;
            }
        }
        dense
    }

    /// The most likely token (the lowest id among equals).
    pub fn most_likely(&self) -> Option<u32> {
        let mut best: Option<(u32, f32)> = None;
        for (token, p) in self.iter() {
            if best.is_none_or(|(_, b)| p > b) {
                best = Some((token, p));
            }
        }
        best.map(|(token, _)| token)
    }

    /// Draws a token (see [`draw`](crate::draw)).
    ///
    /// # Errors
    ///
    /// [`SamplingError::InvalidProbabilities`] if the distribution is empty.
    pub fn draw(&self, rng: &mut Xoshiro256StarStar) -> Result<u32, SamplingError> {
        crate::steps::draw_valid(&self.probs, rng).map(|i| self.ids[i])
    }

    /// Draws a token from the distribution without `token` (renormalized): the residual of a
    /// rejected point-mass draft.
    ///
    /// # Errors
    ///
    /// [`SamplingError::InvalidProbabilities`] if no other token has a positive probability.
    pub(crate) fn draw_excluding(
        &self,
        token: u32,
        rng: &mut Xoshiro256StarStar,
    ) -> Result<u32, SamplingError> {
        let mut residual = self.probs.clone();
        if let Ok(i) = self.ids.binary_search(&token) {
            residual[i] = 0.0;
        }
        crate::steps::draw_valid(&residual, rng).map(|i| self.ids[i])
    }

    /// Replaces the content by the finite logits (or only those at `kept`, increasing).
    pub(crate) fn gather(&mut self, logits: &[f32], kept: Option<&[u32]>) {
        self.ids.clear();
        self.probs.clear();
        match kept {
            Some(kept) => {
                self.ids.extend_from_slice(kept);
                self.probs
                    .extend(kept.iter().map(|&token| logits[token as usize]));
            }
            None => {
                // Branch-free compaction: write every entry, advance only past finite ones.
                self.ids.resize(logits.len(), 0);
                self.probs.resize(logits.len(), 0.0);
                let mut len = 0;
                for (token, &logit) in logits.iter().enumerate() {
                    self.ids[len] = token as u32;
                    self.probs[len] = logit;
                    len += usize::from(logit > f32::NEG_INFINITY);
                }
                self.ids.truncate(len);
                self.probs.truncate(len);
            }
        }
    }

    /// Replaces the content by the finite logits of the tokens `mask` allows, reading only
    /// those: the cost follows the mask's words and its allowed tokens, not the vocabulary.
    /// Bits at or beyond `logits.len()` are ignored, as [`apply_grammar_mask`] does.
    ///
    /// [`apply_grammar_mask`]: crate::apply_grammar_mask
    pub(crate) fn gather_allowed(&mut self, logits: &[f32], mask: &[u32]) {
        self.ids.clear();
        self.probs.clear();
        for (word_index, &word) in mask.iter().enumerate() {
            let mut bits = word;
            while bits != 0 {
                let token = word_index * 32 + bits.trailing_zeros() as usize;
                bits &= bits - 1;
                match logits.get(token) {
                    Some(&logit) if logit > f32::NEG_INFINITY => {
                        self.ids.push(token as u32);
                        self.probs.push(logit);
                    }
                    Some(_) => {}
                    None => return,
                }
            }
        }
    }

    /// The logit (while the funnel runs) of `token`, if it is a candidate.
    pub(crate) fn value_mut(&mut self, token: u32) -> Option<&mut f32> {
        let position = self.ids.binary_search(&token).ok()?;
        self.probs.get_mut(position)
    }

    /// Drops the candidates whose logit became -inf (tokens a bias of -inf banned).
    pub(crate) fn retain_finite(&mut self) {
        let mut len = 0;
        for from in 0..self.ids.len() {
            if self.probs[from] > f32::NEG_INFINITY {
                self.ids[len] = self.ids[from];
                self.probs[len] = self.probs[from];
                len += 1;
            }
        }
        self.ids.truncate(len);
        self.probs.truncate(len);
    }

    /// Keeps the entries at these positions (increasing).
    pub(crate) fn retain_positions(&mut self, kept: &[u32]) {
        for (to, &from) in kept.iter().enumerate() {
            self.ids[to] = self.ids[from as usize];
            self.probs[to] = self.probs[from as usize];
        }
        self.ids.truncate(kept.len());
        self.probs.truncate(kept.len());
    }
}
