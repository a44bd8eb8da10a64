//! The chain of steps: [`Funnel`], and the [`Trace`] of a run for teaching and debugging.

use crate::math::max_finite;
use crate::steps::{
    apply_frequency_presence_penalty, apply_grammar_mask, apply_logit_bias,
    apply_repetition_penalty, apply_temperature, argmax_kept, check_logits, checked_max,
    count_allowed, is_greedy, min_p_kept, retain, softmax, top_k_kept, top_p_kept, typical_p_kept,
    CutoffScratch,
};
use crate::{
    Distribution, History, SamplerConfig, SamplingError, Stage, TokenCounts, Xoshiro256StarStar,
};

/// The stages that do something for one call, in order.
#[derive(Clone, Copy)]
struct ActiveStages {
    stages: [Stage; 9],
    len: usize,
}

impl ActiveStages {
    fn as_slice(&self) -> &[Stage] {
        &self.stages[..self.len]
    }

    /// Lets top-k run before a temperature right in front of it. Top-k only ranks, and a
    /// positive temperature keeps the ranking (and the maximum), so the survivors and their
    /// scaled logits are the same bit for bit; the temperature then scales `k` candidates
    /// instead of the whole vocabulary.
    fn run_top_k_before_temperature(&mut self, temperature: f32) {
        if is_greedy(temperature) {
            return;
        }
        for i in 1..self.len {
            if self.stages[i - 1] == Stage::Temperature && self.stages[i] == Stage::TopK {
                self.stages.swap(i - 1, i);
            }
        }
    }
}

/// One step of the distribution as [`Funnel::trace`] records it.
#[derive(Debug, Clone, PartialEq)]
pub struct TraceStep {
    /// The stage just applied (`None` for the raw input).
    pub stage: Option<Stage>,
    /// The logits after it, by token id (-inf for masked or cut tokens).
    pub logits: Vec<f32>,
    /// Their softmax, by token id (0 for masked or cut tokens).
    pub probs: Vec<f32>,
}

impl TraceStep {
    /// The stage's name, `"input"` for the raw input.
    pub fn name(&self) -> &'static str {
        self.stage.map_or("input", Stage::name)
    }
}

/// The distribution after every stage that did something, for teaching and debugging.
#[derive(Debug, Clone, PartialEq)]
pub struct Trace {
    /// The input, then one step per active stage, in order.
    pub steps: Vec<TraceStep>,
    /// The final distribution by token id: the one [`Funnel::sample`] draws from.
    pub final_probs: Vec<f32>,
}

/// The sampling funnel: the stages in order, then softmax, then a seeded draw.
///
/// A funnel owns its buffers, so sampling a token allocates nothing once they have grown; use
/// one per sequence (or per thread). See the [crate documentation](crate) for an example.
#[derive(Debug, Clone)]
pub struct Funnel {
    config: SamplerConfig,
    order: [Stage; 9],
    scratch: CutoffScratch,
    counts: TokenCounts,
    candidates: Distribution,
}

impl Funnel {
    /// A funnel with the stages in [`Stage::CANONICAL_ORDER`].
    ///
    /// # Errors
    ///
    /// [`SamplingError::InvalidSetting`] if a setting is out of range.
    pub fn new(config: SamplerConfig) -> Result<Self, SamplingError> {
        Funnel::with_order(config, &Stage::CANONICAL_ORDER)
    }

    /// A funnel with the stages in another order (to show what order changes, or to follow
    /// another engine's convention, e.g. llama.cpp's temperature after the cutoffs).
    ///
    /// # Errors
    ///
    /// [`SamplingError::InvalidStageOrder`] unless `order` names every stage exactly once;
    /// [`SamplingError::InvalidSetting`] if a setting is out of range.
    pub fn with_order(config: SamplerConfig, order: &[Stage]) -> Result<Self, SamplingError> {
        config.validate()?;
        let mut seen = [false; 9];
        for &stage in order {
            let slot = &mut seen[stage as usize];
            if *slot {
                return Err(SamplingError::InvalidStageOrder {
                    reason: format!("{stage} appears twice"),
                });
            }
            *slot = true;
        }
        if let Some(missing) = Stage::CANONICAL_ORDER
            .into_iter()
            .find(|&stage| !seen[stage as usize])
        {
            return Err(SamplingError::InvalidStageOrder {
                reason: format!("{missing} is missing (list every stage once)"),
            });
        }
        let mut fixed = Stage::CANONICAL_ORDER;
        fixed.copy_from_slice(order);
        Ok(Funnel {
            config,
            order: fixed,
            scratch: CutoffScratch::new(),
            counts: TokenCounts::new(),
            candidates: Distribution::default(),
        })
    }

    /// The settings.
    pub fn config(&self) -> &SamplerConfig {
        &self.config
    }

    /// The order of the stages.
    pub fn order(&self) -> &[Stage] {
        &self.order
    }

    /// Runs the funnel and draws a token.
    ///
    /// `logits` is the funnel's working buffer: its content afterwards is unspecified.
    /// `mask` is the grammar's bitmask (`None`: no grammar). `history` feeds the penalties.
    ///
    /// # Errors
    ///
    /// See [`distribution`](Self::distribution).
    pub fn sample(
        &mut self,
        logits: &mut [f32],
        mask: Option<&[u32]>,
        history: &History,
        rng: &mut Xoshiro256StarStar,
    ) -> Result<u32, SamplingError> {
        self.run(logits, mask, history)?;
        self.candidates.draw(rng)
    }

    /// Runs the funnel and returns the final distribution (what [`sample`](Self::sample)
    /// draws from).
    ///
    /// # Errors
    ///
    /// [`SamplingError::EmptyLogits`], [`SamplingError::NonFiniteLogit`] for bad input,
    /// [`SamplingError::NoAllowedToken`] if the grammar leaves nothing,
    /// [`SamplingError::NoTokenLeft`] if the bias or penalties exclude everything left,
    /// [`SamplingError::TokenOutOfRange`] for a history or bias token beyond the logits.
    pub fn distribution(
        &mut self,
        logits: &mut [f32],
        mask: Option<&[u32]>,
        history: &History,
    ) -> Result<&Distribution, SamplingError> {
        self.run(logits, mask, history)?;
        Ok(&self.candidates)
    }

    /// Runs the funnel on a copy of the logits, recording the distribution after every
    /// active stage. Slower than [`distribution`](Self::distribution) (it never compacts),
    /// with the same result.
    ///
    /// # Errors
    ///
    /// As [`distribution`](Self::distribution).
    pub fn trace(
        &mut self,
        logits: &[f32],
        mask: Option<&[u32]>,
        history: &History,
    ) -> Result<Trace, SamplingError> {
        check_logits(logits)?;
        let active = self.prepare(mask.is_some(), history);
        let last_id_stage = last_id_reading(active.as_slice());
        let mut values = logits.to_vec();
        if mask.is_none() {
            ensure_some_left(&values, "input")?;
        }
        let mut steps = vec![snapshot(None, &values)?];
        for (index, &stage) in active.as_slice().iter().enumerate() {
            self.apply_dense(stage, &mut values, mask)?;
            check_after(stage, index, last_id_stage, &values, mask)?;
            steps.push(snapshot(Some(stage), &values)?);
        }
        let final_probs = steps
            .last()
            .map(|step| step.probs.clone())
            .unwrap_or_default();
        Ok(Trace { steps, final_probs })
    }

    /// Counts the penalty window and lists the stages that do something for this call.
    fn prepare(&mut self, has_mask: bool, history: &History) -> ActiveStages {
        let config = &self.config;
        let window = history.window(&config.penalty_window);
        let penalized = config.repetition_penalty != 1.0
            || config.frequency_penalty != 0.0
            || config.presence_penalty != 0.0;
        self.counts.recount(if penalized && !window.is_empty() {
            window
        } else {
            &[]
        });
        let has_counts = !self.counts.is_empty();
        let mut active = ActiveStages {
            stages: self.order,
            len: 0,
        };
        for stage in self.order {
            let on = match stage {
                Stage::GrammarMask => has_mask,
                Stage::RepetitionPenalty => has_counts && config.repetition_penalty != 1.0,
                Stage::FrequencyPresencePenalty => {
                    has_counts
                        && (config.frequency_penalty != 0.0 || config.presence_penalty != 0.0)
                }
                Stage::LogitBias => !config.logit_bias.is_empty(),
                Stage::Temperature => config.temperature != 1.0,
                Stage::TopK => config.top_k > 0,
                Stage::TopP => config.top_p < 1.0,
                Stage::MinP => config.min_p > 0.0,
                Stage::TypicalP => config.typical_p < 1.0,
            };
            if on {
                active.stages[active.len] = stage;
                active.len += 1;
            }
        }
        active
    }

    /// The fast path: the stages on the full vector until a cutoff may compact it, then on
    /// the short candidate list; softmax over the candidates.
    fn run(
        &mut self,
        logits: &mut [f32],
        mask: Option<&[u32]>,
        history: &History,
    ) -> Result<(), SamplingError> {
        let input_max = checked_max(logits)?;
        let mut active = self.prepare(mask.is_some(), history);
        active.run_top_k_before_temperature(self.config.temperature);
        let last_id_stage = last_id_reading(active.as_slice());
        if mask.is_none() && input_max == f32::NEG_INFINITY {
            return Err(SamplingError::NoTokenLeft { after: "input" });
        }
        let mut compacted = false;
        for (index, &stage) in active.as_slice().iter().enumerate() {
            let after_id_stages = last_id_stage.is_none_or(|last| index > last);
            if compacted {
                let values = &mut self.candidates.probs;
                if is_cutoff(&self.config, stage) {
                    if cutoff_kept(&self.config, stage, values, &mut self.scratch) {
                        self.candidates.retain_positions(self.scratch.kept());
                    }
                } else {
                    // Every stage that reads token ids ran before the compaction, so only a
                    // temperature can be left here.
                    apply_temperature(values, self.config.temperature, &mut self.scratch);
                }
            } else if after_id_stages && is_cutoff(&self.config, stage) {
                let cut = cutoff_kept(&self.config, stage, logits, &mut self.scratch);
                self.candidates
                    .gather(logits, cut.then(|| self.scratch.kept()));
                compacted = true;
            } else {
                self.apply_dense(stage, logits, mask)?;
                check_after(stage, index, last_id_stage, logits, mask)?;
            }
        }
        if !compacted {
            self.candidates.gather(logits, None);
        }
        softmax(&mut self.candidates.probs)
    }

    /// Applies one stage to the full vector.
    fn apply_dense(
        &mut self,
        stage: Stage,
        values: &mut [f32],
        mask: Option<&[u32]>,
    ) -> Result<(), SamplingError> {
        let config = &self.config;
        match stage {
            Stage::GrammarMask => {
                if let Some(mask) = mask {
                    apply_grammar_mask(values, mask);
                }
            }
            Stage::RepetitionPenalty => {
                apply_repetition_penalty(values, &self.counts, config.repetition_penalty)?
            }
            Stage::FrequencyPresencePenalty => apply_frequency_presence_penalty(
                values,
                &self.counts,
                config.frequency_penalty,
                config.presence_penalty,
            )?,
            Stage::LogitBias => apply_logit_bias(values, &config.logit_bias)?,
            Stage::Temperature => apply_temperature(values, config.temperature, &mut self.scratch),
            Stage::TopK | Stage::TopP | Stage::MinP | Stage::TypicalP => {
                if cutoff_kept(config, stage, values, &mut self.scratch) {
                    retain(values, &mut self.scratch);
                }
            }
        }
        Ok(())
    }
}

/// Whether the stage only removes tokens (greedy is a cutoff: it keeps the argmax).
fn is_cutoff(config: &SamplerConfig, stage: Stage) -> bool {
    match stage {
        Stage::TopK | Stage::TopP | Stage::MinP | Stage::TypicalP => true,
        Stage::Temperature => is_greedy(config.temperature),
        _ => false,
    }
}

/// The positions a cutoff stage keeps (into `scratch`); `false` when it keeps everything.
fn cutoff_kept(
    config: &SamplerConfig,
    stage: Stage,
    values: &[f32],
    scratch: &mut CutoffScratch,
) -> bool {
    match stage {
        Stage::TopK => top_k_kept(values, config.top_k, scratch),
        Stage::TopP => top_p_kept(values, config.top_p, scratch),
        Stage::MinP => min_p_kept(values, config.min_p, scratch),
        Stage::TypicalP => typical_p_kept(values, config.typical_p, scratch),
        Stage::Temperature => argmax_kept(values, scratch),
        _ => false,
    }
}

fn last_id_reading(active: &[Stage]) -> Option<usize> {
    active.iter().rposition(|stage| stage.reads_token_ids())
}

fn ensure_some_left(values: &[f32], after: &'static str) -> Result<(), SamplingError> {
    if max_finite(values) == f32::NEG_INFINITY {
        Err(SamplingError::NoTokenLeft { after })
    } else {
        Ok(())
    }
}

/// After the grammar mask, and after the last stage that reads token ids, something must be
/// left (later stages never remove the last token).
fn check_after(
    stage: Stage,
    index: usize,
    last_id_stage: Option<usize>,
    values: &[f32],
    mask: Option<&[u32]>,
) -> Result<(), SamplingError> {
    if stage == Stage::GrammarMask {
        if max_finite(values) == f32::NEG_INFINITY {
            return Err(SamplingError::NoAllowedToken {
                allowed: mask.map_or(values.len(), |mask| count_allowed(mask, values.len())),
                width: values.len(),
            });
        }
    } else if last_id_stage == Some(index) {
        ensure_some_left(values, stage.name())?;
    }
    Ok(())
}

fn snapshot(stage: Option<Stage>, values: &[f32]) -> Result<TraceStep, SamplingError> {
    let mut probs = values.to_vec();
    softmax(&mut probs)?;
    Ok(TraceStep {
        stage,
        logits: values.to_vec(),
        probs,
    })
}
