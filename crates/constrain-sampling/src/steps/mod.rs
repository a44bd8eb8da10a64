//! The steps of the funnel, each a function over a logits slice.
//!
//! Position `i` of the slice is token `i`. A token that is impossible has the logit -inf; no
//! step ever turns -inf back into a finite value, so a token the grammar masked stays masked
//! through every later step. Cutoffs mark what they drop with -inf and leave the survivors'
//! logits untouched, so the steps compose in any order and the final [`softmax`] renormalizes.
//!
//! The steps expect logits without NaN or +inf; [`check_logits`] tests that, and
//! [`Funnel`](crate::Funnel) calls it before any step.

mod cutoff;
mod mask;
mod penalty;
mod softmax;
mod temperature;

pub use cutoff::{apply_min_p, apply_top_k, apply_top_p, apply_typical_p, CutoffScratch};
pub(crate) use cutoff::{argmax_kept, min_p_kept, retain, top_k_kept, top_p_kept, typical_p_kept};
pub use mask::{apply_grammar_mask, count_allowed};
pub use penalty::{apply_frequency_presence_penalty, apply_logit_bias, apply_repetition_penalty};
pub(crate) use penalty::{check_in_range, frequency_presence_penalized, repetition_penalized};
pub use softmax::{check_logits, draw, softmax};
pub(crate) use softmax::{checked_max, draw_valid};
pub use temperature::apply_temperature;
pub(crate) use temperature::is_greedy;
