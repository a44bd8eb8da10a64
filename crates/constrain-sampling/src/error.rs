//! The one error type of the crate.

use thiserror::Error;

/// Where a token id that did not fit the logits came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TokenOrigin {
    /// The penalty window of the [`History`](crate::History).
    History,
    /// [`SamplerConfig::logit_bias`](crate::SamplerConfig::logit_bias).
    LogitBias,
    /// The draft tokens given to [`verify_draft`](crate::verify_draft).
    Draft,
    /// The token whose log-probability was asked for ([`token_logprobs`](crate::token_logprobs)).
    Chosen,
}

impl std::fmt::Display for TokenOrigin {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            TokenOrigin::History => "the history",
            TokenOrigin::LogitBias => "the logit bias",
            TokenOrigin::Draft => "the draft",
            TokenOrigin::Chosen => "the token asked about",
        })
    }
}

/// Why the funnel (or a step of it) could not produce a token.
///
/// Every failure is reported: the funnel never answers with NaN, with a token the grammar
/// forbids, or with a draw from an unconstrained distribution.
#[derive(Debug, Clone, PartialEq, Error)]
#[non_exhaustive]
pub enum SamplingError {
    /// The logits slice is empty.
    #[error("the logits are empty")]
    EmptyLogits,
    /// More logits than `u32` token ids can name.
    #[error("{width} logits are more than u32 token ids can name")]
    TooManyLogits {
        /// The width of the logits.
        width: usize,
    },
    /// A logit is NaN or +infinity (only finite values and -infinity are meaningful).
    #[error("the logit of token {token} is {value}; logits must be finite or -inf")]
    NonFiniteLogit {
        /// The token whose logit is invalid.
        token: u32,
        /// The invalid value.
        value: f32,
    },
    /// The grammar mask leaves no token that has a finite logit.
    #[error(
        "the grammar mask allows no token: {allowed} of {width} ids are allowed by the mask, \
         none of them with a finite logit"
    )]
    NoAllowedToken {
        /// How many ids below the logits width the mask allows.
        allowed: usize,
        /// The width of the logits.
        width: usize,
    },
    /// A stage (a logit bias of -inf, penalties that overflow) excluded every remaining token.
    #[error("no token is left after the {after} stage")]
    NoTokenLeft {
        /// The name of the stage after which nothing was left (`"input"` if the logits were
        /// all -inf to begin with).
        after: &'static str,
    },
    /// A sampler setting is out of its range.
    #[error("invalid setting {setting} = {value}: expected {expected}")]
    InvalidSetting {
        /// The name of the setting, as in [`SamplerConfig`](crate::SamplerConfig).
        setting: &'static str,
        /// The rejected value.
        value: String,
        /// What the setting accepts.
        expected: &'static str,
    },
    /// A custom stage order is not a permutation of all the stages.
    #[error("invalid stage order: {reason}")]
    InvalidStageOrder {
        /// What is wrong with it.
        reason: String,
    },
    /// A token id does not index the logits.
    #[error("token {token} in {origin} is out of range for {width} logits")]
    TokenOutOfRange {
        /// The token id.
        token: u32,
        /// The width of the logits.
        width: usize,
        /// Where the id came from.
        origin: TokenOrigin,
    },
    /// Probabilities that cannot be drawn from or compared.
    #[error("invalid probabilities ({what}): {reason}")]
    InvalidProbabilities {
        /// Which distribution (e.g. `"target row 2"`).
        what: String,
        /// What is wrong with it.
        reason: String,
    },
    /// The all-zero state, the one state xoshiro256** cannot leave.
    #[error("the all-zero state is not a valid xoshiro256** state")]
    ZeroRngState,
}
