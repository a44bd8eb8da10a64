//! What a generation did and how fast: the numbers behind `--stats`.

use std::time::Duration;

use serde::Serialize;

/// Why generation stopped.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum StopReason {
    /// The grammar admits nothing more: the output is complete.
    GrammarFinished,
    /// The model chose an end-of-generation token (that the grammar allowed, if any).
    EndOfSequence,
    /// The token budget ran out on a complete output: the constraint's mask narrowed to
    /// tokens that closed it in time.
    BudgetComplete,
    /// The token limit was reached: the output may be incomplete.
    MaxTokens,
    /// The context is full: the output may be incomplete.
    ContextFull,
}

impl StopReason {
    /// Whether the output ended where the model (and the grammar, if any) meant it to end.
    pub fn is_complete(self) -> bool {
        matches!(
            self,
            StopReason::GrammarFinished | StopReason::EndOfSequence | StopReason::BudgetComplete
        )
    }
}

/// Counters and timings of one generation.
///
/// Serialized, it is the `--stats` line; `output_bytes` is left out of it. `prefill_s` and
/// `eval_s` are in it so that the model's share of a step (which a GPU changes) can be told
/// from the mask's.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Stats {
    /// Steps whose mask the token budget narrowed so the output would complete in time
    /// (`None` without a constraint).
    pub budget_constrained_tokens: Option<usize>,
    /// Tokens chosen by the sampler.
    pub sampled_tokens: usize,
    /// Tokens the grammar forced, appended without sampling.
    pub forced_tokens: usize,
    /// Tokens of the prompt (with the start token).
    pub prompt_tokens: usize,
    /// Seconds from the first generated token's decision to the end (the prompt excluded).
    pub decode_s: f64,
    /// `sampled_tokens / decode_s`.
    pub sampled_tokens_per_s: f64,
    /// Median time to compute one token mask, in microseconds (`None` without a grammar).
    pub mask_us_p50: Option<f64>,
    /// 99th percentile of the mask time, in microseconds (`None` without a grammar).
    pub mask_us_p99: Option<f64>,
    /// Why generation stopped.
    pub stop_reason: StopReason,
    /// Bytes of generated output (text of sampled and forced tokens).
    #[serde(skip)]
    pub output_bytes: usize,
    /// Seconds spent evaluating the prompt.
    pub prefill_s: f64,
    /// Of `decode_s`, the seconds inside the model (evaluating generated tokens); the rest is
    /// masks, sampling and bookkeeping.
    pub eval_s: f64,
    /// The output's log-probability under the constraint: the sum, over sampled tokens, of
    /// their log-probability in the model's distribution masked to the allowed tokens and
    /// renormalized (forced tokens have no alternative and add 0). The score beam search
    /// maximizes. `None` unless log-probabilities were asked for.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sequence_logprob: Option<f64>,
    /// Tokens the prompt lookup drafted (`None` without lookup).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub draft_tokens: Option<usize>,
    /// Drafted tokens that verification accepted (`None` without lookup).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub accepted_draft_tokens: Option<usize>,
}

/// Nearest-rank percentile `p` (0..=100) of `samples`, in microseconds.
pub(crate) fn percentile_us(samples: &mut [Duration], p: f64) -> Option<f64> {
    if samples.is_empty() {
        return None;
    }
    samples.sort_unstable();
    let rank = ((p / 100.0) * samples.len() as f64).ceil().max(1.0) as usize;
    let sample = samples[rank.min(samples.len()) - 1];
    Some((sample.as_secs_f64() * 1e7).round() / 10.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn us(v: &[u64]) -> Vec<Duration> {
        v.iter().map(|&x| Duration::from_micros(x)).collect()
    }

    #[test]
    fn nearest_rank_percentiles() {
        let mut samples = us(&[5, 1, 4, 2, 3]);
        assert_eq!(percentile_us(&mut samples, 50.0), Some(3.0));
        assert_eq!(percentile_us(&mut samples, 99.0), Some(5.0));
        assert_eq!(percentile_us(&mut samples, 0.0), Some(1.0));
        assert_eq!(percentile_us(&mut [], 50.0), None);
    }

    #[test]
    fn stats_line_has_exactly_the_documented_keys() {
        let stats = Stats {
            budget_constrained_tokens: Some(1),
            sampled_tokens: 3,
            forced_tokens: 2,
            prompt_tokens: 7,
            decode_s: 0.5,
            sampled_tokens_per_s: 6.0,
            mask_us_p50: Some(12.5),
            mask_us_p99: None,
            stop_reason: StopReason::MaxTokens,
            output_bytes: 10,
            prefill_s: 0.1,
            eval_s: 0.4,
            sequence_logprob: None,
            draft_tokens: None,
            accepted_draft_tokens: None,
        };
        let json = serde_json::to_value(&stats).unwrap();
        let keys: Vec<&str> = json
            .as_object()
            .unwrap()
            .keys()
            .map(String::as_str)
            .collect();
        assert_eq!(
            keys,
            [
                "budget_constrained_tokens",
                "sampled_tokens",
                "forced_tokens",
                "prompt_tokens",
                "decode_s",
                "sampled_tokens_per_s",
                "mask_us_p50",
                "mask_us_p99",
                "stop_reason",
                "prefill_s",
                "eval_s"
            ]
        );
        assert_eq!(json["stop_reason"], "max_tokens");
    }
}
