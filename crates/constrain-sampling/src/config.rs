//! The settings of the funnel and their validation.
//!
//! Every surface reaches these settings the same way: the command line's flags, the server's
//! request fields, Python's keyword arguments and JSON settings files name them (see
//! [`SamplerConfig::NAMES`]) and go through [`SamplerConfig::set`], so a value out of range gets
//! the same message wherever it came from.

use std::fmt;

use serde::de::{self, MapAccess, Visitor};
use serde::ser::SerializeStruct;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::SamplingError;

/// Which recent tokens the repetition, frequency and presence penalties look at.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
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
    /// [`SamplingError::InvalidSetting`] naming the setting as the caller did when the value is
    /// out of range or the name unknown; the configuration is then unchanged.
    pub fn set(&mut self, name: &str, value: f64) -> Result<(), SamplingError> {
        let Some(setting) = Self::NAMES
            .iter()
            .copied()
            .chain(["repetition_penalty"])
            .find(|known| *known == name)
        else {
            return Err(SamplingError::InvalidSetting {
                setting: "name",
                value: name.to_string(),
                expected: "one of temperature, top_k, top_p, min_p, typical_p, \
                           repeat_penalty, frequency_penalty, presence_penalty",
            });
        };
        let mut next = self.clone();
        let as_f32 = value as f32;
        match setting {
            "temperature" => next.temperature = as_f32,
            "top_k" => {
                if !(value >= 0.0 && value.fract() == 0.0 && value <= usize::MAX as f64) {
                    return Err(SamplingError::InvalidSetting {
                        setting,
                        value: value.to_string(),
                        expected: "a whole number >= 0 (0 = off)",
                    });
                }
                next.top_k = value as usize;
            }
            "top_p" => next.top_p = as_f32,
            "min_p" => next.min_p = as_f32,
            "typical_p" => next.typical_p = as_f32,
            "frequency_penalty" => next.frequency_penalty = as_f32,
            "presence_penalty" => next.presence_penalty = as_f32,
            _ => next.repetition_penalty = as_f32,
        }
        // A value that no f32 holds (1e39 becomes infinite) fails the range check here; the
        // error names the setting the way the caller did.
        next.validate().map_err(|e| match e {
            SamplingError::InvalidSetting {
                value, expected, ..
            } => SamplingError::InvalidSetting {
                setting,
                value,
                expected,
            },
            other => other,
        })?;
        *self = next;
        Ok(())
    }

    /// These settings over `self`, each given by name as in [`set`](Self::set); a `None`
    /// keeps the setting as it is (a request that leaves a field out keeps the server's
    /// default).
    ///
    /// ```
    /// use constrain_sampling::SamplerConfig;
    /// let config = SamplerConfig::greedy()
    ///     .with_settings([("top_k", Some(40.0)), ("temperature", None)])?;
    /// assert_eq!((config.temperature, config.top_k), (0.0, 40));
    /// # Ok::<(), constrain_sampling::SamplingError>(())
    /// ```
    ///
    /// # Errors
    ///
    /// The first refused setting, as [`set`](Self::set) reports it.
    pub fn with_settings<'a>(
        &self,
        settings: impl IntoIterator<Item = (&'a str, Option<f64>)>,
    ) -> Result<SamplerConfig, SamplingError> {
        let mut config = self.clone();
        for (name, value) in settings {
            if let Some(value) = value {
                config.set(name, value)?;
            }
        }
        Ok(config)
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

/// Written with the names of [`SamplerConfig::NAMES`], so what is written reads back; a
/// banned token's bias (`-inf`, which JSON has no number for) is written as `"-inf"`.
impl Serialize for SamplerConfig {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut out = serializer.serialize_struct("SamplerConfig", 10)?;
        out.serialize_field("temperature", &self.temperature)?;
        out.serialize_field("top_k", &self.top_k)?;
        out.serialize_field("top_p", &self.top_p)?;
        out.serialize_field("min_p", &self.min_p)?;
        out.serialize_field("typical_p", &self.typical_p)?;
        out.serialize_field("repeat_penalty", &self.repetition_penalty)?;
        out.serialize_field("frequency_penalty", &self.frequency_penalty)?;
        out.serialize_field("presence_penalty", &self.presence_penalty)?;
        out.serialize_field("penalty_window", &self.penalty_window)?;
        let bias: Vec<(u32, Bias)> = self
            .logit_bias
            .iter()
            .map(|&(token, bias)| (token, Bias(bias)))
            .collect();
        out.serialize_field("logit_bias", &bias)?;
        out.end()
    }
}

/// Read setting by setting through [`SamplerConfig::set`] over the defaults, so a settings
/// file is refused with the same messages as a flag or a request field; unknown names are
/// refused too.
impl<'de> Deserialize<'de> for SamplerConfig {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_map(ConfigVisitor)
    }
}

struct ConfigVisitor;

impl<'de> Visitor<'de> for ConfigVisitor {
    type Value = SamplerConfig;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a map of sampling settings")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<SamplerConfig, A::Error> {
        let mut config = SamplerConfig::default();
        while let Some(name) = map.next_key::<String>()? {
            match name.as_str() {
                "penalty_window" => config.penalty_window = map.next_value()?,
                "logit_bias" => {
                    let bias: Vec<(u32, Bias)> = map.next_value()?;
                    config.logit_bias = bias.into_iter().map(|(t, b)| (t, b.0)).collect();
                }
                _ => {
                    let value: f64 = map.next_value()?;
                    config.set(&name, value).map_err(de::Error::custom)?;
                }
            }
        }
        config.validate().map_err(de::Error::custom)?;
        Ok(config)
    }
}

/// A logit bias as JSON holds it: a number, or `"-inf"` for a banned token.
struct Bias(f32);

impl Serialize for Bias {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        if self.0 == f32::NEG_INFINITY {
            serializer.serialize_str("-inf")
        } else {
            serializer.serialize_f32(self.0)
        }
    }
}

impl<'de> Deserialize<'de> for Bias {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Written {
            Number(f32),
            Text(String),
        }
        match Written::deserialize(deserializer)? {
            Written::Number(bias) => Ok(Bias(bias)),
            Written::Text(text) if text == "-inf" => Ok(Bias(f32::NEG_INFINITY)),
            Written::Text(text) => Err(de::Error::custom(format!(
                "invalid logit bias {text:?}: expected a number or \"-inf\""
            ))),
        }
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
                    assert_eq!(setting, name, "the error names the setting as it was given");
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
    fn settings_read_from_json_go_through_set() {
        let config: SamplerConfig = serde_json::from_str(
            r#"{"temperature": 0.5, "top_k": 40, "repetition_penalty": 1.1,
                "penalty_window": {"last_n": null, "include_prompt": false},
                "logit_bias": [[3, -1.5], [7, "-inf"]]}"#,
        )
        .unwrap();
        assert_eq!(config.temperature, 0.5);
        assert_eq!(config.top_k, 40);
        assert_eq!(config.repetition_penalty, 1.1);
        assert_eq!(config.penalty_window.last_n, None);
        assert_eq!(config.logit_bias, [(3, -1.5), (7, f32::NEG_INFINITY)]);
        let written = serde_json::to_string(&config).unwrap();
        let read: SamplerConfig = serde_json::from_str(&written).unwrap();
        assert_eq!(read, config, "{written}");

        // The same message as the setting given by name.
        let from_json = serde_json::from_str::<SamplerConfig>(r#"{"top_p": 1.5}"#)
            .unwrap_err()
            .to_string();
        let by_name = SamplerConfig::default()
            .set("top_p", 1.5)
            .unwrap_err()
            .to_string();
        assert!(from_json.starts_with(&by_name), "{from_json} / {by_name}");
        for bad in [
            r#"{"top_q": 0.5}"#,
            r#"{"top_k": 1.5}"#,
            r#"{"logit_bias": [[1, "+inf"]]}"#,
            r#"{"penalty_window": {"last": 3}}"#,
        ] {
            assert!(serde_json::from_str::<SamplerConfig>(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn with_settings_keeps_what_is_not_given() {
        let base = SamplerConfig {
            top_p: 0.9,
            ..SamplerConfig::greedy()
        };
        let config = base
            .with_settings([("temperature", Some(0.8)), ("top_p", None)])
            .unwrap();
        assert_eq!((config.temperature, config.top_p), (0.8, 0.9));
        assert!(base.with_settings([("min_p", Some(-1.0))]).is_err());
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
