//! The sampler as the decode loop sees it: the sampling funnel with its history and seeded
//! generator, fed from llama.cpp's logits.

use constrain_sampling::{DraftCheck, Funnel, History, SamplerConfig, Xoshiro256StarStar};

use crate::LlamaError;

/// One generation's sampler state.
pub(crate) struct TokenSampler {
    funnel: Funnel,
    history: History,
    rng: Xoshiro256StarStar,
}

impl TokenSampler {
    pub(crate) fn new(
        config: &SamplerConfig,
        seed: u64,
        prompt: &[u32],
    ) -> Result<TokenSampler, LlamaError> {
        Ok(TokenSampler {
            funnel: Funnel::new(config.clone())?,
            history: History::from_prompt(prompt),
            rng: Xoshiro256StarStar::seed_from_u64(seed),
        })
    }

    /// Draws the next token from `logits`, among the tokens `mask` allows (all without one).
    pub(crate) fn sample(
        &mut self,
        logits: &[f32],
        mask: Option<&[u32]>,
    ) -> Result<u32, LlamaError> {
        // llama.cpp's logits stay untouched: the funnel reads them, copying only what it needs.
        Ok(self
            .funnel
            .sample_from(logits, mask, &self.history, &mut self.rng)?)
    }

    /// Verifies a drafted token against the funnel's distribution for `logits` (see
    /// [`Funnel::verify_token`]).
    pub(crate) fn verify(
        &mut self,
        logits: &[f32],
        mask: Option<&[u32]>,
        draft: u32,
    ) -> Result<DraftCheck, LlamaError> {
        Ok(self
            .funnel
            .verify_token(logits, mask, &self.history, draft, &mut self.rng)?)
    }

    /// Records a generated token, sampled or forced (the penalties see both).
    pub(crate) fn accept(&mut self, token: u32) {
        self.history.push(token);
    }
}
