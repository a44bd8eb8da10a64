//! The sampler as the decode loop sees it: the sampling funnel with its history and seeded
//! generator, fed from llama.cpp's logits.

use constrain_sampling::{Funnel, History, SamplerConfig, Xoshiro256StarStar};

use crate::LlamaError;

/// One generation's sampler state.
pub(crate) struct TokenSampler {
    funnel: Funnel,
    history: History,
    rng: Xoshiro256StarStar,
    /// The funnel works in place; llama.cpp's logits stay untouched.
    scratch: Vec<f32>,
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
            scratch: Vec::new(),
        })
    }

    /// Draws the next token from `logits`, among the tokens `mask` allows (all without one).
    pub(crate) fn sample(
        &mut self,
        logits: &[f32],
        mask: Option<&[u32]>,
    ) -> Result<u32, LlamaError> {
        self.scratch.clear();
        self.scratch.extend_from_slice(logits);
        Ok(self
            .funnel
            .sample(&mut self.scratch, mask, &self.history, &mut self.rng)?)
    }

    /// Records a generated token, sampled or forced (the penalties see both).
    pub(crate) fn accept(&mut self, token: u32) {
        self.history.push(token);
    }
}
