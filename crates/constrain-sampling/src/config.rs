//! The settings of the funnel and their validation.

use crate::SamplingError;

/// Which recent tokens the repetition, frequency and presence penalties look at.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PenaltyWindow {
    /// How many of the most recent tokens count; `None` counts the whole history.
    pub last_n: Option<usize>,
    /// Whether prompt tokens count (`false`: only generated tokens, OpenAI's convention).
    pub include_prompt: bool,
}

impl Default for PenaltyWindow {
    /// The last 64 tokens, prompt included (llama.cpp's default window).
    fn default() -> Self {
        PenaltyWindow {
            last_n: Some(64),
            include_prompt: true,
        }
    }
}

/// Every setting of the funnel. Each stage has a neutral value that switches it off; the
/// [`Default`] is all neutral, which samples from the model's own distribution.
///
/// ```
/// use constrain_sampling::SamplerConfig;
/// let config = SamplerConfig {
///     temperature: 0.8,
///     top_k: 40,
///     top_p: 0.95,
///     min_p: 0.05,
///     repetition_penalty: 1.1,
///     ..SamplerConfig::default()
/// };
/// assert!(config.validate().is_ok());
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct SamplerConfig {
    /// Divides the logits; 0 means greedy (only the most likely token survives). Neutral: 1.
    pub temperature: f32,
    /// Keeps the `k` most likely tokens. Neutral: 0 (off).
    pub top_k: usize,
    /// Keeps the smallest set of most likely tokens whose mass reaches `p`. Neutral: 1.
    pub top_p: f32,
    /// Keeps the tokens with `p_i >= min_p * p_max`. Neutral: 0.
    pub min_p: f32,
    /// Keeps the smallest set of most *typical* tokens whose mass reaches `p`. Neutral: 1.
    pub typical_p: f32,
    /// CTRL's multiplicative penalty on tokens of the window: positive logits are divided by
    /// it, negative ones multiplied. Neutral: 1.
    pub repetition_penalty: f32,
    /// Subtracted from a token's logit once per occurrence in the window. Neutral: 0.
    pub frequency_penalty: f32,
    /// Subtracted from a token's logit if it occurs in the window at all. Neutral: 0.
    pub presence_penalty: f32,
    /// The tokens the three penalties look at.
    pub penalty_window: PenaltyWindow,
    /// Added to the logits of these tokens (entries for the same token add up). `-inf` bans a
    /// token; `+inf` is refused (forcing a token is the grammar's job).
    pub logit_bias: Vec<(u32, f32)>,
}

impl Default for SamplerConfig {
    fn default() -> Self {
        SamplerConfig {
            temperature: 1.0,
            top_k: 0,
            top_p: 1.0,
            min_p: 0.0,
            typical_p: 1.0,
            repetition_penalty: 1.0,
            frequency_penalty: 0.0,
            presence_penalty: 0.0,
            penalty_window: PenaltyWindow::default(),
            logit_bias: Vec::new(),
        }
    }
}

impl SamplerConfig {
    /// Greedy decoding: always the most likely allowed token (lowest id on ties).
    pub fn greedy() -> Self {
        SamplerConfig {
            temperature: 0.0,
            ..SamplerConfig::default()
        }
    }

    /// Checks every setting against its range.
    ///
    /// # Errors
    ///
    /// [`SamplingError::InvalidSetting`] naming the first setting out of range.
    pub fn validate(&self) -> Result<(), SamplingError> {
        check(
            "temperature",
            self.temperature,
            self.temperature.is_finite() && self.temperature >= 0.0,
            "a finite number >= 0 (0 = greedy)",
        )?;
        check_unit("top_p", self.top_p)?;
        check_unit("min_p", self.min_p)?;
        check_unit("typical_p", self.typical_p)?;
        check(
            "repetition_penalty",
            self.repetition_penalty,
            self.repetition_penalty.is_finite() && self.repetition_penalty > 0.0,
            "a finite number > 0 (1 = off)",
        )?;
        check(
            "frequency_penalty",
            self.frequency_penalty,
            self.frequency_penalty.is_finite(),
            "a finite number (0 = off)",
        )?;
        check(
            "presence_penalty",
            self.presence_penalty,
            self.presence_penalty.is_finite(),
            "a finite number (0 = off)",
        )?;
        for &(token, bias) in &self.logit_bias {
            if bias.is_nan() || bias == f32::INFINITY {
                return Err(SamplingError::InvalidSetting {
                    setting: "logit_bias",
                    value: format!("{token}: {bias}"),
                    expected: "a finite bias or -inf (to ban the token)",
                });
            }
        }
        Ok(())
    }
}

fn check(
    setting: &'static str,
    value: f32,
    ok: bool,
    expected: &'static str,
) -> Result<(), SamplingError> {
    if ok {
        Ok(())
    } else {
        Err(SamplingError::InvalidSetting {
            setting,
            value: value.to_string(),
            expected,
        })
    }
}

fn check_unit(setting: &'static str, value: f32) -> Result<(), SamplingError> {
    check(
        setting,
        value,
        (0.0..=1.0).contains(&value),
        "a number in [0, 1]",
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_are_valid_and_out_of_range_settings_are_named() {
        assert!(SamplerConfig::default().validate().is_ok());
        assert!(SamplerConfig::greedy().validate().is_ok());
        let bad = [
            SamplerConfig {
                temperature: -0.1,
                ..Default::default()
            },
            SamplerConfig {
                temperature: f32::NAN,
                ..Default::default()
            },
            SamplerConfig {
                top_p: 1.5,
                ..Default::default()
            },
            SamplerConfig {
                min_p: -0.5,
                ..Default::default()
            },
            SamplerConfig {
                typical_p: f32::NAN,
                ..Default::default()
            },
            SamplerConfig {
                repetition_penalty: 0.0,
                ..Default::default()
            },
            SamplerConfig {
                frequency_penalty: f32::INFINITY,
                ..Default::default()
            },
            SamplerConfig {
                presence_penalty: f32::NAN,
                ..Default::default()
            },
            SamplerConfig {
                logit_bias: vec![(3, f32::INFINITY)],
                ..Default::default()
            },
        ];
        let names = [
            "temperature",
            "temperature",
            "top_p",
            "min_p",
            "typical_p",
            "repetition_penalty",
            "frequency_penalty",
            "presence_penalty",
            "logit_bias",
        ];
        for (config, name) in bad.iter().zip(names) {
            match config.validate() {
                Err(SamplingError::InvalidSetting { setting, .. }) => assert_eq!(setting, name),
                other => panic!("{name}: {other:?}"),
            }
        }
        let ban = SamplerConfig {
            logit_bias: vec![(3, f32::NEG_INFINITY)],
            ..Default::default()
        };
        assert!(ban.validate().is_ok());
    }
}
