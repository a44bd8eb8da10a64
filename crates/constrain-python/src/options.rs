//! The keyword arguments of `compile_json_schema` and `compile_any_json`, read into the schema
//! compiler's `Options`.
//!
//! Every field of `Options` has a keyword; an unknown keyword or a value of the wrong kind is a
//! `TypeError` / `ValueError` naming it, so a misspelt option never passes silently.

use std::time::Duration;

use constrain::{
    AdditionalProperties, Escapes, Numbers, PropertyOrder, SchemaOptions as Options, Separators,
    Whitespace,
};
use constrain_engine::Limits;
use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyString};

/// The keywords `options_from_kwargs` understands, for the error message.
const KEYWORDS: &str = "whitespace, max_whitespace, indent, separators, additional_properties, \
                        strict, lenient, property_order, escapes, numbers, max_untyped_depth, \
                        max_any_order_properties, assert_formats, max_compile_time, resources";

/// The budgets (`constrain_engine::Limits`) from the keyword arguments named after them
/// (`max_states=50_000`, `max_compile_time=2.5` or `None`); `skip` names keywords that are
/// not limits (handled by the caller); any other keyword is a `TypeError`.
pub fn limits_from_kwargs(kwargs: Option<&Bound<'_, PyDict>>, skip: &[&str]) -> PyResult<Limits> {
    let mut limits = Limits::default();
    let Some(kwargs) = kwargs else {
        return Ok(limits);
    };
    for (key, value) in kwargs.iter() {
        let key: String = key.extract()?;
        if skip.contains(&key.as_str()) {
            continue;
        }
        if !Limits::NAMES.iter().any(|(name, _)| *name == key) {
            let names: Vec<&str> = Limits::NAMES.iter().map(|(n, _)| *n).collect();
            return Err(PyTypeError::new_err(format!(
                "unknown keyword argument {key:?}; the limits are: {}",
                names.join(", ")
            )));
        }
        let text = if value.is_none() {
            "none".to_string()
        } else if value.is_instance_of::<pyo3::types::PyBool>() {
            return Err(PyValueError::new_err(format!(
                "{key}={value}: expected a number"
            )));
        } else {
            value.str()?.to_cow()?.into_owned()
        };
        limits.set(&key, &text).map_err(PyValueError::new_err)?;
    }
    Ok(limits)
}

/// The schema compiler's options and the budgets from `kwargs` (all optional; defaults as the
/// Rust crates'). `max_compile_time` (seconds, or `None`) is read here, into the budgets.
pub fn options_from_kwargs(kwargs: Option<&Bound<'_, PyDict>>) -> PyResult<(Options, Limits)> {
    let mut options = Options::default();
    let Some(kwargs) = kwargs else {
        return Ok((options, Limits::default()));
    };
    let schema_keys: Vec<&str> = KEYWORDS.split(',').map(str::trim).collect();
    for key in kwargs.keys() {
        let key: String = key.extract()?;
        if !schema_keys.contains(&key.as_str()) && !Limits::NAMES.iter().any(|(n, _)| *n == key) {
            let names: Vec<&str> = Limits::NAMES.iter().map(|(n, _)| *n).collect();
            return Err(PyTypeError::new_err(format!(
                "unknown schema option {key:?}; the options are: {KEYWORDS}; the limits are: {}",
                names.join(", ")
            )));
        }
    }
    let mut limits = limits_from_kwargs(Some(kwargs), &schema_keys)?;
    let kwargs_ = kwargs;
    let kwargs = PyDict::new(kwargs.py());
    for (key, value) in kwargs_.iter() {
        let name: String = key.extract()?;
        if schema_keys.contains(&name.as_str()) {
            kwargs.set_item(key, value)?;
        }
    }
    let mut max_whitespace: Option<u32> = None;
    let mut whitespace: Option<String> = None;
    let mut indent: Option<u32> = None;
    for (key, value) in kwargs.iter() {
        let key: String = key.extract()?;
        let bad =
            |expected: &str| PyValueError::new_err(format!("{key}={value}: expected {expected}"));
        if value.is_none() && key != "max_compile_time" {
            continue;
        }
        match key.as_str() {
            "whitespace" => whitespace = Some(value.extract()?),
            "max_whitespace" => max_whitespace = Some(value.extract()?),
            "indent" => indent = Some(value.extract()?),
            "separators" => {
                let (item, key_sep): (String, String) = value
                    .extract()
                    .map_err(|_| bad("a pair of strings (item separator, key separator)"))?;
                options.separators = Some(Separators { item, key: key_sep });
            }
            "additional_properties" => {
                options.additional_properties = match value.extract::<String>()?.as_str() {
                    "spec" => AdditionalProperties::Spec,
                    "strict" => AdditionalProperties::Strict,
                    _ => return Err(bad("\"spec\" or \"strict\"")),
                }
            }
            "strict" => {
                options.additional_properties = if value.extract::<bool>()? {
                    AdditionalProperties::Strict
                } else {
                    AdditionalProperties::Spec
                }
            }
            "lenient" => options.lenient = value.extract()?,
            "property_order" => {
                options.property_order = match value.extract::<String>()?.as_str() {
                    "schema" => PropertyOrder::Schema,
                    "any" => PropertyOrder::Any,
                    _ => return Err(bad("\"schema\" or \"any\"")),
                }
            }
            "escapes" => {
                options.escapes = match value.extract::<String>()?.as_str() {
                    "any" => Escapes::Any,
                    "canonical" => Escapes::Canonical,
                    _ => return Err(bad("\"any\" or \"canonical\"")),
                }
            }
            "numbers" => {
                options.numbers = match value.extract::<String>()?.as_str() {
                    "canonical" => Numbers::Canonical,
                    "any" => Numbers::Any,
                    _ => return Err(bad("\"canonical\" or \"any\"")),
                }
            }
            "max_untyped_depth" => options.max_untyped_depth = value.extract()?,
            "max_any_order_properties" => options.max_any_order_properties = value.extract()?,
            "assert_formats" => options.assert_formats = value.extract()?,
            "max_compile_time" => {
                limits.max_compile_time = if value.is_none() {
                    None
                } else {
                    let seconds: f64 = value.extract()?;
                    Some(
                        Duration::try_from_secs_f64(seconds)
                            .map_err(|_| bad("a number of seconds >= 0, or None"))?,
                    )
                }
            }
            "resources" => {
                let dict = value
                    .cast::<PyDict>()
                    .map_err(|_| bad("a dict from URI to schema (dict or JSON text)"))?;
                for (uri, schema) in dict.iter() {
                    let uri: String = uri.extract()?;
                    let schema = schema_value(&schema)
                        .map_err(|e| PyValueError::new_err(format!("resources[{uri:?}]: {e}")))?;
                    options.resources.insert(uri, schema);
                }
            }
            _ => {
                return Err(PyTypeError::new_err(format!(
                    "unknown schema option {key:?}; the options are: {KEYWORDS}"
                )))
            }
        }
    }
    options.whitespace = match (whitespace.as_deref(), indent) {
        (Some(mode), Some(_)) if mode != "indented" => {
            return Err(PyValueError::new_err(format!(
                "indent is given, and whitespace={mode:?}: indent implies whitespace=\"indented\""
            )))
        }
        (_, Some(n)) => Whitespace::Indented(n),
        (Some("indented"), None) => {
            return Err(PyValueError::new_err(
                "whitespace=\"indented\" needs indent=<spaces per level>",
            ))
        }
        (None | Some("bounded"), None) => Whitespace::Bounded {
            max: max_whitespace.unwrap_or(Whitespace::DEFAULT_MAX),
        },
        (Some("unbounded"), None) => Whitespace::Unbounded,
        (Some("compact"), None) => Whitespace::Compact,
        (Some(other), None) => {
            return Err(PyValueError::new_err(format!(
                "whitespace={other:?}: expected \"bounded\", \"unbounded\", \"compact\" or \
                 \"indented\""
            )))
        }
    };
    if max_whitespace.is_some() && !matches!(options.whitespace, Whitespace::Bounded { .. }) {
        return Err(PyValueError::new_err(
            "max_whitespace applies only to whitespace=\"bounded\"",
        ));
    }
    Ok((options, limits))
}

/// A schema given as JSON text or as a Python value (dict, list, bool...).
pub fn schema_value(schema: &Bound<'_, PyAny>) -> Result<serde_json::Value, String> {
    if let Ok(text) = schema.cast::<PyString>() {
        let text = text.to_cow().map_err(|e| e.to_string())?;
        return serde_json::from_str(&text).map_err(|e| {
            format!(
                "schema is not valid JSON at line {}, column {}: {e}",
                e.line(),
                e.column()
            )
        });
    }
    pythonize::depythonize(schema).map_err(|e| format!("not a JSON value: {e}"))
}
