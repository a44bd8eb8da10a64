//! Counters behind `GET /metrics`, in Prometheus' text format.

use std::collections::BTreeMap;
use std::fmt::Write;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::time::Duration;

use parking_lot::Mutex;

/// A Prometheus histogram with fixed upper bounds (cumulative when rendered).
struct Histogram {
    bounds: &'static [f64],
    /// One count per bound, plus the overflow (`+Inf`).
    counts: Vec<AtomicU64>,
    /// The sum, in millionths (atomics hold integers; a mask takes microseconds).
    sum_micro: AtomicU64,
}

impl Histogram {
    fn new(bounds: &'static [f64]) -> Histogram {
        Histogram {
            bounds,
            counts: (0..=bounds.len()).map(|_| AtomicU64::new(0)).collect(),
            sum_micro: AtomicU64::new(0),
        }
    }

    fn observe(&self, value: f64) {
        let bucket = self
            .bounds
            .iter()
            .position(|&b| value <= b)
            .unwrap_or(self.bounds.len());
        self.counts[bucket].fetch_add(1, Ordering::Relaxed);
        self.sum_micro
            .fetch_add((value * 1e6).round() as u64, Ordering::Relaxed);
    }

    /// The `_bucket`, `_sum` and `_count` lines.
    fn lines(&self) -> Vec<(String, String)> {
        let mut lines = Vec::new();
        let mut total = 0;
        for (i, count) in self.counts.iter().enumerate() {
            total += count.load(Ordering::Relaxed);
            let le = self
                .bounds
                .get(i)
                .map_or_else(|| "+Inf".to_string(), |b| b.to_string());
            lines.push((format!("_bucket{{le=\"{le}\"}}"), total.to_string()));
        }
        let sum = self.sum_micro.load(Ordering::Relaxed) as f64 / 1e6;
        lines.push(("_sum".into(), sum.to_string()));
        lines.push(("_count".into(), total.to_string()));
        lines
    }
}

/// Bounds of the sequences-per-step histogram.
const BATCH_BOUNDS: &[f64] = &[1.0, 2.0, 3.0, 4.0, 6.0, 8.0, 12.0, 16.0, 32.0];
/// Bounds of the tokens-per-step histogram.
const STEP_TOKEN_BOUNDS: &[f64] = &[1.0, 2.0, 4.0, 8.0, 16.0, 32.0, 64.0, 128.0, 256.0, 512.0];
/// Bounds of the compile-time histogram, in seconds.
const COMPILE_BOUNDS: &[f64] = &[0.001, 0.01, 0.05, 0.1, 0.5, 1.0, 5.0, 10.0];
/// Bounds of the mask-time histogram (one sequence's mask in one step), in seconds.
const MASK_BOUNDS: &[f64] = &[1e-5, 5e-5, 1e-4, 5e-4, 1e-3, 5e-3, 0.01, 0.05, 0.1];
/// Bounds of the evaluation-time histogram (one step's decode), in seconds.
const EVAL_BOUNDS: &[f64] = &[0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5];
/// Bounds of the removed-mass histogram (a fraction of the model's probability).
const REMOVED_MASS_BOUNDS: &[f64] = &[0.001, 0.01, 0.05, 0.1, 0.25, 0.5, 0.75, 0.9, 0.99];

/// Counters of one sequence, for the metrics.
#[derive(Clone, Debug, Default)]
pub struct SequenceStats {
    /// Tokens drawn by the sampler.
    pub sampled: usize,
    /// Tokens appended because the grammar forced them.
    pub forced: usize,
    /// Time the mask of the latest step took (`None`: that step needed no mask), read by the
    /// scheduler after each step for the mask-time histogram.
    pub last_mask: Option<Duration>,
    /// Drafted tokens verified.
    pub drafted: usize,
    /// Drafted tokens the verification kept.
    pub accepted_drafts: usize,
    /// Of each traced drawn token, the probability mass the mask removed.
    pub removed_mass: Vec<f64>,
}

/// Everything `/metrics` reports.
pub struct Metrics {
    /// Requests answered, by route and status code.
    requests: Mutex<BTreeMap<(String, u16), u64>>,
    /// Jobs waiting for a slot.
    pub queued: AtomicUsize,
    /// Jobs with a sequence in a slot or about to take one.
    pub active: AtomicUsize,
    /// Slots holding a sequence (set by the scheduler after each step).
    pub busy_slots: AtomicUsize,
    /// Jobs stopped because their client went away.
    pub cancelled: AtomicU64,
    prompt_tokens: AtomicU64,
    sampled_tokens: AtomicU64,
    forced_tokens: AtomicU64,
    drafted_tokens: AtomicU64,
    accepted_drafts: AtomicU64,
    sequences: AtomicU64,
    cache_hits: AtomicU64,
    /// Time to the first token of each request: sum and count, for the mean.
    ttft_ns: AtomicU64,
    ttft_count: AtomicU64,
    /// Sequences in each step's decode.
    batch_sizes: Histogram,
    /// Tokens in each step's decode.
    step_tokens: Histogram,
    /// Compile times of cache misses.
    compile_times: Histogram,
    /// Each sequence's mask in each step.
    mask_times: Histogram,
    /// Each step's decode.
    eval_times: Histogram,
    /// The probability mass the mask removed, per traced drawn token.
    removed_mass: Histogram,
}

impl Default for Metrics {
    fn default() -> Metrics {
        Metrics {
            requests: Mutex::default(),
            queued: AtomicUsize::new(0),
            active: AtomicUsize::new(0),
            busy_slots: AtomicUsize::new(0),
            cancelled: AtomicU64::new(0),
            prompt_tokens: AtomicU64::new(0),
            sampled_tokens: AtomicU64::new(0),
            forced_tokens: AtomicU64::new(0),
            drafted_tokens: AtomicU64::new(0),
            accepted_drafts: AtomicU64::new(0),
            sequences: AtomicU64::new(0),
            cache_hits: AtomicU64::new(0),
            ttft_ns: AtomicU64::new(0),
            ttft_count: AtomicU64::new(0),
            batch_sizes: Histogram::new(BATCH_BOUNDS),
            step_tokens: Histogram::new(STEP_TOKEN_BOUNDS),
            compile_times: Histogram::new(COMPILE_BOUNDS),
            mask_times: Histogram::new(MASK_BOUNDS),
            eval_times: Histogram::new(EVAL_BOUNDS),
            removed_mass: Histogram::new(REMOVED_MASS_BOUNDS),
        }
    }
}

fn ns(d: Duration) -> u64 {
    u64::try_from(d.as_nanos()).unwrap_or(u64::MAX)
}

impl Metrics {
    /// Counts an answered request.
    pub fn count_request(&self, route: &str, status: u16) {
        *self
            .requests
            .lock()
            .entry((route.to_string(), status))
            .or_default() += 1;
    }

    /// Counts a request's prompt tokens.
    pub fn add_prompt_tokens(&self, n: usize) {
        self.prompt_tokens.fetch_add(n as u64, Ordering::Relaxed);
    }

    /// Adds a finished sequence's counters.
    pub fn add_sequence(&self, stats: &SequenceStats) {
        self.sequences.fetch_add(1, Ordering::Relaxed);
        self.sampled_tokens
            .fetch_add(stats.sampled as u64, Ordering::Relaxed);
        self.forced_tokens
            .fetch_add(stats.forced as u64, Ordering::Relaxed);
        self.drafted_tokens
            .fetch_add(stats.drafted as u64, Ordering::Relaxed);
        self.accepted_drafts
            .fetch_add(stats.accepted_drafts as u64, Ordering::Relaxed);
        for &mass in &stats.removed_mass {
            self.removed_mass.observe(mass);
        }
    }

    /// Adds one sequence's mask of one step.
    pub fn add_mask(&self, took: Duration) {
        self.mask_times.observe(took.as_secs_f64());
    }

    /// Adds one step's model evaluation.
    pub fn add_eval(&self, took: Duration) {
        self.eval_times.observe(took.as_secs_f64());
    }

    /// Adds one scheduler step: `sequences` in its decode, `tokens` evaluated.
    pub fn add_step(&self, sequences: usize, tokens: usize) {
        self.batch_sizes.observe(sequences as f64);
        self.step_tokens.observe(tokens as f64);
    }

    /// Adds a grammar lookup: a compilation that took `took`, or a cache hit.
    pub fn add_compile(&self, took: Option<Duration>) {
        match took {
            Some(t) => self.compile_times.observe(t.as_secs_f64()),
            None => {
                self.cache_hits.fetch_add(1, Ordering::Relaxed);
            }
        }
    }

    /// Adds a request's time to its first token.
    pub fn add_ttft(&self, took: Duration) {
        self.ttft_count.fetch_add(1, Ordering::Relaxed);
        self.ttft_ns.fetch_add(ns(took), Ordering::Relaxed);
    }

    /// The Prometheus text.
    pub fn render(&self, cached_grammars: usize) -> String {
        let mut out = String::new();
        let secs = |a: &AtomicU64| a.load(Ordering::Relaxed) as f64 / 1e9;
        let get = |a: &AtomicU64| a.load(Ordering::Relaxed);
        let mut metric = |name: &str, kind: &str, help: &str, lines: Vec<(String, String)>| {
            let _ = writeln!(out, "# HELP {name} {help}");
            let _ = writeln!(out, "# TYPE {name} {kind}");
            for (labels, value) in lines {
                let _ = writeln!(out, "{name}{labels} {value}");
            }
        };
        let requests: Vec<(String, String)> = self
            .requests
            .lock()
            .iter()
            .map(|((route, status), n)| {
                (
                    format!("{{route=\"{route}\",status=\"{status}\"}}"),
                    n.to_string(),
                )
            })
            .collect();
        metric(
            "constrain_requests_total",
            "counter",
            "Requests answered, by route and HTTP status.",
            requests,
        );
        let one = |v: String| vec![(String::new(), v)];
        metric(
            "constrain_queue_length",
            "gauge",
            "Requests waiting for a slot.",
            one(self.queued.load(Ordering::Relaxed).to_string()),
        );
        metric(
            "constrain_active_requests",
            "gauge",
            "Requests being generated.",
            one(self.active.load(Ordering::Relaxed).to_string()),
        );
        metric(
            "constrain_active_slots",
            "gauge",
            "Slots of the context holding a sequence.",
            one(self.busy_slots.load(Ordering::Relaxed).to_string()),
        );
        metric(
            "constrain_batch_sequences",
            "histogram",
            "Sequences in each decode step.",
            self.batch_sizes.lines(),
        );
        metric(
            "constrain_batch_tokens",
            "histogram",
            "Tokens evaluated in each decode step.",
            self.step_tokens.lines(),
        );
        metric(
            "constrain_compile_duration_seconds",
            "histogram",
            "Time compiling constraints (cache misses).",
            self.compile_times.lines(),
        );
        metric(
            "constrain_cancelled_total",
            "counter",
            "Requests stopped because the client went away.",
            one(get(&self.cancelled).to_string()),
        );
        metric(
            "constrain_prompt_tokens_total",
            "counter",
            "Prompt tokens of accepted requests.",
            one(get(&self.prompt_tokens).to_string()),
        );
        metric(
            "constrain_generated_tokens_total",
            "counter",
            "Generated tokens, drawn by the sampler or forced by the grammar.",
            vec![
                (
                    "{kind=\"sampled\"}".into(),
                    get(&self.sampled_tokens).to_string(),
                ),
                (
                    "{kind=\"forced\"}".into(),
                    get(&self.forced_tokens).to_string(),
                ),
            ],
        );
        let drafted = get(&self.drafted_tokens);
        let accepted = get(&self.accepted_drafts);
        metric(
            "constrain_draft_tokens_total",
            "counter",
            "Tokens drafted by prompt lookup, by what verification did with them.",
            vec![
                ("{outcome=\"accepted\"}".into(), accepted.to_string()),
                (
                    "{outcome=\"rejected\"}".into(),
                    drafted.saturating_sub(accepted).to_string(),
                ),
            ],
        );
        metric(
            "constrain_sequences_total",
            "counter",
            "Sequences (choices) generated to the end.",
            one(get(&self.sequences).to_string()),
        );
        metric(
            "constrain_mask_removed_mass",
            "histogram",
            "Of each traced drawn token (requests with `trace`), the share of the model's \
             probability the mask took away.",
            self.removed_mass.lines(),
        );
        metric(
            "constrain_mask_duration_seconds",
            "histogram",
            "Time computing one sequence's token mask in one step.",
            self.mask_times.lines(),
        );
        metric(
            "constrain_eval_duration_seconds",
            "histogram",
            "Time of one step's forward pass (all its sequences).",
            self.eval_times.lines(),
        );
        metric(
            "constrain_grammar_cache_hits_total",
            "counter",
            "Constraints found compiled in the cache.",
            one(get(&self.cache_hits).to_string()),
        );
        metric(
            "constrain_grammar_cache_entries",
            "gauge",
            "Compiled constraints in the cache.",
            one(cached_grammars.to_string()),
        );
        metric(
            "constrain_time_to_first_token_seconds",
            "summary",
            "From a request's arrival to its first generated text.",
            vec![
                ("_sum".into(), secs(&self.ttft_ns).to_string()),
                ("_count".into(), get(&self.ttft_count).to_string()),
            ],
        );
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn histograms_are_cumulative_and_keep_microseconds() {
        let metrics = Metrics::default();
        metrics.add_mask(Duration::from_micros(3));
        metrics.add_mask(Duration::from_micros(70));
        metrics.add_mask(Duration::from_secs(1));
        let text = metrics.render(0);
        for line in [
            "constrain_mask_duration_seconds_bucket{le=\"0.00001\"} 1",
            "constrain_mask_duration_seconds_bucket{le=\"0.0001\"} 2",
            "constrain_mask_duration_seconds_bucket{le=\"0.1\"} 2",
            "constrain_mask_duration_seconds_bucket{le=\"+Inf\"} 3",
            "constrain_mask_duration_seconds_sum 1.000073",
            "constrain_mask_duration_seconds_count 3",
            "# TYPE constrain_eval_duration_seconds histogram",
        ] {
            assert!(text.contains(line), "{line} missing from:\n{text}");
        }
    }
}
