//! Checks beside the automaton: constraints on the text that no context-free grammar states
//! (the elements of a JSON array all different), run on the text a matcher accepts and
//! consulted for every token the automaton allows.
//!
//! A grammar carries at most one [`TextCheck`]; [`CompiledGrammar::new`] binds it to the
//! token index once ([`TextCheck::bind`]), and every [`Matcher`] keeps a [`CheckState`] of its
//! own. The automaton's masks stay cached per state; the check only clears bits from a copy.
//!
//! [`CompiledGrammar::new`]: crate::CompiledGrammar::new
//! [`Matcher`]: crate::Matcher

use std::sync::Arc;

use crate::TokenIndex;

/// A constraint on the text, checked as it is generated.
pub trait TextCheck: Send + Sync + std::fmt::Debug {
    /// The check for one token index (which tokens it must look at, found once).
    fn bind(&self, index: &Arc<TokenIndex>) -> Arc<dyn BoundTextCheck>;
}

/// A [`TextCheck`] bound to a token index.
pub trait BoundTextCheck: Send + Sync {
    /// The state at the start of the text.
    fn start(&self) -> Box<dyn CheckState>;
}

/// Where one sequence stands for a [`TextCheck`].
pub trait CheckState: Send + Sync {
    /// A copy (matchers are cloned to fork a sequence).
    fn boxed_clone(&self) -> Box<dyn CheckState>;

    /// Whether `bytes` may come next: they keep the constraint, and leave a way to keep it
    /// to the end wherever the grammar allows a way to go on.
    fn allows(&self, bytes: &[u8]) -> bool;

    /// Reads `bytes` as one step (after [`CheckState::allows`] said yes).
    fn accept(&mut self, bytes: &[u8]);

    /// Undoes the last `steps` steps.
    fn rollback(&mut self, steps: usize);

    /// Clears from `mask` (the automaton's, one bit per token id) the text tokens that
    /// [`CheckState::allows`] refuses.
    fn refine(&self, mask: &mut [u32]);
}
