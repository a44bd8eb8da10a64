//! Compiled grammars kept by the constraint's key, for callers that see the same constraints
//! again (a server's requests, a Python compiler object).

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use constrain_engine::TokenIndex;

use crate::constraint::{Compilation, CompileOptions, Constraint, Error};

/// What the cache holds for one constraint: its compilation, or why it failed (a constraint
/// that ran out of compile time is not tried again).
pub type Cached = Result<Arc<Compilation>, Arc<Error>>;

/// Compiles constraints for one vocabulary with one set of [`CompileOptions`], each once: a
/// bounded cache keyed by [`Constraint::key`], the least recently used dropped first.
///
/// Compiling happens in the calling thread, outside the cache's lock, so a slow constraint
/// never holds up lookups of others.
pub struct GrammarCache {
    index: Arc<TokenIndex>,
    options: CompileOptions,
    capacity: usize,
    entries: Mutex<HashMap<String, Entry>>,
    clock: AtomicU64,
}

struct Entry {
    result: Cached,
    used: u64,
}

impl GrammarCache {
    /// A cache of at most `capacity` (at least one) compilations with `options`.
    pub fn new(index: Arc<TokenIndex>, options: CompileOptions, capacity: usize) -> GrammarCache {
        GrammarCache {
            index,
            options,
            capacity: capacity.max(1),
            entries: Mutex::new(HashMap::new()),
            clock: AtomicU64::new(0),
        }
    }

    /// The options every compilation of this cache uses.
    pub fn options(&self) -> &CompileOptions {
        &self.options
    }

    /// The token index grammars are compiled for.
    pub fn token_index(&self) -> &Arc<TokenIndex> {
        &self.index
    }

    /// The compilation of `constraint`, and whether it came from the cache. Compiles on a
    /// miss (slow: a server calls it off its async threads).
    pub fn get(&self, constraint: &Constraint) -> (Cached, bool) {
        let key = constraint.key();
        let tick = self.clock.fetch_add(1, Ordering::Relaxed);
        if let Some(entry) = self.entries().get_mut(&key) {
            entry.used = tick;
            return (entry.result.clone(), true);
        }
        let result = constraint
            .compile_for(self.index.clone(), &self.options)
            .map(Arc::new)
            .map_err(Arc::new);
        let mut entries = self.entries();
        if entries.len() >= self.capacity && !entries.contains_key(&key) {
            if let Some(oldest) = entries
                .iter()
                .min_by_key(|(_, e)| e.used)
                .map(|(k, _)| k.clone())
            {
                entries.remove(&oldest);
            }
        }
        entries.insert(
            key,
            Entry {
                result: result.clone(),
                used: tick,
            },
        );
        (result, false)
    }

    /// Compilations in the cache.
    pub fn len(&self) -> usize {
        self.entries().len()
    }

    /// Whether the cache is empty.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The entries; a panic elsewhere while the lock was held leaves them usable.
    fn entries(&self) -> MutexGuard<'_, HashMap<String, Entry>> {
        self.entries.lock().unwrap_or_else(|e| e.into_inner())
    }
}
