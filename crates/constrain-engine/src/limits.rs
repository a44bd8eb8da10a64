//! Budgets that keep compilation and matching bounded in time and memory.

use std::time::{Duration, Instant};

use crate::error::{Budget, GrammarError, MatchError};

/// Nesting limit for parsed regular expressions.
pub(crate) const REGEX_NEST_LIMIT: u32 = 250;

/// Budgets of a constraint, from its source text to the automaton built as outputs reach it.
/// Exceeding one is an error, never a hang or an abort.
///
/// The one budget type of every entry point: the library (`constrain::Constraint::compile_with`),
/// the CLI and the server (`--limit NAME=VALUE`, parsed by [`Limits::set`]) and the Python
/// package (keyword arguments of the same names). `docs/limits.md` tables the defaults.
/// Beside them, two depths are fixed: regular expressions nest at most
/// [`REGEX_NEST_LIMIT`](Limits::REGEX_NEST_LIMIT) levels and GBNF groups 64.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Limits {
    /// Bytes of a constraint's source text: a schema's JSON, a regular expression, a GBNF
    /// grammar. Checked before it is parsed, so that an oversized input costs nothing.
    pub max_source_bytes: usize,
    /// Nesting depth of a JSON Schema document (arrays and objects inside each other): a
    /// schema given as a value rather than text would otherwise reach the compiler's recursion
    /// unchecked. The default is `serde_json`'s own recursion limit when it parses text.
    pub max_schema_depth: u32,
    /// Heap bytes one terminal's NFA may use.
    pub max_terminal_nfa_bytes: usize,
    /// Heap bytes of all terminal NFAs together.
    pub max_total_nfa_bytes: usize,
    /// Size (rough NFA states) up to which a regular expression is inlined into one terminal;
    /// larger ones stay rules, so nested counted repetitions cannot blow up one automaton.
    pub max_inline_size: usize,
    /// Lexer automaton states (sets of NFA states) built lazily over the grammar's lifetime.
    pub max_lexer_states: usize,
    /// Parser rows (interned Earley sets) built lazily over the grammar's lifetime.
    pub max_rows: usize,
    /// Earley items in one row.
    pub max_items_per_row: usize,
    /// Matcher states (lexer and parser configurations) built lazily.
    pub max_states: usize,
    /// Bytes of cached token masks kept; older masks are dropped beyond it.
    pub mask_cache_bytes: usize,
    /// Rules and expression nodes of the lowered grammar (twice that once unordered items,
    /// [`Expr::Unordered`](crate::Expr::Unordered), are expanded as inputs reach them).
    pub max_grammar_size: usize,
    /// Wall-clock budget of a whole compilation, front-end (schema compiler, parser) and
    /// [`CompiledGrammar::new`](crate::CompiledGrammar::new) together; `None` for no limit.
    pub max_compile_time: Option<Duration>,
    /// Time the front-end already spent of `max_compile_time` ([`Limits::after`] adds to it):
    /// `CompiledGrammar::new` gets the rest, and an error still names the whole budget.
    pub compile_time_spent: Duration,
}

impl Default for Limits {
    fn default() -> Limits {
        Limits {
            max_source_bytes: 4 << 20,
            max_schema_depth: 128,
            max_terminal_nfa_bytes: 64 << 20,
            max_total_nfa_bytes: 512 << 20,
            max_inline_size: 80_000,
            max_lexer_states: 200_000,
            max_rows: 500_000,
            max_items_per_row: 100_000,
            max_states: 2_000_000,
            mask_cache_bytes: 512 << 20,
            max_grammar_size: 2_000_000,
            max_compile_time: Some(Duration::from_secs(60)),
            compile_time_spent: Duration::ZERO,
        }
    }
}

impl Limits {
    /// How deep a regular expression may nest (groups, repetitions, alternations): fixed,
    /// since the parser recurses that deep.
    pub const REGEX_NEST_LIMIT: u32 = REGEX_NEST_LIMIT;

    /// Every budget by name, with what it bounds: the names [`Limits::set`] takes.
    pub const NAMES: &'static [(&'static str, &'static str)] = &[
        (
            "max_source_bytes",
            "bytes of a schema, pattern or grammar text",
        ),
        (
            "max_schema_depth",
            "nesting depth of a JSON Schema document",
        ),
        (
            "max_compile_time",
            "seconds one compilation may take (0 or none: no limit)",
        ),
        ("max_terminal_nfa_bytes", "heap bytes of one terminal's NFA"),
        ("max_total_nfa_bytes", "heap bytes of all terminal NFAs"),
        (
            "max_inline_size",
            "NFA states up to which a regular expression is one terminal",
        ),
        (
            "max_lexer_states",
            "lexer automaton states built over the grammar's life",
        ),
        ("max_rows", "parser rows built over the grammar's life"),
        ("max_items_per_row", "Earley items in one parser row"),
        ("max_states", "matcher states built over the grammar's life"),
        ("mask_cache_bytes", "bytes of token masks kept"),
        (
            "max_grammar_size",
            "rules and expression nodes of the lowered grammar",
        ),
    ];

    /// Sets the budget `name` (one of [`Limits::NAMES`]) from its text: a count, or for
    /// `max_compile_time` seconds (`0` or `none` for no limit).
    ///
    /// ```
    /// let mut limits = constrain_engine::Limits::default();
    /// limits.set("max_states", "5000")?;
    /// limits.set("max_compile_time", "2.5")?;
    /// assert_eq!(limits.max_states, 5000);
    /// assert!(limits.set("max_sates", "1").unwrap_err().contains("max_states"));
    /// # Ok::<(), String>(())
    /// ```
    pub fn set(&mut self, name: &str, value: &str) -> Result<(), String> {
        let value = value.trim();
        let count = || -> Result<usize, String> {
            value
                .replace('_', "")
                .parse::<usize>()
                .map_err(|_| format!("limit {name}={value}: expected a whole number"))
        };
        match name {
            "max_compile_time" => {
                self.max_compile_time = if value == "none" {
                    None
                } else {
                    let seconds: f64 = value
                        .parse()
                        .map_err(|_| format!("limit {name}={value}: expected seconds, or none"))?;
                    let d = Duration::try_from_secs_f64(seconds).map_err(|_| {
                        format!("limit {name}={value}: expected seconds >= 0, or none")
                    })?;
                    (!d.is_zero()).then_some(d)
                }
            }
            "max_schema_depth" => {
                self.max_schema_depth = u32::try_from(count()?)
                    .map_err(|_| format!("limit {name}={value}: at most {}", u32::MAX))?
            }
            "max_source_bytes" => self.max_source_bytes = count()?,
            "max_terminal_nfa_bytes" => self.max_terminal_nfa_bytes = count()?,
            "max_total_nfa_bytes" => self.max_total_nfa_bytes = count()?,
            "max_inline_size" => self.max_inline_size = count()?,
            "max_lexer_states" => self.max_lexer_states = count()?,
            "max_rows" => self.max_rows = count()?,
            "max_items_per_row" => self.max_items_per_row = count()?,
            "max_states" => self.max_states = count()?,
            "mask_cache_bytes" => self.mask_cache_bytes = count()?,
            "max_grammar_size" => self.max_grammar_size = count()?,
            _ => {
                let names: Vec<&str> = Limits::NAMES.iter().map(|(n, _)| *n).collect();
                return Err(format!(
                    "unknown limit {name:?}; the limits are: {}",
                    names.join(", ")
                ));
            }
        }
        Ok(())
    }

    /// Sets a budget from `NAME=VALUE` (the CLI's `--limit`), as [`Limits::set`].
    pub fn set_pair(&mut self, pair: &str) -> Result<(), String> {
        let (name, value) = pair
            .split_once('=')
            .ok_or_else(|| format!("limit {pair:?}: expected NAME=VALUE"))?;
        self.set(name.trim(), value)
    }

    /// An error when a source text of `len` bytes is over [`Limits::max_source_bytes`].
    pub fn check_source_len(&self, len: usize) -> Result<(), GrammarError> {
        if len > self.max_source_bytes {
            return Err(GrammarError::LimitExceeded {
                budget: Budget::SourceBytes,
                limit: self.max_source_bytes,
            });
        }
        Ok(())
    }

    /// These limits for the second stage of a compilation whose first stage (parsing, the
    /// schema compiler) already took `spent` of the compile-time budget.
    pub fn after(&self, spent: Duration) -> Limits {
        Limits {
            compile_time_spent: self.compile_time_spent.saturating_add(spent),
            ..self.clone()
        }
    }
}

/// When a compilation started and when it must give up.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Deadline {
    at: Option<Instant>,
    limit: Duration,
}

impl Deadline {
    pub(crate) fn after(limit: Option<Duration>) -> Deadline {
        Deadline {
            // A budget too large for the clock (`Duration::MAX`) is no budget, not a panic.
            at: limit.and_then(|l| Instant::now().checked_add(l)),
            limit: limit.unwrap_or(Duration::MAX),
        }
    }

    /// The deadline of `limits`' compile-time budget, less what an earlier stage spent (then
    /// at least a millisecond is left, so that a stage which used it all still starts);
    /// errors name the whole budget.
    pub(crate) fn of(limits: &Limits) -> Deadline {
        let spent = limits.compile_time_spent;
        let left = limits.max_compile_time.map(|b| {
            if spent.is_zero() {
                b
            } else {
                b.saturating_sub(spent).max(Duration::from_millis(1))
            }
        });
        Deadline {
            limit: limits.max_compile_time.unwrap_or(Duration::MAX),
            ..Deadline::after(left)
        }
    }

    /// An error once the deadline has passed, for the lazily built parts.
    pub(crate) fn check_match(&self) -> Result<(), MatchError> {
        self.check().map_err(|_| MatchError::LimitExceeded {
            budget: Budget::CompileTime,
            limit: usize::try_from(self.limit.as_millis()).unwrap_or(usize::MAX),
        })
    }

    /// An error once the deadline has passed.
    pub(crate) fn check(&self) -> Result<(), GrammarError> {
        match self.at {
            Some(at) if Instant::now() >= at => Err(GrammarError::LimitExceeded {
                budget: Budget::CompileTime,
                limit: usize::try_from(self.limit.as_millis()).unwrap_or(usize::MAX),
            }),
            _ => Ok(()),
        }
    }
}
