//! The grammar core: rules over byte-level regular expressions, and their lowering.

mod builder;
mod expr;
mod graph;
mod hir_identity;
mod hir_size;
mod lower;

pub use builder::{Grammar, GrammarBuilder};
pub use expr::{Expr, RuleId, Unordered, UnorderedMember};
pub(crate) use graph::{any_bit_in, Terminal};
pub use graph::{GraphState, RegexGraph, MAX_EDGE_BOUND, MAX_EDGE_BOUND_WORK};
pub(crate) use hir_identity::{fingerprint, same_hir};
pub(crate) use lower::{lower, Cfg, Family, Sym};
