//! What a [`Step`](super::Step) follows: nothing, a grammar, or a grammar after a trigger.

use constrain_engine::{MatchError, Matcher};

use crate::triggered::TriggeredMatcher;

/// The constraint of one sequence, in its current state.
#[derive(Clone, Debug)]
pub enum StepConstraint {
    /// Free text: every token allowed.
    None,
    /// A grammar from the first token.
    Grammar(Matcher),
    /// Free text until a trigger, then a grammar.
    Triggered(TriggeredMatcher),
}

impl StepConstraint {
    /// Words of its masks (0 without a grammar).
    pub(crate) fn mask_words(&self) -> usize {
        match self {
            StepConstraint::None => 0,
            StepConstraint::Grammar(m) => m.grammar().mask_words(),
            StepConstraint::Triggered(t) => t.mask_words(),
        }
    }

    /// Bounds the whole output to `max_tokens` tokens, which the grammar then completes within.
    pub(crate) fn set_token_budget(&mut self, max_tokens: Option<usize>) -> Result<(), MatchError> {
        match self {
            StepConstraint::None => Ok(()),
            StepConstraint::Grammar(m) => m.set_token_budget(max_tokens),
            StepConstraint::Triggered(t) => t.set_token_budget(max_tokens),
        }
    }

    /// Whether nothing but the end can follow.
    pub fn is_finished(&self) -> bool {
        match self {
            StepConstraint::None => false,
            StepConstraint::Grammar(m) => m.is_finished(),
            StepConstraint::Triggered(t) => t.is_finished(),
        }
    }

    /// Whether a grammar's token budget is spent (the budget then ended its output complete).
    pub(crate) fn budget_spent(&self) -> bool {
        match self {
            StepConstraint::Grammar(m) => m.tokens_left() == Some(0),
            StepConstraint::None | StepConstraint::Triggered(_) => false,
        }
    }

    pub(crate) fn forced_tokens(&mut self) -> Result<Vec<u32>, MatchError> {
        match self {
            StepConstraint::None => Ok(Vec::new()),
            StepConstraint::Grammar(m) => m.forced_tokens(),
            StepConstraint::Triggered(t) => t.forced_tokens(),
        }
    }

    pub(crate) fn accept_token(&mut self, token: u32) -> Result<(), MatchError> {
        match self {
            StepConstraint::None => Ok(()),
            StepConstraint::Grammar(m) => m.accept_token(token),
            StepConstraint::Triggered(t) => t.accept_token(token),
        }
    }

    /// Fills `mask`; false when every token is allowed (no mask needed).
    pub(crate) fn fill_mask(&mut self, mask: &mut [u32]) -> Result<bool, MatchError> {
        match self {
            StepConstraint::None => Ok(false),
            StepConstraint::Grammar(m) => m.fill_mask(mask).map(|()| true),
            StepConstraint::Triggered(t) => t.fill_mask(mask).map(|()| true),
        }
    }

    /// Whether no grammar governs the output from here: no constraint, or free text before
    /// the trigger.
    pub fn is_free_text(&self) -> bool {
        match self {
            StepConstraint::None => true,
            StepConstraint::Grammar(_) => false,
            StepConstraint::Triggered(t) => !t.is_triggered(),
        }
    }

    /// Whether the constrained output is complete here (a grammar that accepts; a trigger
    /// that appeared and whose grammar accepts). Free text never is.
    pub fn is_complete(&self) -> bool {
        match self {
            StepConstraint::None => false,
            StepConstraint::Grammar(m) => m.is_accepting(),
            StepConstraint::Triggered(t) => t.is_triggered() && t.is_accepting(),
        }
    }

    /// Where the trigger starts in the output, once it appeared.
    pub fn trigger_start(&self) -> Option<usize> {
        match self {
            StepConstraint::Triggered(t) => t.trigger_start(),
            _ => None,
        }
    }

    /// The matcher of the grammar in force: the grammar's, or a triggered one's once its
    /// trigger appeared.
    fn active_matcher(&self) -> Option<&Matcher> {
        match self {
            StepConstraint::None => None,
            StepConstraint::Grammar(m) => Some(m),
            StepConstraint::Triggered(t) => t.matcher(),
        }
    }

    /// Tokens the budget leaves the grammar in force, if it has one.
    pub(crate) fn tokens_left(&self) -> Option<usize> {
        self.active_matcher().and_then(Matcher::tokens_left)
    }

    /// Whether the budget narrowed the mask of the current step.
    pub(crate) fn budget_narrowed_now(&self) -> bool {
        self.active_matcher()
            .is_some_and(Matcher::budget_narrowed_now)
    }

    /// The grammar's matcher, when the constraint is a grammar.
    pub fn matcher(&self) -> Option<&Matcher> {
        match self {
            StepConstraint::Grammar(m) => Some(m),
            _ => None,
        }
    }
}
