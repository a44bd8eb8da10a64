//! The compile-time budget
//! ([`Limits::max_compile_time`](constrain_engine::Limits::max_compile_time)).
//!
//! Automaton constructions deep inside the compiler check it without every caller passing it
//! down: the deadline of the compilation running on this thread lives in a thread-local,
//! installed for the duration of [`crate::compile`] by a guard.

use std::cell::Cell;
use std::time::{Duration, Instant};

thread_local! {
    static DEADLINE: Cell<Option<(Instant, Duration)>> = const { Cell::new(None) };
    /// Calls of [`expired_sampled`] left before it reads the clock again; 0 once the deadline
    /// has passed, which it then keeps reporting.
    static UNTIL_SAMPLE: Cell<u32> = const { Cell::new(0) };
}

/// Calls of [`expired_sampled`] per reading of the clock: a reading costs about as much as
/// spelling one node of an expression, and a few hundred nodes take microseconds.
const SAMPLE_EVERY: u32 = 64;

/// Installs a deadline for the compilation on this thread; restores the previous one on drop.
pub(crate) struct Guard {
    previous: Option<(Instant, Duration)>,
}

impl Guard {
    pub(crate) fn install(limit: Option<Duration>) -> Guard {
        // A budget too large for the clock (`Duration::MAX`) is no budget, not a panic.
        let deadline = limit.and_then(|l| Some((Instant::now().checked_add(l)?, l)));
        UNTIL_SAMPLE.with(|n| n.set(0));
        Guard {
            previous: DEADLINE.with(|d| d.replace(deadline)),
        }
    }
}

impl Drop for Guard {
    fn drop(&mut self) {
        DEADLINE.with(|d| d.set(self.previous));
        UNTIL_SAMPLE.with(|n| n.set(0));
    }
}

/// The budget in milliseconds when the compilation on this thread is past its deadline.
pub(crate) fn expired() -> Option<usize> {
    DEADLINE.with(|d| d.get()).and_then(|(at, limit)| {
        (Instant::now() >= at).then(|| usize::try_from(limit.as_millis()).unwrap_or(usize::MAX))
    })
}

/// Whether the compilation on this thread is past its deadline, for loops that ask once per
/// node built: the clock is read at the first call and then once every [`SAMPLE_EVERY`]
/// calls, so a passed deadline is seen at most that many nodes late.
pub(crate) fn expired_sampled() -> bool {
    UNTIL_SAMPLE.with(|n| match n.get() {
        0 => {
            let late = expired().is_some();
            n.set(if late { 0 } else { SAMPLE_EVERY });
            late
        }
        left => {
            n.set(left - 1);
            false
        }
    })
}

/// The error for a compilation past its deadline, at `pointer`; `Ok` while there is time.
pub(crate) fn check(pointer: &str) -> Result<(), crate::SchemaError> {
    match expired() {
        Some(limit) => Err(crate::SchemaError::LimitExceeded {
            pointer: crate::error::pointer_or_root(pointer),
            budget: constrain_engine::Budget::CompileTime,
            limit,
        }),
        None => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_zero_budget_expires_and_the_guard_restores_the_outer_deadline() {
        assert_eq!(expired(), None);
        {
            let _outer = Guard::install(Some(Duration::from_secs(3600)));
            assert_eq!(expired(), None);
            {
                let _inner = Guard::install(Some(Duration::ZERO));
                assert_eq!(expired(), Some(0));
            }
            assert_eq!(expired(), None);
        }
        assert_eq!(expired(), None);
    }

    #[test]
    fn sampled_checks_see_a_new_deadline_at_once_and_keep_seeing_a_passed_one() {
        assert!(!expired_sampled());
        {
            let _late = Guard::install(Some(Duration::ZERO));
            assert!(
                expired_sampled(),
                "the first call after installing reads the clock"
            );
            for _ in 0..2 * SAMPLE_EVERY {
                assert!(expired_sampled());
            }
        }
        assert!(!expired_sampled(), "the outer (absent) deadline is back");
        let _long = Guard::install(Some(Duration::from_secs(3600)));
        for _ in 0..2 * SAMPLE_EVERY {
            assert!(!expired_sampled());
        }
    }
}
