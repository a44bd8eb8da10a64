//! What a MaskBench run writes: one record per schema (`PREFIX.jsonl`) and a summary
//! (`PREFIX.json`), in the field layout of the published reference results so that both can be
//! compared line by line.

use std::fmt;

use serde::{Deserialize, Serialize};

/// How a schema fared.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Status {
    /// Compiled, and every instance was classified right.
    Pass,
    /// The schema could not be compiled (or its first mask could not be computed).
    CompileError,
    /// A valid instance was rejected (over-constrained).
    ValidationError,
    /// An invalid instance was accepted (under-constrained: a soundness bug).
    InvalidationError,
    /// The engine returned an error while matching an instance (a budget ran out).
    RuntimeError,
    /// The engine or compiler panicked.
    Crash,
    /// The data file could not be read.
    LoadError,
}

impl Status {
    /// The word used in the files.
    pub fn as_str(self) -> &'static str {
        match self {
            Status::Pass => "pass",
            Status::CompileError => "compile_error",
            Status::ValidationError => "validation_error",
            Status::InvalidationError => "invalidation_error",
            Status::RuntimeError => "runtime_error",
            Status::Crash => "crash",
            Status::LoadError => "load_error",
        }
    }
}

impl fmt::Display for Status {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One line of `PREFIX.jsonl`. Times are microseconds.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct SchemaRecord {
    /// The data file's name.
    pub id: String,
    /// One of the [`Status`] words; a string so that other engines' words read back too.
    pub status: String,
    /// Time to compile the schema for the tokenizer and compute the first mask.
    pub ttfm_us: f64,
    /// Masks computed over all instances (one per token fed).
    pub tokens: u64,
    /// Sum of the per-token times.
    pub mask_us_total: f64,
    /// Largest per-token time.
    pub max_mask_us: f64,
    /// The first problem met (compile error, first misclassified instance, panic message).
    pub error: Option<String>,
    /// Instances in the file.
    pub n_tests: usize,
    /// Valid instances rejected.
    pub n_valid_rejected: usize,
    /// Invalid instances accepted.
    pub n_invalid_accepted: usize,
    /// Instances whose every token was allowed but after which end-of-sequence was not
    /// (absent from older result files: 0).
    #[serde(default)]
    pub n_eos_rejected: usize,
    /// Where the time to first mask went; after the reference's fields, and absent from
    /// older result files and after a compile error.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ttfm_phases_us: Option<TtfmPhases>,
}

/// The parts of a time to first mask, in microseconds.
#[derive(Clone, Copy, Debug, Default, Serialize, Deserialize)]
pub struct TtfmPhases {
    /// JSON Schema to grammar (`constrain_jsonschema::compile_with_limits`).
    pub schema: f64,
    /// Grammar to `CompiledGrammar` for the tokenizer, which computes the first mask.
    pub grammar: f64,
    /// A matcher made and its first mask filled (from the compiled grammar's cache).
    pub first_mask: f64,
}

/// Nearest-rank percentiles of a set of durations, in microseconds.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct Distribution {
    /// Mean.
    pub avg: f64,
    /// 25th percentile.
    pub p25: f64,
    /// Median.
    pub p50: f64,
    /// 75th percentile.
    pub p75: f64,
    /// 90th percentile.
    pub p90: f64,
    /// 95th percentile.
    pub p95: f64,
    /// 99th percentile.
    pub p99: f64,
    /// 99.9th percentile.
    pub p999: f64,
    /// Maximum.
    pub max: f64,
}

impl Distribution {
    /// The distribution of `samples_ns` (nanoseconds); all zero when there are none.
    pub fn from_nanos(samples_ns: &mut [u64]) -> Distribution {
        if samples_ns.is_empty() {
            return Distribution::default();
        }
        samples_ns.sort_unstable();
        let us = |ns: u64| ns as f64 / 1000.0;
        // Nearest rank: the smallest sample with at least p of them at or below it. `p` is in
        // tenths of a percent, so that the rank is computed exactly in integers.
        let n = samples_ns.len();
        let rank = |per_mille: usize| {
            let k = (per_mille * n).div_ceil(1000);
            us(samples_ns[k.clamp(1, n) - 1])
        };
        let total: u128 = samples_ns.iter().map(|&ns| u128::from(ns)).sum();
        Distribution {
            avg: total as f64 / n as f64 / 1000.0,
            p25: rank(250),
            p50: rank(500),
            p75: rank(750),
            p90: rank(900),
            p95: rank(950),
            p99: rank(990),
            p999: rank(999),
            max: us(samples_ns[n - 1]),
        }
    }

    /// `(label, value)` pairs in report order.
    pub fn rows(&self) -> [(&'static str, f64); 9] {
        [
            ("avg", self.avg),
            ("p25", self.p25),
            ("p50", self.p50),
            ("p75", self.p75),
            ("p90", self.p90),
            ("p95", self.p95),
            ("p99", self.p99),
            ("p99.9", self.p999),
            ("max", self.max),
        ]
    }
}

/// The content of `PREFIX.json`.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct Summary {
    /// `constrain <version>`.
    pub engine: String,
    /// The tokenizer's name.
    pub tokenizer: String,
    /// The data directory's name.
    pub data: String,
    /// Schema files run.
    pub schemas: usize,
    /// Schemas with status `pass`.
    pub passing: usize,
    /// Schemas with status `compile_error`.
    pub compile_error: usize,
    /// Schemas with status `validation_error`.
    pub validation_error: usize,
    /// Schemas with status `invalidation_error`.
    pub invalidation_error: usize,
    /// Schemas with status `crash`.
    pub crash: usize,
    /// Schemas with status `runtime_error`.
    #[serde(default)]
    pub runtime_error: usize,
    /// Schemas with status `load_error`.
    #[serde(default)]
    pub load_error: usize,
    /// Masks computed (TBM samples).
    pub tokens: u64,
    /// Instances whose tokens all passed but after which end-of-sequence was refused.
    #[serde(default)]
    pub eos_rejected_instances: usize,
    /// Time between masks: one sample per token.
    pub tbm_us: Distribution,
    /// Time to first mask: one sample per compiled schema.
    pub ttfm_us: Distribution,
    /// Wall-clock time of the whole run, in seconds.
    pub wall_s: f64,
    /// The token budget's slack over each instance's token count, when the run had one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub budget_slack: Option<usize>,
}

impl Summary {
    /// Counts one schema's record.
    pub fn count(&mut self, record: &SchemaRecord) {
        self.schemas += 1;
        self.tokens += record.tokens;
        self.eos_rejected_instances += record.n_eos_rejected;
        match record.status.as_str() {
            "pass" => self.passing += 1,
            "compile_error" => self.compile_error += 1,
            "validation_error" => self.validation_error += 1,
            "invalidation_error" => self.invalidation_error += 1,
            "runtime_error" => self.runtime_error += 1,
            "crash" => self.crash += 1,
            _ => self.load_error += 1,
        }
    }

    /// `(label, value)` pairs of the counts, in report order.
    pub fn count_rows(&self) -> Vec<(&'static str, f64)> {
        vec![
            ("schemas", self.schemas as f64),
            ("passing", self.passing as f64),
            ("compile_error", self.compile_error as f64),
            ("validation_error", self.validation_error as f64),
            ("invalidation_error", self.invalidation_error as f64),
            ("runtime_error", self.runtime_error as f64),
            ("crash", self.crash as f64),
            ("load_error", self.load_error as f64),
            ("tokens", self.tokens as f64),
            ("eos_rejected_instances", self.eos_rejected_instances as f64),
            ("wall_s", self.wall_s),
        ]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentiles_use_the_nearest_rank() {
        let mut samples: Vec<u64> = (1..=1000).map(|i| i * 1000).collect();
        let d = Distribution::from_nanos(&mut samples);
        assert_eq!(
            (d.p25, d.p50, d.p99, d.p999, d.max),
            (250.0, 500.0, 990.0, 999.0, 1000.0)
        );
        assert_eq!(d.avg, 500.5);
        let mut one = vec![7_000];
        let d = Distribution::from_nanos(&mut one);
        assert_eq!((d.p25, d.p999, d.max), (7.0, 7.0, 7.0));
    }

    #[test]
    fn records_keep_the_reference_field_layout() {
        let record = SchemaRecord {
            id: "a.json".into(),
            status: Status::Pass.to_string(),
            ttfm_us: 1.5,
            ttfm_phases_us: None,
            tokens: 3,
            mask_us_total: 2.0,
            max_mask_us: 1.0,
            error: None,
            n_tests: 1,
            n_valid_rejected: 0,
            n_invalid_accepted: 0,
            n_eos_rejected: 0,
        };
        assert_eq!(
            serde_json::to_string(&record).unwrap(),
            r#"{"id":"a.json","status":"pass","ttfm_us":1.5,"tokens":3,"mask_us_total":2.0,"max_mask_us":1.0,"error":null,"n_tests":1,"n_valid_rejected":0,"n_invalid_accepted":0,"n_eos_rejected":0}"#
        );
        // Older result files have no `n_eos_rejected`.
        let old: SchemaRecord = serde_json::from_str(
            r#"{"id":"a.json","status":"pass","ttfm_us":1.5,"tokens":3,"mask_us_total":2.0,"max_mask_us":1.0,"error":null,"n_tests":1,"n_valid_rejected":0,"n_invalid_accepted":0}"#,
        )
        .unwrap();
        assert_eq!(old.n_eos_rejected, 0);
    }
}
