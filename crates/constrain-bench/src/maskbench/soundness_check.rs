//! Soundness of one schema's masks: documents drawn at random through the masks (see
//! [`super::sample`]) must all validate against the schema with an independent validator
//! (the `jsonschema` crate). A document that does not is the worst kind of bug: the engine let
//! a model write output that breaks the contract.

use std::sync::Arc;

use constrain::{Constraint, WarningKind};
use constrain_engine::{CompiledGrammar, Limits, Matcher, TokenIndex};
use serde_json::Value;

use super::json_text::Json;
use super::sample::{Rng, WalkLimits, Walker};

/// What to check per schema.
#[derive(Clone, Debug)]
pub struct CheckOptions {
    /// Documents drawn per schema.
    pub documents: usize,
    /// Length limits of each walk.
    pub walk: WalkLimits,
    /// Engine budgets.
    pub limits: Limits,
    /// The schema compiler's options.
    pub schema: constrain::SchemaOptions,
    /// A token budget for every document (`Matcher::set_token_budget`): each must then end
    /// complete within it.
    pub budget: Option<usize>,
}

impl Default for CheckOptions {
    fn default() -> CheckOptions {
        CheckOptions {
            documents: 20,
            walk: WalkLimits::default(),
            limits: Limits::default(),
            // Every spelling, as the walks have always drawn.
            schema: constrain::SchemaOptions {
                numbers: constrain::Numbers::Any,
                ..constrain::SchemaOptions::default()
            },
            budget: None,
        }
    }
}

/// The result for one schema.
#[derive(Debug)]
pub enum SchemaCheck {
    /// Our compiler refused the schema (not a soundness question).
    NotCompiled(String),
    /// The reference validator cannot use the schema, so nothing can be checked.
    NoValidator(String),
    /// Documents were drawn and checked.
    Checked(Checked),
}

/// Counts and failures of the documents of one schema.
#[derive(Debug, Default)]
pub struct Checked {
    /// Complete documents validated.
    pub validated: usize,
    /// Walks that ran out of tokens before the document was complete.
    pub unfinished: usize,
    /// The text of the first unfinished walk, to see where walks get stuck.
    pub unfinished_example: Option<String>,
    /// Complete documents the reference validator cannot judge (integers beyond 64 bits,
    /// numbers beyond `f64`).
    pub unverifiable: usize,
    /// Documents that broke the schema, and walks that failed.
    pub failures: Vec<Failure>,
}

/// One bad document.
#[derive(Debug)]
pub struct Failure {
    /// Index of the document (its random stream is `Rng::for_item(schema id, index)`).
    pub document: usize,
    /// The document's text (lossy UTF-8).
    pub text: String,
    /// What is wrong with it.
    pub problem: String,
}

/// Schemas the reference validator is known to judge wrongly, and why.
const REFERENCE_VALIDATOR_IS_WRONG: &[(&str, &str)] = &[(
    "Github_medium---o58776.json",
    "its regex engine reads the pattern `^[[a-z]*[-]?[a-z]*]*$` as a nested class; in \
         ECMA-262 `[[a-z]` is a class holding `[` and a-z, so `\"]\"` matches",
)];

/// Compiles `schema`, draws `options.documents` documents and validates each.
pub fn check_schema(
    id: &str,
    schema: &Value,
    index: &Arc<TokenIndex>,
    options: &CheckOptions,
) -> SchemaCheck {
    let front_end = constrain::CompileOptions {
        schema: options.schema.clone(),
        limits: constrain::Limits::default(),
    };
    let compiled = match Constraint::JsonSchema(schema.clone()).build(&front_end) {
        Ok(compiled) => compiled,
        Err(err) => return SchemaCheck::NotCompiled(err.to_string()),
    };
    let grammar =
        match CompiledGrammar::new(&compiled.grammar, index.clone(), options.limits.clone()) {
            Ok(grammar) => grammar,
            Err(err) => return SchemaCheck::NotCompiled(err.to_string()),
        };
    if let Some((_, why)) = REFERENCE_VALIDATOR_IS_WRONG
        .iter()
        .find(|(known, _)| *known == id)
    {
        return SchemaCheck::NoValidator(why.to_string());
    }
    let validator = match reference_validator(schema, &compiled.warnings) {
        Ok(validator) => validator,
        Err(err) => return SchemaCheck::NoValidator(err),
    };
    // Draft 4 counts only numbers written without fraction or exponent as integers; later
    // drafts count every number with a zero fractional part.
    let integral_floats_are_integers = !schema
        .get("$schema")
        .and_then(Value::as_str)
        .is_some_and(|uri| uri.contains("draft-04") || uri.contains("draft-03"));
    let multiple_of = mentions_multiple_of(schema);
    let walker = Walker::new(grammar.vocabulary(), options.walk);
    let mut initial = Matcher::new(grammar);
    if let Err(err) = initial.set_token_budget(options.budget) {
        return SchemaCheck::NotCompiled(format!("token budget: {err}"));
    }
    let mut checked = Checked::default();
    for document in 0..options.documents {
        let mut rng = Rng::for_item(id, document as u64);
        let mut matcher = initial.clone();
        let drawn = match walker.walk(&mut matcher, &mut rng) {
            Ok(drawn) => drawn,
            Err((err, partial)) => {
                checked.failures.push(Failure {
                    document,
                    text: String::from_utf8_lossy(&partial.bytes).into_owned(),
                    problem: format!("walk failed: {err}"),
                });
                continue;
            }
        };
        let text = String::from_utf8_lossy(&drawn.bytes).into_owned();
        if let Some(budget) = options.budget {
            if !drawn.complete || drawn.tokens.len() > budget {
                checked.failures.push(Failure {
                    document,
                    problem: format!(
                        "under a budget of {budget} tokens: {} after {} tokens",
                        if drawn.complete {
                            "complete"
                        } else {
                            "unfinished"
                        },
                        drawn.tokens.len()
                    ),
                    text,
                });
                continue;
            }
        }
        if !drawn.complete {
            checked.unfinished += 1;
            checked.unfinished_example.get_or_insert(text);
            continue;
        }
        let problem = match std::str::from_utf8(&drawn.bytes) {
            Err(err) => Some(format!("not UTF-8: {err}")),
            Ok(utf8) => match Json::parse(utf8) {
                Err(err) => Some(format!("not JSON: {err}")),
                Ok(document) => match reference_instance(&document, integral_floats_are_integers) {
                    None => {
                        checked.unverifiable += 1;
                        continue;
                    }
                    Some(instance) => {
                        match first_real_error(&validator, &instance, &document, multiple_of) {
                            Ok(error) => error,
                            Err(Undecidable) => {
                                checked.unverifiable += 1;
                                continue;
                            }
                        }
                    }
                },
            },
        };
        match problem {
            None => checked.validated += 1,
            Some(problem) => checked.failures.push(Failure {
                document,
                text,
                problem,
            }),
        }
    }
    SchemaCheck::Checked(checked)
}

/// The integers `f64` holds exactly: up to 2^53.
const EXACT_F64_INTEGERS: f64 = 9_007_199_254_740_992.0;

/// A `multipleOf` error the reference validator reports that exact arithmetic cannot settle.
struct Undecidable;

/// The first validation error that is not an artifact of the validator's binary floating
/// point: it checks `multipleOf` in `f64`, where `-109` is "not a multiple of 0.01"; such
/// errors are checked again in exact decimal arithmetic on the number as written, also inside
/// the branches of `anyOf` and `oneOf`. `multiple_of`: the schema has `multipleOf`.
fn first_real_error(
    validator: &jsonschema::Validator,
    instance: &Value,
    document: &Json,
    multiple_of: bool,
) -> Result<Option<String>, Undecidable> {
    // Where f64 may misjudge a multiple either way, a `not` or a `oneOf` of several valid
    // branches cannot be told real.
    let inexact = multiple_of && has_numbers_beyond_f64(document);
    for error in validator.iter_errors(instance) {
        if is_real(&error, document, inexact)? {
            let pointer = error.instance_path.to_string();
            return Ok(Some(format!("invalid at '{pointer}': {error}")));
        }
    }
    Ok(None)
}

/// Whether the validator's `error` stands in exact arithmetic (see [`first_real_error`]).
fn is_real(
    error: &jsonschema::ValidationError,
    document: &Json,
    inexact: bool,
) -> Result<bool, Undecidable> {
    use jsonschema::error::ValidationErrorKind as Kind;
    let pointer = error.instance_path.to_string();
    match &error.kind {
        Kind::MultipleOf { multiple_of } => {
            let Some(Json::Number(text)) = lookup(document, &pointer) else {
                return Err(Undecidable);
            };
            match is_exact_multiple(text, &multiple_of.to_string()) {
                Some(multiple) => Ok(!multiple),
                None => Err(Undecidable),
            }
        }
        Kind::Pattern { .. } => match lookup(document, &pointer) {
            Some(Json::String(text)) if text.chars().any(is_space_the_validator_misses) => {
                Err(Undecidable)
            }
            _ => Ok(true),
        },
        Kind::AnyOf { context } | Kind::OneOfNotValid { context } => {
            // Branches that pass once the artifacts are set aside.
            let mut passing = 0;
            let mut undecided = false;
            for branch in context {
                let mut fails = false;
                let mut unsure = false;
                for e in branch {
                    match is_real(e, document, inexact) {
                        Ok(true) => {
                            fails = true;
                            break;
                        }
                        Ok(false) => {}
                        Err(Undecidable) => unsure = true,
                    }
                }
                if !fails {
                    if unsure {
                        undecided = true;
                    } else {
                        passing += 1;
                    }
                }
            }
            let is_any_of = matches!(error.kind, Kind::AnyOf { .. });
            match (passing, undecided) {
                (0, false) => Ok(true),
                (0, true) => Err(Undecidable),
                // `oneOf`: exactly one branch may pass.
                (1, false) => Ok(false),
                (_, _) if is_any_of => Ok(false),
                (_, true) => Err(Undecidable),
                (_, false) => Ok(true),
            }
        }
        Kind::Not { .. } | Kind::OneOfMultipleValid { .. } if inexact => Err(Undecidable),
        _ => Ok(true),
    }
}

/// Whether `document` has a number that `f64` does not hold exactly: beyond 2^53, or with a
/// fraction or an exponent.
fn has_numbers_beyond_f64(document: &Json) -> bool {
    match document {
        Json::Number(text) => text
            .trim_start_matches('-')
            .parse::<u64>()
            .map_or(true, |n| n > EXACT_F64_INTEGERS as u64),
        Json::Array(items) => items.iter().any(has_numbers_beyond_f64),
        Json::Object(members) => members.iter().any(|(_, v)| has_numbers_beyond_f64(v)),
        _ => false,
    }
}

/// Whether `schema` uses `multipleOf` anywhere.
fn mentions_multiple_of(schema: &Value) -> bool {
    match schema {
        Value::Object(map) => {
            map.contains_key("multipleOf") || map.values().any(mentions_multiple_of)
        }
        Value::Array(items) => items.iter().any(mentions_multiple_of),
        _ => false,
    }
}

/// ECMA-262 white space (`\s`) that the reference validator's rewriting of `\s` leaves out:
/// the space separators (Zs) other than U+0020, U+00A0 and U+2003, and U+2028.
fn is_space_the_validator_misses(c: char) -> bool {
    matches!(
        c,
        '\u{1680}'
            | '\u{2000}'..='\u{2002}'
            | '\u{2004}'..='\u{200A}'
            | '\u{2028}'
            | '\u{202F}'
            | '\u{205F}'
            | '\u{3000}'
    )
}

/// The value at JSON pointer `pointer` (RFC 6901) in `document`.
fn lookup<'a>(document: &'a Json, pointer: &str) -> Option<&'a Json> {
    let mut at = document;
    for token in pointer.split('/').skip(1) {
        let key = token.replace("~1", "/").replace("~0", "~");
        at = match at {
            Json::Object(_) => at.get(&key)?,
            Json::Array(items) => items.get(key.parse::<usize>().ok()?)?,
            _ => return None,
        };
    }
    Some(at)
}

/// Whether the decimal `value` is an integer multiple of the decimal `divisor`, computed
/// exactly; `None` when a number does not fit the arithmetic.
fn is_exact_multiple(value: &str, divisor: &str) -> Option<bool> {
    let (a, a_exp) = decimal(value)?;
    let (b, b_exp) = decimal(divisor)?;
    if b == 0 {
        return None;
    }
    // Both as integers times 10^min(exponents).
    let scale = |m: i128, e: i32, to: i32| m.checked_mul(10i128.checked_pow((e - to) as u32)?);
    let low = a_exp.min(b_exp);
    Some(scale(a, a_exp, low)? % scale(b, b_exp, low)? == 0)
}

/// A decimal number as `mantissa * 10^exponent` (sign dropped).
fn decimal(text: &str) -> Option<(i128, i32)> {
    let text = text.trim_start_matches('-');
    let (number, exponent) = match text.find(['e', 'E']) {
        Some(at) => (&text[..at], text[at + 1..].parse::<i32>().ok()?),
        None => (text, 0),
    };
    let (int_part, fraction) = number.split_once('.').unwrap_or((number, ""));
    let digits = format!("{int_part}{fraction}");
    let mantissa: i128 = digits.parse().ok()?;
    Some((
        mantissa,
        exponent.checked_sub(i32::try_from(fraction.len()).ok()?)?,
    ))
}

/// `document` as the reference validator must see it (objects in key order, see
/// [`in_key_order`]), or `None` when it cannot judge it.
///
/// `serde_json` keeps integers only within 64 bits and turns `-0` into a float, which the
/// validator then refuses as an integer; and it treats integral floats (`5.0`) inconsistently
/// across `type` forms. So: integers are exact (`-0` is 0) or the document is unverifiable, and
/// integral floats become integers where the draft says they are.
fn reference_instance(document: &Json, integral_floats_are_integers: bool) -> Option<Value> {
    Some(match document {
        Json::Null => Value::Null,
        Json::Bool(b) => Value::Bool(*b),
        Json::String(s) => Value::String(s.clone()),
        Json::Number(text) => Value::Number(reference_number(text, integral_floats_are_integers)?),
        Json::Array(items) => Value::Array(
            items
                .iter()
                .map(|item| reference_instance(item, integral_floats_are_integers))
                .collect::<Option<_>>()?,
        ),
        Json::Object(members) => {
            let mut members = members
                .iter()
                .map(|(k, v)| {
                    Some((
                        k.clone(),
                        reference_instance(v, integral_floats_are_integers)?,
                    ))
                })
                .collect::<Option<Vec<_>>>()?;
            // Stable: of a repeated key, the last value still wins.
            members.sort_by(|a, b| a.0.cmp(&b.0));
            Value::Object(members.into_iter().collect())
        }
    })
}

/// `value` with the members of every object in key order.
///
/// The reference validator compares objects (`enum`, `const`, `uniqueItems`) member by member
/// in stored order, so `{"a":1,"b":2}` would not equal `{"b":2,"a":1}`; with every object of
/// the schema and of the document in key order, comparisons are by content, as the
/// specification says.
fn in_key_order(value: &Value) -> Value {
    match value {
        Value::Array(items) => Value::Array(items.iter().map(in_key_order).collect()),
        Value::Object(members) => {
            let mut members: Vec<(&String, &Value)> = members.iter().collect();
            members.sort_by(|a, b| a.0.cmp(b.0));
            Value::Object(
                members
                    .into_iter()
                    .map(|(k, v)| (k.clone(), in_key_order(v)))
                    .collect(),
            )
        }
        other => other.clone(),
    }
}

fn reference_number(text: &str, integral_floats_are_integers: bool) -> Option<serde_json::Number> {
    let is_integer_text = !text.bytes().any(|b| matches!(b, b'.' | b'e' | b'E'));
    if is_integer_text {
        if text == "-0" {
            return Some(0.into());
        }
        return match text.parse::<i64>() {
            Ok(n) => Some(n.into()),
            Err(_) => text.parse::<u64>().ok().map(Into::into),
        };
    }
    // An integral value written with fraction zeros (`786160170002005235.0`) is that integer;
    // beyond 2^53 a float would round it, so it goes to the validator as the integer itself.
    if let Some((int, fraction)) = text.split_once('.') {
        let exact = !fraction.bytes().any(|b| matches!(b, b'e' | b'E'));
        if integral_floats_are_integers && exact && fraction.bytes().all(|b| b == b'0') {
            return match int.parse::<i64>() {
                Ok(n) => Some(n.into()),
                Err(_) => int.parse::<u64>().ok().map(Into::into),
            };
        }
    }
    let value: f64 = text.parse().ok().filter(|v: &f64| v.is_finite())?;
    if integral_floats_are_integers && value.fract() == 0.0 && value.abs() <= EXACT_F64_INTEGERS {
        return Some((value as i64).into());
    }
    serde_json::Number::from_f64(value)
}

/// The reference validator: formats are checked, except those the compiler reported as unknown
/// (annotations it does not enforce, by its documented policy).
fn reference_validator(
    schema: &Value,
    warnings: &[constrain::Warning],
) -> Result<jsonschema::Validator, String> {
    let mut options = jsonschema::options().should_validate_formats(true);
    for warning in warnings
        .iter()
        .filter(|w| w.kind == WarningKind::UnknownFormat)
    {
        // The pointer names the `format` keyword or the schema holding it.
        let name = match schema.pointer(&warning.pointer) {
            Some(Value::String(name)) => Some(name.as_str()),
            Some(Value::Object(keywords)) => keywords.get("format").and_then(Value::as_str),
            _ => None,
        };
        if let Some(name) = name {
            options = options.with_format(name.to_string(), |_: &str| true);
        }
    }
    options
        .build(&in_key_order(schema))
        .map_err(|err| err.to_string())
}

/// `n` items spread evenly over `items` (all of them when `n >= items.len()`), so that a
/// partial run still covers every source of a name-sorted corpus.
pub fn spread_sample<T: Clone>(items: &[T], n: usize) -> Vec<T> {
    if n >= items.len() {
        return items.to_vec();
    }
    (0..n).map(|i| items[i * items.len() / n].clone()).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reference(text: &str, integral_floats_are_integers: bool) -> Option<Value> {
        reference_instance(&Json::parse(text).unwrap(), integral_floats_are_integers)
    }

    #[test]
    fn integers_reach_the_validator_exactly_or_not_at_all() {
        assert_eq!(
            reference("[-0, 7, -9223372036854775808, 18446744073709551615]", true),
            Some(serde_json::json!([0, 7, i64::MIN, u64::MAX]))
        );
        assert_eq!(reference("[18446744073709551616]", true), None);
        assert_eq!(reference("1e400", true), None);
    }

    #[test]
    fn multiples_are_checked_in_exact_decimals() {
        assert_eq!(is_exact_multiple("-156075", "0.01"), Some(true));
        assert_eq!(is_exact_multiple("0.3", "0.1"), Some(true));
        assert_eq!(is_exact_multiple("1.5e-7", "5e-8"), Some(true));
        assert_eq!(is_exact_multiple("0.35", "0.1"), Some(false));
        assert_eq!(is_exact_multiple("7", "2"), Some(false));
        assert_eq!(is_exact_multiple("1", "0"), None);
        assert_eq!(is_exact_multiple("1e60", "0.01"), None);
    }

    #[test]
    fn multiples_inside_any_of_and_one_of_are_checked_in_exact_decimals() {
        // 836535566124642090 = 2.5 × 334614226449856836; as an f64 it is 836535566124642048.
        let check = |schema: Value, text: &str| {
            let validator = jsonschema::validator_for(&schema).unwrap();
            let document = Json::parse(text).unwrap();
            let instance = reference_instance(&document, true).unwrap();
            first_real_error(&validator, &instance, &document, true).map_err(|_| ())
        };
        let any_of = serde_json::json!({"anyOf": [{"multipleOf": 2.5}, {"type": "string"}]});
        let f64_says = jsonschema::validator_for(&any_of)
            .unwrap()
            .is_valid(&serde_json::json!(836535566124642090u64));
        assert!(!f64_says, "the validator's f64 calls it no multiple");
        assert_eq!(check(any_of.clone(), "836535566124642090"), Ok(None));
        assert!(matches!(check(any_of, "836535566124642091"), Ok(Some(_))));
        let one_of = serde_json::json!({"oneOf": [{"multipleOf": 2.5}, {"type": "string"}]});
        assert_eq!(check(one_of, "836535566124642090"), Ok(None));
        // Under `not`, f64 may misjudge either way: such a document is not judged.
        let not = serde_json::json!({"not": {"multipleOf": 2.5}});
        assert!(!matches!(check(not, "836535566124642091"), Ok(Some(_))));
    }

    #[test]
    fn pointers_find_values_in_documents() {
        let document = Json::parse(r#"{"a/b": [1, {"~c": 2.50}]}"#).unwrap();
        assert_eq!(
            lookup(&document, "/a~1b/1/~0c"),
            Some(&Json::Number("2.50".into()))
        );
        assert_eq!(lookup(&document, ""), Some(&document));
        assert_eq!(lookup(&document, "/a~1b/7"), None);
    }

    #[test]
    fn integral_floats_are_integers_only_after_draft_4() {
        assert_eq!(reference("5.0", true), Some(serde_json::json!(5)));
        assert_eq!(reference("5.0", false), Some(serde_json::json!(5.0)));
        assert_eq!(reference("2.5", true), Some(serde_json::json!(2.5)));
    }
}
