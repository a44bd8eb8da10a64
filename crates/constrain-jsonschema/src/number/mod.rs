//! Numbers: exact decimals and the regular expressions of number ranges.

mod decimal;
mod range;

pub(crate) use decimal::{compare, Decimal};
pub(crate) use range::{number_re, Bound, Kind};
