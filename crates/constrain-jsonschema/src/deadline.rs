//! The compile-time budget ([`Options::max_compile_time`](crate::Options::max_compile_time)).
//!
//! Automaton constructions deep inside the compiler check it without every caller passing it
//! down: the deadline of the compilation running on this thread lives in a thread-local,
//! installed for the duration of [`crate::compile`] by a guard.

use std::cell::Cell;
use std::time::{Duration, Instant};

thread_local! {
    static DEADLINE: Cell<Option<(Instant, Duration)>> = const { Cell::new(None) };
}

/// Installs a deadline for the compilation on this thread; restores the previous one on drop.
pub(crate) struct Guard {
    previous: Option<(Instant, Duration)>,
}

impl Guard {
    pub(crate) fn install(limit: Option<Duration>) -> Guard {
        let deadline = limit.map(|l| (Instant::now() + l, l));
        Guard {
            previous: DEADLINE.with(|d| d.replace(deadline)),
        }
    }
}

impl Drop for Guard {
    fn drop(&mut self) {
        DEADLINE.with(|d| d.set(self.previous));
    }
}

/// The budget in milliseconds when the compilation on this thread is past its deadline.
pub(crate) fn expired() -> Option<usize> {
    DEADLINE.with(|d| d.get()).and_then(|(at, limit)| {
        (Instant::now() >= at).then(|| usize::try_from(limit.as_millis()).unwrap_or(usize::MAX))
    })
}

/// What a budget error calls the deadline (the engine's name for its own).
pub(crate) const WHAT: &str = constrain_engine::COMPILE_TIME;

/// The error for a compilation past its deadline, at `pointer`; `Ok` while there is time.
pub(crate) fn check(pointer: &str) -> Result<(), crate::SchemaError> {
    match expired() {
        Some(limit) => Err(crate::SchemaError::TooComplex {
            pointer: crate::ctx::pointer_or_root(pointer),
            what: WHAT.into(),
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
}
