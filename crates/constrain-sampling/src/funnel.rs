//! The chain of steps: [`Funnel`], and the [`Trace`] of a run for teaching and debugging.

use crate::math::max_finite;
use crate::steps::{
    apply_frequency_presence_penalty, apply_grammar_mask, apply_logit_bias,
    apply_repetition_penalty, apply_temperature, argmax_kept, check_in_range, check_logits,
    checked_max, count_allowed, frequency_presence_penalized, is_greedy, min_p_kept,
    repetition_penalized, retain, softmax, top_k_kept, top_p_kept, typical_p_kept, CutoffScratch,
};
use crate::{
    Distribution, DraftCheck, History, SamplerConfig, SamplingError, Stage, TokenCounts,
    TokenOrigin, Xoshiro256StarStar,
};

/// A mask that allows at most one token in this many is read bit by bit: the funnel gathers
/// the allowed tokens' logits and never touches the rest of the vocabulary. Denser masks are
/// applied to the whole vector, which is faster per token than visiting bits one by one.
const SPARSE_MASK_RATIO: usize = 16;

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
    /// The copy of the logits that [`sample_from`](Self::sample_from) works on when it needs
    /// the whole vector.
    dense: Vec<f32>,
}

/// How one call runs: over the whole vector, or over the tokens a sparse mask allows.
enum Route<'m> {
    Dense(ActiveStages),
    /// The mask's allowed tokens, gathered before any other stage.
    Sparse {
        active: ActiveStages,
        mask: &'m [u32],
        /// How many tokens the mask allows.
        allowed: usize,
    },
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
            dense: Vec::new(),
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

    /// Runs the funnel and draws a token, leaving `logits` as they are.
    ///
    /// The same draw as [`sample`](Self::sample). When the mask allows few tokens, only their
    /// logits are read after the input check; otherwise the logits are copied into a buffer
    /// the funnel keeps, so a caller whose logits belong to someone else (a model's output
    /// buffer) never copies them itself.
    ///
    /// # Errors
    ///
    /// See [`distribution`](Self::distribution).
    pub fn sample_from(
        &mut self,
        logits: &[f32],
        mask: Option<&[u32]>,
        history: &History,
        rng: &mut Xoshiro256StarStar,
    ) -> Result<u32, SamplingError> {
        self.run_from(logits, mask, history)?;
        self.candidates.draw(rng)
    }

    /// Verifies a drafted token that was proposed with certainty (a draft without a
    /// distribution of its own, such as a prompt lookup): the speculative rule with the draft
    /// a point mass `p` on `draft`, against `q`, this funnel's distribution for `logits`.
    ///
    /// Greedy (temperature 0): accepted exactly when `draft` is the funnel's choice, else the
    /// choice replaces it. Otherwise: accepted with probability `min(1, q(draft) / 1)`; on
    /// rejection the replacement is drawn from `normalize(max(0, q - p))`, which is `q`
    /// without `draft`. Either way the token that comes out is distributed as a token drawn
    /// from `q` (Leviathan et al. 2023), and the funnel's mask holds: a masked draft is always
    /// rejected.
    ///
    /// ```
    /// use constrain_sampling::{DraftCheck, Funnel, History, SamplerConfig, Xoshiro256StarStar};
    /// let mut funnel = Funnel::new(SamplerConfig::greedy())?;
    /// let mut rng = Xoshiro256StarStar::seed_from_u64(1);
    /// let history = History::new();
    /// let logits = [1.0, 3.0, 2.0];
    /// let accepted = funnel.verify_token(&logits, None, &history, 1, &mut rng)?;
    /// assert_eq!(accepted, DraftCheck::Accepted);
    /// let rejected = funnel.verify_token(&logits, None, &history, 2, &mut rng)?;
    /// assert_eq!(rejected, DraftCheck::Rejected { replacement: 1 });
    /// # Ok::<(), constrain_sampling::SamplingError>(())
    /// ```
    ///
    /// # Errors
    ///
    /// As [`distribution`](Self::distribution).
    pub fn verify_token(
        &mut self,
        logits: &[f32],
        mask: Option<&[u32]>,
        history: &History,
        draft: u32,
        rng: &mut Xoshiro256StarStar,
    ) -> Result<DraftCheck, SamplingError> {
        self.run_from(logits, mask, history)?;
        if is_greedy(self.config.temperature) {
            let choice = self.candidates.draw(rng)?;
            return Ok(if choice == draft {
                DraftCheck::Accepted
            } else {
                DraftCheck::Rejected {
                    replacement: choice,
                }
            });
        }
        let q = f64::from(self.candidates.probability(draft));
        if rng.next_f64() < q {
            return Ok(DraftCheck::Accepted);
        }
        Ok(DraftCheck::Rejected {
            replacement: self.candidates.draw_excluding(draft, rng)?,
        })
    }

    /// The distribution the last draw or verification came from (empty before the first).
    pub fn last_distribution(&self) -> &Distribution {
        &self.candidates
    }

    /// Runs the funnel on logits it must not change (see [`sample_from`](Self::sample_from)).
    fn run_from(
        &mut self,
        logits: &[f32],
        mask: Option<&[u32]>,
        history: &History,
    ) -> Result<(), SamplingError> {
        match self.route(logits, mask, history)? {
            Route::Sparse {
                active,
                mask,
                allowed,
            } => self.run_sparse(logits, mask, allowed, &active),
            Route::Dense(active) => {
                let mut buffer = std::mem::take(&mut self.dense);
                buffer.clear();
                buffer.extend_from_slice(logits);
                let ran = self.run_dense(&mut buffer, mask, &active);
                self.dense = buffer;
                ran
            }
        }
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

    /// The fast path: a sparse mask's tokens alone, or the whole vector (see [`run_dense`]).
    ///
    /// [`run_dense`]: Self::run_dense
    fn run(
        &mut self,
        logits: &mut [f32],
        mask: Option<&[u32]>,
        history: &History,
    ) -> Result<(), SamplingError> {
        match self.route(logits, mask, history)? {
            Route::Sparse {
                active,
                mask,
                allowed,
            } => self.run_sparse(logits, mask, allowed, &active),
            Route::Dense(active) => self.run_dense(logits, mask, &active),
        }
    }

    /// Checks the input, lists the stages and chooses how to run them.
    ///
    /// The sparse route needs the mask to come before every stage that is not a per-token
    /// function of the logit (cutoffs, the temperature, whose overflow guard reads the
    /// maximum): then restricting to the allowed tokens first changes nothing.
    fn route<'m>(
        &mut self,
        logits: &[f32],
        mask: Option<&'m [u32]>,
        history: &History,
    ) -> Result<Route<'m>, SamplingError> {
        let input_max = checked_max(logits)?;
        let mut active = self.prepare(mask.is_some(), history);
        active.run_top_k_before_temperature(self.config.temperature);
        if mask.is_none() && input_max == f32::NEG_INFINITY {
            return Err(SamplingError::NoTokenLeft { after: "input" });
        }
        if let Some(mask) = mask {
            let mask_comes_first = active
                .as_slice()
                .iter()
                .take_while(|&&stage| stage != Stage::GrammarMask)
                .all(|stage| stage.reads_token_ids());
            if mask_comes_first {
                let allowed = count_allowed(mask, logits.len());
                if allowed <= logits.len() / SPARSE_MASK_RATIO {
                    return Ok(Route::Sparse {
                        active,
                        mask,
                        allowed,
                    });
                }
            }
        }
        Ok(Route::Dense(active))
    }

    /// The tokens a sparse mask allows, gathered first; every stage then runs on that short
    /// list, with the same errors, in the same order, as on the whole vector.
    fn run_sparse(
        &mut self,
        logits: &[f32],
        mask: &[u32],
        allowed: usize,
        active: &ActiveStages,
    ) -> Result<(), SamplingError> {
        let width = logits.len();
        self.candidates.gather_allowed(logits, mask);
        let stages = active.as_slice();
        let last_id_stage = last_id_reading(stages);
        let config = &self.config;
        for (index, &stage) in stages.iter().enumerate() {
            let values = &mut self.candidates.probs;
            match stage {
                Stage::GrammarMask => {
                    if max_finite(values) == f32::NEG_INFINITY {
                        return Err(SamplingError::NoAllowedToken { allowed, width });
                    }
                }
                Stage::RepetitionPenalty => {
                    check_in_range(self.counts.max_token(), width, TokenOrigin::History)?;
                    for &(token, _) in self.counts.entries() {
                        if let Some(logit) = self.candidates.value_mut(token) {
                            *logit = repetition_penalized(*logit, config.repetition_penalty);
                        }
                    }
                }
                Stage::FrequencyPresencePenalty => {
                    check_in_range(self.counts.max_token(), width, TokenOrigin::History)?;
                    for &(token, count) in self.counts.entries() {
                        if let Some(logit) = self.candidates.value_mut(token) {
                            *logit = frequency_presence_penalized(
                                *logit,
                                count,
                                config.frequency_penalty,
                                config.presence_penalty,
                            );
                        }
                    }
                }
                Stage::LogitBias => {
                    let max_token = config.logit_bias.iter().map(|&(token, _)| token).max();
                    check_in_range(max_token, width, TokenOrigin::LogitBias)?;
                    for &(token, bias) in &config.logit_bias {
                        if let Some(logit) = self.candidates.value_mut(token) {
                            *logit += bias;
                        }
                    }
                }
                _ if is_cutoff(config, stage) => {
                    if cutoff_kept(config, stage, values, &mut self.scratch) {
                        self.candidates.retain_positions(self.scratch.kept());
                    }
                }
                _ => apply_temperature(values, config.temperature, &mut self.scratch),
            }
            if last_id_stage == Some(index) {
                self.candidates.retain_finite();
                if self.candidates.is_empty() {
                    return Err(SamplingError::NoTokenLeft {
                        after: stage.name(),
                    });
                }
            }
        }
        softmax(&mut self.candidates.probs)
    }

    /// The stages on the full vector until a cutoff may compact it, then on the short
    /// candidate list; softmax over the candidates.
    fn run_dense(
        &mut self,
        logits: &mut [f32],
        mask: Option<&[u32]>,
        active: &ActiveStages,
    ) -> Result<(), SamplingError> {
        let last_id_stage = last_id_reading(active.as_slice());
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::PenaltyWindow;

    /// Settings that exercise every stage, alone and together, in both stage orders that keep
    /// the sparse route (the canonical one, and the penalties before the mask).
    fn settings() -> Vec<(SamplerConfig, Vec<Stage>)> {
        let penalized = SamplerConfig {
            repetition_penalty: 1.3,
            frequency_penalty: 0.4,
            presence_penalty: 0.2,
            penalty_window: PenaltyWindow {
                last_n: None,
                include_prompt: true,
            },
            logit_bias: vec![(3, 2.0), (5, f32::NEG_INFINITY), (40, -1.0)],
            ..SamplerConfig::default()
        };
        let cut = SamplerConfig {
            temperature: 0.7,
            top_k: 5,
            top_p: 0.9,
            min_p: 0.05,
            typical_p: 0.95,
            ..penalized.clone()
        };
        let mut penalties_first = Stage::CANONICAL_ORDER.to_vec();
        penalties_first[..4].rotate_left(1);
        assert_eq!(penalties_first[3], Stage::GrammarMask);
        [
            SamplerConfig::default(),
            SamplerConfig::greedy(),
            penalized,
            cut.clone(),
            SamplerConfig {
                temperature: 0.0,
                ..cut
            },
        ]
        .into_iter()
        .flat_map(|config| {
            [
                (config.clone(), Stage::CANONICAL_ORDER.to_vec()),
                (config, penalties_first.clone()),
            ]
        })
        .collect()
    }

    #[test]
    fn sparse_masks_give_the_dense_result_bit_for_bit() {
        let mut rng = Xoshiro256StarStar::seed_from_u64(7);
        let mut sparse_runs = 0;
        for case in 0..3000 {
            let width = 32 + (rng.next_u64() % 600) as usize;
            let logits: Vec<f32> = (0..width)
                .map(|_| match rng.next_u64() % 20 {
                    0 => f32::NEG_INFINITY,
                    1 => 1.0, // ties
                    r => (r as f32 - 10.0) * 1.7 + (rng.next_f64() as f32),
                })
                .collect();
            // About one token in 40 allowed, sometimes none; a word past the logits' end.
            let mask: Vec<u32> = (0..width.div_ceil(32) + 1)
                .map(|_| {
                    let (a, b, c) = (rng.next_u64(), rng.next_u64(), rng.next_u64());
                    (a & b & c & (c >> 32) & (a >> 32)) as u32
                })
                .collect();
            let mut history = History::from_prompt(&[3, 5, 7]);
            for _ in 0..(case % 12) {
                history.push((rng.next_u64() % width as u64) as u32);
            }
            for (config, order) in settings() {
                let mut funnel = Funnel::with_order(config.clone(), &order).unwrap();
                let mut buffer = logits.clone();
                let Ok(route) = funnel.route(&logits, Some(&mask), &history) else {
                    unreachable!("valid input")
                };
                let sparse = match route {
                    Route::Sparse {
                        active,
                        mask,
                        allowed,
                    } => {
                        sparse_runs += 1;
                        funnel
                            .run_sparse(&logits, mask, allowed, &active)
                            .map(|()| funnel.candidates.clone())
                    }
                    Route::Dense(_) => continue,
                };
                let mut active = funnel.prepare(true, &history);
                active.run_top_k_before_temperature(config.temperature);
                let dense = funnel
                    .run_dense(&mut buffer, Some(&mask), &active)
                    .map(|()| funnel.candidates.clone());
                assert_eq!(sparse, dense, "case {case}, {config:?}, order {order:?}");
            }
        }
        assert!(sparse_runs > 10_000, "{sparse_runs} sparse runs");
    }

    #[test]
    fn sample_from_leaves_the_logits_and_draws_as_sample_does() {
        let width = 4096;
        let logits: Vec<f32> = (0..width)
            .map(|i| ((i * 7919) % 113) as f32 / 9.0)
            .collect();
        let sparse: Vec<u32> = (0..width / 32).map(|i| 1 << (i % 32)).collect();
        let dense = vec![0x5555_5555u32; width / 32];
        let history = History::from_prompt(&[1, 2, 3]);
        for mask in [None, Some(&sparse[..]), Some(&dense[..])] {
            for seed in 0..20 {
                let config = SamplerConfig {
                    temperature: 0.8,
                    top_k: 40,
                    ..SamplerConfig::default()
                };
                let mut funnel = Funnel::new(config).unwrap();
                let mut rng = Xoshiro256StarStar::seed_from_u64(seed);
                let from = funnel.sample_from(&logits, mask, &history, &mut rng);
                let mut rng = Xoshiro256StarStar::seed_from_u64(seed);
                let mut buffer = logits.clone();
                assert_eq!(from, funnel.sample(&mut buffer, mask, &history, &mut rng));
            }
        }
        let expected: Vec<f32> = (0..width)
            .map(|i| ((i * 7919) % 113) as f32 / 9.0)
            .collect();
        assert_eq!(logits, expected);
    }
}
