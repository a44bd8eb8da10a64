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

    /// The settings [`SamplerConfig::set`] takes by name: the names the command line's flags,
    /// the server's request fields and the Python keyword arguments use.
    pub const NAMES: [&'static str; 8] = [
        "temperature",
        "top_k",
        "top_p",
        "min_p",
        "typical_p",
        "repeat_penalty",
        "frequency_penalty",
        "presence_penalty",
    ];

    /// Sets the setting called `name` (one of [`SamplerConfig::NAMES`]; `repetition_penalty`
    /// is also understood) to `value`, checked against its range: the one mapping from a
    /// surface's settings to the funnel, with one set of error messages.
    ///
    /// ```
    /// use constrain_sampling::SamplerConfig;
    /// let mut config = SamplerConfig::default();
    /// config.set("temperature", 0.7)?;
    /// config.set("top_k", 40.0)?;
    /// assert_eq!(config.top_k, 40);
    /// let err = config.set("top_p", 1.5).unwrap_err();
    /// assert!(err.to_string().contains("top_p"));
    /// assert!(config.set("top_q", 0.5).is_err());
    /// # Ok::<(), constrain_sampling::SamplingError>(())
    /// ```
    ///
    /// # Errors
    ///
    /// [`SamplingError::InvalidSetting`] naming the setting when the value is out of range or
    /// the name unknown; the configuration is then unchanged.
    pub fn set(&mut self, name: &str, value: f64) -> Result<(), SamplingError> {
        let mut next = self.clone();
        let as_f32 = value as f32;
        match name {
            "temperature" => next.temperature = as_f32,
            "top_k" => {
                if !(value >= 0.0 && value.fract() == 0.0 && value <= usize::MAX as f64) {
                    return Err(SamplingError::InvalidSetting {
                        setting: "top_k",
                        value: value.to_string(),
                        expected: "a whole number >= 0 (0 = off)",
                    });
                }
                next.top_k = value as usize;
            }
            "top_p" => next.top_p = as_f32,
            "min_p" => next.min_p = as_f32,
            "typical_p" => next.typical_p = as_f32,
            "repeat_penalty" | "repetition_penalty" => next.repetition_penalty = as_f32,
            "frequency_penalty" => next.frequency_penalty = as_f32,
            "presence_penalty" => next.presence_penalty = as_f32,
            _ => {
                return Err(SamplingError::InvalidSetting {
                    setting: "name",
                    value: name.to_string(),
                    expected: "one of temperature, top_k, top_p, min_p, typical_p, \
                               repeat_penalty, frequency_penalty, presence_penalty",
                })
            }
        }
        // A value that no f32 holds (1e39 becomes infinite) fails the range check here.
        next.validate()?;
        *self = next;
        Ok(())
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
    fn settings_are_set_by_name_with_one_check() {
        let mut config = SamplerConfig::default();
        for name in SamplerConfig::NAMES {
            let value = if name == "top_k" { 3.0 } else { 0.5 };
            config.set(name, value).unwrap();
        }
        assert_eq!(config.top_k, 3);
        assert_eq!(config.repetition_penalty, 0.5);
        config.set("repetition_penalty", 1.25).unwrap();
        assert_eq!(config.repetition_penalty, 1.25);
        for (name, value) in [
            ("temperature", -1.0),
            ("temperature", 1e39),
            ("top_k", 2.5),
            ("top_k", -1.0),
            ("top_p", 2.0),
            ("repeat_penalty", 0.0),
            ("presence_penalty", f64::NAN),
        ] {
            let before = config.clone();
            match config.set(name, value) {
                Err(SamplingError::InvalidSetting { setting, .. }) => {
                    let expected = if name == "repeat_penalty" {
                        "repetition_penalty"
                    } else {
                        name
                    };
                    assert_eq!(setting, expected, "{name} = {value}");
                }
                other => panic!("{name} = {value}: {other:?}"),
            }
            assert_eq!(
                config, before,
                "a refused setting leaves the rest as it was"
            );
        }
        assert!(config.set("top_q", 0.5).is_err());
    }

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
