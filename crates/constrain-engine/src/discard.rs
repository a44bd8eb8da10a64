//! Freeing large half-built structures off the caller's thread.
//!
//! A compilation that runs out of its time budget may hold a grammar with millions of nodes;
//! freeing it takes long enough to push its error well past the budget. Such values are freed
//! on a thread of their own instead, and whoever measures (a benchmark between schemas) can
//! wait for those threads so that one schema's freeing does not slow the next one's compiling.

use std::sync::Mutex;
use std::thread::JoinHandle;

/// The threads freeing what [`free_in_background`] was given.
static FREEING: Mutex<Vec<JoinHandle<()>>> = Mutex::new(Vec::new());

/// Frees `value` on a thread of its own (here, should no thread start).
pub fn free_in_background<T: Send + 'static>(value: T) {
    if let Ok(freeing) = std::thread::Builder::new()
        .name("free".into())
        .spawn(move || drop(value))
    {
        let mut pending = FREEING.lock().unwrap_or_else(|e| e.into_inner());
        pending.retain(|t| !t.is_finished());
        pending.push(freeing);
    }
}

/// Returns once every value given to [`free_in_background`] so far is freed.
pub fn wait_for_background_frees() {
    let pending = std::mem::take(&mut *FREEING.lock().unwrap_or_else(|e| e.into_inner()));
    for freeing in pending {
        // A panic while freeing has nothing left to report.
        let _ = freeing.join();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Tells, when dropped, which thread dropped it.
    struct Witness(std::sync::mpsc::Sender<std::thread::ThreadId>);

    impl Drop for Witness {
        fn drop(&mut self) {
            let _ = self.0.send(std::thread::current().id());
        }
    }

    #[test]
    fn values_are_freed_elsewhere_before_the_wait_returns() {
        let (tx, rx) = std::sync::mpsc::channel();
        free_in_background(Witness(tx));
        wait_for_background_frees();
        let freed_by = rx.try_recv().expect("freed before the wait returns");
        assert_ne!(freed_by, std::thread::current().id());
    }
}
