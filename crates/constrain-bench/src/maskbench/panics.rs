//! Turning a panic inside one benchmark item into a reported `crash`, so that one bad schema
//! never ends a long run, and keeping the panic message for the report instead of letting the
//! default hook print over the progress display.

use std::cell::{Cell, RefCell};
use std::panic::{self, AssertUnwindSafe};
use std::sync::Once;

thread_local! {
    static CATCHING: Cell<bool> = const { Cell::new(false) };
    static LAST_PANIC: RefCell<Option<String>> = const { RefCell::new(None) };
}

static INSTALL_HOOK: Once = Once::new();

/// Runs `f`; a panic becomes `Err(message with location)`.
///
/// Panics in code that is not running under `catch` still go to the previous hook.
pub fn catch<T>(f: impl FnOnce() -> T) -> Result<T, String> {
    INSTALL_HOOK.call_once(|| {
        let previous = panic::take_hook();
        panic::set_hook(Box::new(move |info| {
            if CATCHING.with(Cell::get) {
                LAST_PANIC.with(|last| *last.borrow_mut() = Some(info.to_string()));
            } else {
                previous(info);
            }
        }));
    });
    let was_catching = CATCHING.with(|c| c.replace(true));
    let result = panic::catch_unwind(AssertUnwindSafe(f));
    CATCHING.with(|c| c.set(was_catching));
    result.map_err(|payload| {
        LAST_PANIC
            .with(|last| last.borrow_mut().take())
            .unwrap_or_else(|| {
                payload
                    .downcast_ref::<&str>()
                    .map(|s| s.to_string())
                    .or_else(|| payload.downcast_ref::<String>().cloned())
                    .unwrap_or_else(|| "panic with a non-text payload".to_string())
            })
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_panic_becomes_its_message() {
        let err = catch(|| -> u32 { panic!("schema {} broke", 7) }).unwrap_err();
        assert!(err.contains("schema 7 broke"), "{err}");
        assert_eq!(catch(|| 5), Ok(5));
    }
}
