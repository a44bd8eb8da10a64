//! The sampling funnel: how a vector of logits becomes one token.
//!
//! Every step is a small pure function over a logits slice (`&mut [f32]`, position = token
//! id, -inf = impossible), and [`Funnel`] chains them in the canonical order:
//!
//! 1. **grammar mask** ([`apply_grammar_mask`]): -inf for every token the grammar forbids;
//! 2. **repetition penalty** ([`apply_repetition_penalty`]): CTRL's rule on the recent tokens;
//! 3. **frequency and presence penalties** ([`apply_frequency_presence_penalty`]): OpenAI's
//!    additive rule;
//! 4. **logit bias** ([`apply_logit_bias`]);
//! 5. **temperature** ([`apply_temperature`]; 0 means greedy);
//! 6. **top-k**, **top-p**, **min-p**, **typical-p** ([`apply_top_k`], [`apply_top_p`],
//!    [`apply_min_p`], [`apply_typical_p`]), each seeing the survivors of the previous one;
//! 7. **softmax** ([`softmax`], log-sum-exp) and a **seeded draw** ([`draw`]).
//!
//! Guarantees: a masked token never comes back; no cutoff removes the most likely token; a
//! grammar that allows nothing is an error ([`SamplingError::NoAllowedToken`]), never NaN or a
//! random token; the same seed gives the same tokens on every run and platform (the generator,
//! [`Xoshiro256StarStar`], and the `exp`/`ln` the funnel uses are written here from basic
//! IEEE-754 operations).
//!
//! Speed: the funnel never sorts the vocabulary. The first cutoff streams the full vector once
//! and compacts the survivors into a short candidate list; every later step works on that list.
//!
//! # Usage
//!
//! ```
//! use constrain_sampling::{Funnel, History, SamplerConfig, Xoshiro256StarStar};
//!
//! let config = SamplerConfig {
//!     temperature: 0.7,
//!     top_k: 40,
//!     top_p: 0.9,
//!     repetition_penalty: 1.1,
//!     ..SamplerConfig::default()
//! };
//! let mut funnel = Funnel::new(config)?;
//! let mut rng = Xoshiro256StarStar::seed_from_u64(42);
//! let mut history = History::from_prompt(&[1, 2]);
//!
//! // One step of generation: the model's logits, the grammar's mask (tokens 0..=3 allowed).
//! let mut logits = vec![6.0, 5.0, 4.5, 3.5, 2.0, 0.0];
//! let mask = [0b1111u32];
//! let token = funnel.sample(&mut logits, Some(&mask), &history, &mut rng)?;
//! assert!(token <= 3);
//! history.push(token);
//!
//! // What the draw saw, stage by stage.
//! let trace = funnel.trace(&[6.0, 5.0, 4.5, 3.5, 2.0, 0.0], Some(&mask), &history)?;
//! for step in &trace.steps {
//!     println!("{:>20}: {:?}", step.name(), step.probs);
//! }
//! # Ok::<(), constrain_sampling::SamplingError>(())
//! ```
//!
//! Speculative decoding's verification step is [`verify_draft`]; log-probabilities (of the
//! model's distribution, or of the grammar's renormalized one) are [`token_logprobs`].

#![forbid(unsafe_code)]
#![deny(missing_docs)]

mod config;
mod distribution;
mod error;
mod funnel;
mod history;
mod logprobs;
mod math;
mod rng;
mod speculative;
mod stage;
mod steps;

pub use config::{PenaltyWindow, SamplerConfig};
pub use distribution::Distribution;
pub use error::{SamplingError, TokenOrigin};
pub use funnel::{Funnel, Trace, TraceStep};
pub use history::{History, TokenCounts};
pub use logprobs::{allowed_ids, log_normalizer, token_logprobs, top_tokens, TokenLogprobs};
pub use rng::{SplitMix64, Xoshiro256StarStar};
pub use speculative::{verify_draft, DraftCheck, Verification};
pub use stage::Stage;
pub use steps::{
    apply_frequency_presence_penalty, apply_grammar_mask, apply_logit_bias, apply_min_p,
    apply_repetition_penalty, apply_temperature, apply_top_k, apply_top_p, apply_typical_p,
    check_logits, count_allowed, draw, softmax, CutoffScratch,
};
