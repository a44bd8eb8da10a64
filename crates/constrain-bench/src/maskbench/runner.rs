//! Measuring one schema: compile it, then feed every test instance token by token, timing each
//! mask (see the MaskBench protocol in the crate's documentation of `bench maskbench`).

use std::sync::Arc;
use std::time::{Duration, Instant};

use constrain_engine::{Budget, CompiledGrammar, GrammarError, Limits, Matcher, TokenIndex};
use constrain_vocab::Tokenizer;

use super::dataset::SchemaFile;
use super::report::{SchemaRecord, Status, TtfmPhases};

/// Everything shared by the schemas of one run.
pub struct Bench {
    index: Arc<TokenIndex>,
    tokenizer: Tokenizer,
    eos: Vec<u32>,
    limits: Limits,
    options: constrain_jsonschema::Options,
    /// Compile-time budget of one schema, shared by the schema compiler and the engine.
    compile_budget: Duration,
    /// Tokens over each instance's own count that its matcher's token budget allows; no
    /// budget when `None`.
    budget_slack: Option<usize>,
    /// Whether the budget always takes its exact walk (see
    /// `CompiledGrammar::set_budget_walk_only`).
    budget_walk_only: bool,
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
            budget_slack: None,
            budget_walk_only: false,
        })
    }

    /// Gives each instance's matcher a token budget of its token count plus `slack` (none
    /// with `None`), decided by the exact walk alone when `walk_only`.
    pub fn set_budget_slack(&mut self, slack: Option<usize>, walk_only: bool) {
        self.budget_slack = slack;
        self.budget_walk_only = walk_only;
    }

    /// Compiles the schema and computes the first mask: the part timed as TTFM. The schema's
    /// grammar is left in `source` for the caller to free once the time is taken: the mask
    /// does not wait for it, and freeing a large grammar takes a while.
    fn compile(
        &self,
        schema: &serde_json::Value,
        source: &mut Option<constrain_jsonschema::Compiled>,
    ) -> Result<(Matcher, Vec<u32>, TtfmPhases), String> {
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
        let schema_done = Instant::now();
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
        grammar.set_budget_walk_only(self.budget_walk_only);
        let grammar_done = Instant::now();
        let mut mask = vec![0u32; grammar.mask_words()];
        let mut matcher = Matcher::new(grammar);
        matcher
            .fill_mask(&mut mask)
            .map_err(|e| format!("first mask: {e}"))?;
        let us = |from: Instant, to: Instant| (to - from).as_secs_f64() * 1e6;
        let phases = TtfmPhases {
            schema: us(start, schema_done),
            grammar: us(schema_done, grammar_done),
            first_mask: us(grammar_done, Instant::now()),
        };
        Ok((matcher, mask, phases))
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
            Ok((matcher, mask, phases)) => {
                record.ttfm_phases_us = Some(phases);
                (matcher, mask)
            }
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
        if let Some(slack) = self.budget_slack {
            // Untimed, as the clone is: a server sets the budget when the request arrives.
            if let Err(err) = matcher.set_token_budget(Some(n.saturating_add(slack))) {
                return Outcome::Rejected {
                    reason: format!("token budget of {n} + {slack}: {err}"),
                    at_eos: false,
                };
            }
        }
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
            ttfm_phases_us: None,
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

#[cfg(test)]
mod tests {
    use std::path::Path;

    use constrain_vocab::Tokenizer;

    use super::super::dataset;
    use super::*;

    /// Feeds every valid instance of the schema files in `files` under budgets of its token
    /// count plus 0, 2 and 8, in lockstep through a grammar whose budget takes its bound and
    /// one whose budget only walks: the masks must be equal at every step, the bound never
    /// below the walk's figure, and every instance accepted. Returns (steps where the bound
    /// was known, steps).
    fn bound_agrees_with_the_walk(
        tokenizer: &Path,
        files: &[std::path::PathBuf],
    ) -> (usize, usize) {
        let tokenizer = Tokenizer::from_file(tokenizer).expect("tokenizer");
        let index = TokenIndex::new(tokenizer.vocabulary().clone());
        let options = constrain_jsonschema::Options::default();
        let (mut known, mut steps) = (0, 0);
        for path in files {
            let file = dataset::load(path).expect("readable");
            let Ok(compiled) = constrain_jsonschema::compile(&file.schema, &options) else {
                continue;
            };
            let compile =
                || CompiledGrammar::new(&compiled.grammar, index.clone(), Limits::default());
            let (Ok(fast), Ok(exact)) = (compile(), compile()) else {
                continue;
            };
            exact.set_budget_walk_only(true);
            for test in file.tests.iter().filter(|t| t.valid) {
                let Ok(tokens) = tokenizer.encode(&test.data.to_python()) else {
                    continue;
                };
                for slack in [0, 2, 8] {
                    let budget = tokens.len() + slack;
                    let mut a = Matcher::new(fast.clone());
                    let mut b = Matcher::new(exact.clone());
                    if a.set_token_budget(Some(budget)).is_err() {
                        // The shortest completion does not fit: refused alike.
                        assert!(b.set_token_budget(Some(budget)).is_err(), "{}", file.id);
                        continue;
                    }
                    b.set_token_budget(Some(budget)).expect("as the other");
                    let mut ma = vec![0u32; fast.mask_words()];
                    let mut mb = ma.clone();
                    for (k, &token) in tokens.iter().enumerate() {
                        let (bound, widest) = a
                            .budget_bound_and_widest()
                            .expect("within limits")
                            .expect("not ended");
                        assert!(
                            bound >= widest,
                            "{} token {k}: bound {bound} below {widest}",
                            file.id
                        );
                        known += usize::from(bound != u64::MAX);
                        steps += 1;
                        a.fill_mask(&mut ma).expect("mask");
                        b.fill_mask(&mut mb).expect("mask");
                        assert!(
                            ma == mb,
                            "{} token {k}, slack {slack}: masks differ",
                            file.id
                        );
                        if !is_set(&ma, token) {
                            // A valid instance the budget refuses: the shortest completion
                            // after the token takes more tokens than the instance's rest.
                            break;
                        }
                        a.accept_token(token).expect("allowed");
                        b.accept_token(token).expect("allowed");
                    }
                }
            }
        }
        (known, steps)
    }

    #[test]
    fn the_budget_bound_leaves_masks_as_the_walk_makes_them_on_committed_schemas() {
        let files = dataset::list_files(&constrain_testdata::fixture("maskbench")).expect("list");
        let (known, steps) =
            bound_agrees_with_the_walk(&constrain_testdata::fixture_tokenizer(), &files);
        assert!(steps > 0);
        assert!(
            known * 2 > steps,
            "the bound was known at {known} of {steps} steps"
        );
    }

    #[test]
    fn the_budget_bound_leaves_masks_as_the_walk_makes_them_on_maskbench() {
        let Some(shared) = constrain_testdata::require_shared_or_skip("maskbench budget bound")
        else {
            return;
        };
        let Some(tokenizer) = constrain_testdata::shared_tokenizer("llama3_1") else {
            return;
        };
        let files = dataset::list_files(&shared.join("data").join("maskbench-dev")).expect("list");
        // A fixed sample spread over the directory.
        let files: Vec<_> = files.into_iter().step_by(400).collect();
        let (known, steps) = bound_agrees_with_the_walk(&tokenizer, &files);
        assert!(
            known * 2 > steps,
            "the bound was known at {known} of {steps} steps"
        );
    }
}
