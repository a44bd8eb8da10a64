//! Measuring one schema: compile it, then feed every test instance token by token, timing each
//! mask (see the MaskBench protocol in the crate's documentation of `bench maskbench`).

use std::sync::Arc;
use std::time::{Duration, Instant};

use constrain_engine::{Budget, CompiledGrammar, GrammarError, Limits, Matcher, TokenIndex};
use constrain_vocab::Tokenizer;

use super::dataset::SchemaFile;
use super::report::{SchemaRecord, Status};

/// Everything shared by the schemas of one run.
pub struct Bench {
    index: Arc<TokenIndex>,
    tokenizer: Tokenizer,
    eos: Vec<u32>,
    limits: Limits,
    options: constrain_jsonschema::Options,
    /// Compile-time budget of one schema, shared by the schema compiler and the engine.
    compile_budget: Duration,
}

/// One schema's record plus its raw timing samples (nanoseconds) for the summary.
pub struct SchemaRun {
    /// The line for `PREFIX.jsonl`.
    pub record: SchemaRecord,
    /// Time to first mask, when the schema compiled.
    pub ttfm_ns: Option<u64>,
    /// One sample per token fed.
    pub tbm_ns: Vec<u64>,
}

/// How one instance ended.
enum Outcome {
    /// Every token was in its mask and end-of-sequence was allowed after the last.
    Accepted,
    /// A token was not in its mask, or end-of-sequence was refused; says which.
    Rejected { reason: String, at_eos: bool },
    /// The engine returned an error.
    EngineError(String),
}

impl Bench {
    /// Prepares a run over `tokenizer`'s vocabulary (the token index is built here, untimed)
    /// that compiles every schema with `options`, within `compile_budget`.
    pub fn new(
        tokenizer: Tokenizer,
        compile_budget: Duration,
        options: constrain_jsonschema::Options,
    ) -> anyhow::Result<Bench> {
        let vocab = tokenizer.vocabulary().clone();
        let eos = vocab.eos_tokens().to_vec();
        anyhow::ensure!(
            !eos.is_empty(),
            "the tokenizer has no end-of-sequence token"
        );
        Ok(Bench {
            index: TokenIndex::new(vocab),
            tokenizer,
            eos,
            limits: Limits::default(),
            options,
            compile_budget,
        })
    }

    /// Compiles the schema and computes the first mask: the part timed as TTFM. The schema's
    /// grammar is left in `source` for the caller to free once the time is taken: the mask
    /// does not wait for it, and freeing a large grammar takes a while.
    fn compile(
        &self,
        schema: &serde_json::Value,
        source: &mut Option<constrain_jsonschema::Compiled>,
    ) -> Result<(Matcher, Vec<u32>), String> {
        let start = Instant::now();
        let compiled = source.insert(
            constrain_jsonschema::compile_with_limits(
                schema,
                &self.options,
                &Limits {
                    max_compile_time: Some(self.compile_budget),
                    ..self.limits.clone()
                },
            )
            .map_err(|e| e.to_string())?,
        );
        let limits = Limits {
            max_compile_time: Some(self.compile_budget.saturating_sub(start.elapsed())),
            ..self.limits.clone()
        };
        let grammar = CompiledGrammar::new(&compiled.grammar, self.index.clone(), limits).map_err(
            |e| match e {
                GrammarError::LimitExceeded {
                    budget: Budget::CompileTime,
                    ..
                } => format!(
                    "compile time exceeds the budget of {} ms",
                    self.compile_budget.as_millis()
                ),
                other => other.to_string(),
            },
        )?;
        let mut mask = vec![0u32; grammar.mask_words()];
        let mut matcher = Matcher::new(grammar);
        matcher
            .fill_mask(&mut mask)
            .map_err(|e| format!("first mask: {e}"))?;
        Ok((matcher, mask))
    }

    /// Runs one schema file; never panics (a panic becomes a `crash` record).
    pub fn run(&self, file: &SchemaFile) -> SchemaRun {
        match super::panics::catch(|| self.run_unguarded(file)) {
            Ok(run) => run,
            Err(panic) => SchemaRun {
                record: SchemaRecord::empty(&file.id, Status::Crash, file.tests.len(), Some(panic)),
                ttfm_ns: None,
                tbm_ns: Vec::new(),
            },
        }
    }

    fn run_unguarded(&self, file: &SchemaFile) -> SchemaRun {
        let mut record = SchemaRecord::empty(&file.id, Status::Pass, file.tests.len(), None);
        let start = Instant::now();
        let mut source = None;
        let compiled = self.compile(&file.schema, &mut source);
        let ttfm_ns = elapsed_ns(start);
        drop(source);
        // What a failed compilation left is freed before the next schema's clock starts.
        constrain_engine::wait_for_background_frees();
        record.ttfm_us = ttfm_ns as f64 / 1000.0;
        let (initial, mut mask) = match compiled {
            Ok(compiled) => compiled,
            Err(message) => {
                record.status = Status::CompileError.to_string();
                record.error = Some(message);
                return SchemaRun {
                    record,
                    ttfm_ns: None,
                    tbm_ns: Vec::new(),
                };
            }
        };

        let mut tbm_ns = Vec::new();
        let mut problems = Problems::default();
        for (i, test) in file.tests.iter().enumerate() {
            let text = test.data.to_python();
            let tokens = match self.tokenizer.encode(&text) {
                Ok(tokens) => tokens,
                Err(err) => {
                    problems.note(
                        Status::LoadError,
                        format!("test #{i}: cannot tokenize: {err}"),
                    );
                    continue;
                }
            };
            let first_sample = tbm_ns.len();
            let outcome = self.feed(initial.clone(), &tokens, &mut mask, &mut tbm_ns);
            record.tokens += (tbm_ns.len() - first_sample) as u64;
            match outcome {
                Outcome::Accepted if !test.valid => {
                    record.n_invalid_accepted += 1;
                    problems.note(
                        Status::InvalidationError,
                        format!("test #{i}: should reject but didn't"),
                    );
                }
                Outcome::Rejected { reason, at_eos } => {
                    record.n_eos_rejected += usize::from(at_eos);
                    if test.valid {
                        record.n_valid_rejected += 1;
                        problems.note(
                            Status::ValidationError,
                            format!("test #{i}: should accept but didn't: {reason}"),
                        );
                    }
                }
                Outcome::EngineError(message) => {
                    problems.note(Status::RuntimeError, format!("test #{i}: {message}"))
                }
                Outcome::Accepted => {}
            }
        }
        let samples = &tbm_ns;
        record.mask_us_total = samples.iter().map(|&ns| ns as f64 / 1000.0).sum();
        record.max_mask_us = samples.iter().max().map_or(0.0, |&ns| ns as f64 / 1000.0);
        if let Some((status, message)) = problems.worst() {
            record.status = status.to_string();
            record.error = Some(message);
        }
        SchemaRun {
            record,
            ttfm_ns: Some(ttfm_ns),
            tbm_ns,
        }
    }

    /// Feeds `tokens` to `matcher`, one timed sample per token: mask, check, advance.
    fn feed(
        &self,
        mut matcher: Matcher,
        tokens: &[u32],
        mask: &mut [u32],
        samples: &mut Vec<u64>,
    ) -> Outcome {
        let n = tokens.len();
        for (k, &token) in tokens.iter().enumerate() {
            let start = Instant::now();
            let step = matcher.fill_mask(mask).and_then(|()| {
                let allowed = is_set(mask, token);
                if allowed {
                    matcher.accept_token(token)?;
                }
                Ok(allowed)
            });
            samples.push(elapsed_ns(start));
            match step {
                Ok(true) => {}
                Ok(false) => {
                    return Outcome::Rejected {
                        reason: format!(
                            "token #{k}/{n} ({token}): token not in mask ({})",
                            self.excerpt(&tokens[..k], token)
                        ),
                        at_eos: false,
                    }
                }
                Err(err) => {
                    return Outcome::EngineError(format!("token #{k}/{n} ({token}): {err}"))
                }
            }
        }
        if let Err(err) = matcher.fill_mask(mask) {
            return Outcome::EngineError(format!("end of sequence after {n} tokens: {err}"));
        }
        if self.eos.iter().any(|&eos| is_set(mask, eos)) {
            Outcome::Accepted
        } else {
            Outcome::Rejected {
                reason: format!("end of sequence not allowed after {n} tokens"),
                at_eos: true,
            }
        }
    }
}

impl Bench {
    /// The text just before a rejected token and the token itself, for the error message:
    /// `after "…, \"name\": " comes "\"x"`.
    fn excerpt(&self, before: &[u32], token: u32) -> String {
        const CONTEXT_CHARS: usize = 40;
        let before = String::from_utf8_lossy(&self.tokenizer.decode_bytes(before)).into_owned();
        let skip = before.chars().count().saturating_sub(CONTEXT_CHARS);
        let before: String = before.chars().skip(skip).collect();
        let token = String::from_utf8_lossy(&self.tokenizer.decode_bytes(&[token])).into_owned();
        format!("after {before:?} comes {token:?}")
    }
}

/// The first message of each kind of problem met in one schema's instances.
#[derive(Default)]
struct Problems {
    first: Vec<(Status, String)>,
}

impl Problems {
    fn note(&mut self, status: Status, message: String) {
        if !self.first.iter().any(|(s, _)| *s == status) {
            self.first.push((status, message));
        }
    }

    /// The status that describes the schema: a soundness bug outranks an engine error, which
    /// outranks over-constraining.
    fn worst(self) -> Option<(Status, String)> {
        let rank = |s: Status| match s {
            Status::InvalidationError => 0,
            Status::LoadError => 1,
            Status::RuntimeError => 2,
            _ => 3,
        };
        self.first.into_iter().min_by_key(|(s, _)| rank(*s))
    }
}

impl SchemaRecord {
    /// A record with no measurements yet.
    fn empty(id: &str, status: Status, n_tests: usize, error: Option<String>) -> SchemaRecord {
        SchemaRecord {
            id: id.to_string(),
            status: status.to_string(),
            ttfm_us: 0.0,
            tokens: 0,
            mask_us_total: 0.0,
            max_mask_us: 0.0,
            error,
            n_tests,
            n_valid_rejected: 0,
            n_invalid_accepted: 0,
            n_eos_rejected: 0,
        }
    }
}

fn is_set(mask: &[u32], token: u32) -> bool {
    mask.get(token as usize / 32)
        .is_some_and(|word| word & (1 << (token % 32)) != 0)
}

fn elapsed_ns(start: Instant) -> u64 {
    u64::try_from(start.elapsed().as_nanos()).unwrap_or(u64::MAX)
}

impl SchemaRun {
    /// The record of a data file that could not be read.
    pub fn load_error(id: &str, message: String) -> SchemaRun {
        SchemaRun {
            record: SchemaRecord::empty(id, Status::LoadError, 0, Some(message)),
            ttfm_ns: None,
            tbm_ns: Vec::new(),
        }
    }
}
