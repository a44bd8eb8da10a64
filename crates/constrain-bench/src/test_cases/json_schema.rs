//! JSON Schema case files, in two formats (recognised by their fields):
//!
//! * the JSON-Schema-Test-Suite format: a list of `{"description", "schema", "tests":
//!   [{"description", "data", "valid"}]}`. Every instance is written twice, compactly (`,`
//!   and `:`) and with Python's separators (`", "` and `": "`), and each text is checked: a
//!   valid instance must be accepted, an invalid one rejected. A schema that does not compile
//!   fails all its instances. Instance ids are `FILE#CASE/TEST` (indices from 0);
//! * the engine's own case format with `schema` in place of `grammar`: `{"id", "schema",
//!   "passing": [...], "failing": [...], "string_encoding"}`; the strings are checked exactly
//!   as written (`utf-8`, the default, or `hex`).
//!
//! Numbers of suite instances are written as `serde_json` reads them (`300.00` becomes
//! `300.0`): the same values, which is what the suite tests.
//!
//! A whole directory of suite files (`tests/draft2020-12/`) is run by [`run_directory`], which
//! ends with a pass-rate table per keyword file. The directory's name gives the draft of the
//! schemas that do not declare one (`draft7` -> draft-07).

use std::path::Path;
use std::sync::Arc;

use anyhow::{bail, Context};
use constrain_engine::CompiledGrammar;
use constrain_jsonschema::{Options, SchemaError};
use serde_json::Value;

use super::{Checker, Expect, Report, Subject};
use crate::maskbench::json_text::{Json, Separators};
use crate::maskbench::panics;

/// Whether `value` is a list of JSON Schema cases, in either format.
pub fn detect(value: &Value) -> bool {
    let Some(cases) = value.as_array() else {
        return false;
    };
    let is_case = |case: &Value| {
        case.get("schema").is_some()
            && (case.get("tests").is_some_and(Value::is_array)
                || case.get("passing").is_some()
                || case.get("failing").is_some())
    };
    !cases.is_empty() && cases.iter().all(is_case)
}

/// Runs every case of the JSON Schema case file `value`, recording each check in `report`.
pub fn run(
    value: &Value,
    options: &Options,
    checker: &Checker,
    report: &mut Report,
) -> anyhow::Result<()> {
    run_cases("", value, None, options, checker, report).map(|_| ())
}

/// Runs every JSON Schema case file (`*.json`, in name order) of `dir`, then prints a table of
/// instances passed per file. Files of other formats are skipped with a note.
pub fn run_directory(
    dir: &Path,
    options: &Options,
    checker: &Checker,
    report: &mut Report,
) -> anyhow::Result<()> {
    let mut files: Vec<_> = std::fs::read_dir(dir)
        .with_context(|| format!("listing {}", dir.display()))?
        .map(|entry| entry.map(|e| e.path()))
        .collect::<Result<_, _>>()?;
    files.retain(|p| p.is_file() && p.extension().is_some_and(|e| e == "json"));
    files.sort();
    let draft = dir.file_name().and_then(|n| n.to_str()).and_then(draft_uri);
    let mut rows = Vec::new();
    for path in &files {
        let name = path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let text =
            std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
        let value: Value = serde_json::from_str(&text)
            .with_context(|| format!("{} is not JSON", path.display()))?;
        if !detect(&value) {
            report.note(format!("{name}: not a JSON Schema case file, skipped"));
            continue;
        }
        rows.push((
            name.clone(),
            run_cases(&name, &value, draft, options, checker, report)?,
        ));
    }
    print_table(&rows);
    Ok(())
}

/// Instances of one file, and how many failed (an instance fails when any of its checks does).
#[derive(Clone, Copy, Debug, Default)]
struct Tally {
    instances: usize,
    failed: usize,
}

fn run_cases(
    file: &str,
    value: &Value,
    draft: Option<&str>,
    options: &Options,
    checker: &Checker,
    report: &mut Report,
) -> anyhow::Result<Tally> {
    let Some(cases) = value.as_array() else {
        bail!("expected a JSON list of cases")
    };
    let mut tally = Tally::default();
    for (i, case) in cases.iter().enumerate() {
        let schema = with_default_draft(&case["schema"], draft);
        let compiled = compile(&schema, options, checker);
        if case.get("tests").is_some() {
            run_suite_case(
                &format!("{file}#{i}"),
                case,
                &compiled,
                checker,
                report,
                &mut tally,
            )
            .with_context(|| format!("{file} case {i}"))?;
        } else {
            let id = case
                .get("id")
                .and_then(Value::as_str)
                .map_or_else(|| format!("{file}#{i}"), str::to_string);
            run_string_case(&id, case, &compiled, checker, report, &mut tally)
                .with_context(|| format!("case {id}"))?;
        }
    }
    Ok(tally)
}

/// What compiling a case's schema gave.
enum Schema {
    /// A grammar to check strings with.
    Grammar(Arc<CompiledGrammar>),
    /// The compiler proved that no JSON value is valid (`false`, `{"not": {}}`, ...): every
    /// string is rejected, and a valid instance is a failure like any other.
    Empty(String),
    /// Not compiled (an unsupported keyword, a limit, a compiler panic): every check fails.
    Failed(String),
}

/// Compiles a schema for the checker's vocabulary; a compiler panic is an error like any other.
fn compile(schema: &Value, options: &Options, checker: &Checker) -> Schema {
    let outcome = panics::catch(|| match constrain_jsonschema::compile(schema, options) {
        Ok(compiled) => match checker.compile(&compiled.grammar) {
            Ok(grammar) => Schema::Grammar(grammar),
            Err(error) => Schema::Failed(error.to_string()),
        },
        Err(error @ SchemaError::Unsatisfiable { .. }) => Schema::Empty(error.to_string()),
        Err(error) => Schema::Failed(error.to_string()),
    });
    outcome.unwrap_or_else(|panic| Schema::Failed(format!("the compiler panicked: {panic}")))
}

/// One suite case: every instance, compactly and with spaces.
fn run_suite_case(
    case_id: &str,
    case: &Value,
    compiled: &Schema,
    checker: &Checker,
    report: &mut Report,
    tally: &mut Tally,
) -> anyhow::Result<()> {
    let Some(tests) = case["tests"].as_array() else {
        bail!("'tests' is not a list")
    };
    for (j, test) in tests.iter().enumerate() {
        let valid = test
            .get("valid")
            .and_then(Value::as_bool)
            .context(format!("test {j}: no boolean 'valid'"))?;
        let data = test.get("data").context(format!("test {j}: no 'data'"))?;
        let description = test
            .get("description")
            .and_then(Value::as_str)
            .unwrap_or_default();
        let id = format!("{case_id}/{j}");
        let kind = if valid { "valid" } else { "invalid" };
        let data = Json::from_serde(data);
        let mut texts = vec![("compact", data.to_text(Separators::COMPACT))];
        let spaced = data.to_text(Separators::SPACED);
        if spaced != texts[0].1 {
            texts.push(("spaced", spaced));
        }
        tally.instances += 1;
        let checks = texts.len() * checker.checks_per_string();
        let grammar = match compiled {
            Schema::Grammar(grammar) => grammar,
            Schema::Empty(_) if !valid => {
                (0..checks).for_each(|_| report.pass());
                continue;
            }
            Schema::Empty(error) | Schema::Failed(error) => {
                report.fail_many(
                    &id,
                    checks,
                    format_args!("{kind} instance {description:?}: schema not compiled: {error}"),
                );
                tally.failed += 1;
                continue;
            }
        };
        let expect = if valid {
            Expect::Accept
        } else {
            Expect::Reject
        };
        let failed_before = report.failed();
        for (layout, text) in &texts {
            let label = format!("{kind} instance {description:?} ({layout})");
            let subject = Subject {
                case: &id,
                label: &label,
                bytes: text.as_bytes(),
            };
            checker.check(grammar, &subject, expect, report);
        }
        tally.failed += usize::from(report.failed() > failed_before);
    }
    Ok(())
}

/// One case of the engine's format: the schema compiles (one check), then every string.
fn run_string_case(
    id: &str,
    case: &Value,
    compiled: &Schema,
    checker: &Checker,
    report: &mut Report,
    tally: &mut Tally,
) -> anyhow::Result<()> {
    let hex = match case.get("string_encoding").and_then(Value::as_str) {
        None | Some("utf-8") => false,
        Some("hex") => true,
        Some(other) => bail!("unknown string_encoding {other:?} (expected \"utf-8\" or \"hex\")"),
    };
    let mut strings = Vec::new();
    for (list, expect) in [("passing", Expect::Accept), ("failing", Expect::Reject)] {
        let items = match case.get(list) {
            None => continue,
            Some(Value::Array(items)) => items,
            Some(_) => bail!("'{list}' is not a list"),
        };
        for (k, item) in items.iter().enumerate() {
            let Some(text) = item.as_str() else {
                bail!("{list}[{k}] is not a string")
            };
            let bytes = if hex {
                decode_hex(text).with_context(|| format!("{list}[{k}]"))?
            } else {
                text.as_bytes().to_vec()
            };
            strings.push((
                format!("{list}[{k}] {:?}", String::from_utf8_lossy(&bytes)),
                bytes,
                expect,
            ));
        }
    }
    tally.instances += strings.len();
    let grammar = match compiled {
        Schema::Grammar(grammar) => grammar,
        Schema::Empty(error) => {
            report.pass();
            for (label, _, expect) in &strings {
                let checks = checker.checks_per_string();
                match expect {
                    Expect::Reject => (0..checks).for_each(|_| report.pass()),
                    Expect::Accept => {
                        report.fail_many(id, checks, format_args!("{label} rejected: {error}"));
                        tally.failed += 1;
                    }
                }
            }
            return Ok(());
        }
        Schema::Failed(error) => {
            let not_run = strings.len() * checker.checks_per_string();
            report.fail_many(
                id,
                1 + not_run,
                format_args!("schema not compiled: {error} ({not_run} string checks not run)"),
            );
            tally.failed += strings.len();
            return Ok(());
        }
    };
    report.pass();
    for (label, bytes, expect) in &strings {
        let failed_before = report.failed();
        checker.check(
            grammar,
            &Subject {
                case: id,
                label,
                bytes,
            },
            *expect,
            report,
        );
        tally.failed += usize::from(report.failed() > failed_before);
    }
    Ok(())
}

/// The meta-schema URI of a suite directory (`draft7`, `draft2020-12`, ...).
fn draft_uri(dir_name: &str) -> Option<&'static str> {
    Some(match dir_name {
        "draft2020-12" => "https://json-schema.org/draft/2020-12/schema",
        "draft2019-09" => "https://json-schema.org/draft/2019-09/schema",
        "draft7" => "http://json-schema.org/draft-07/schema#",
        "draft6" => "http://json-schema.org/draft-06/schema#",
        "draft4" => "http://json-schema.org/draft-04/schema#",
        _ => return None,
    })
}

/// `schema` with `$schema` set to `draft` when it is an object that declares none.
fn with_default_draft(schema: &Value, draft: Option<&str>) -> Value {
    let mut schema = schema.clone();
    if let (Some(draft), Value::Object(map)) = (draft, &mut schema) {
        map.entry("$schema")
            .or_insert_with(|| Value::String(draft.to_string()));
    }
    schema
}

fn decode_hex(s: &str) -> anyhow::Result<Vec<u8>> {
    if s.len() % 2 != 0 || !s.bytes().all(|b| b.is_ascii_hexdigit()) {
        bail!("not an even number of hex digits: {s:?}");
    }
    (0..s.len())
        .step_by(2)
        .map(|i| Ok(u8::from_str_radix(&s[i..i + 2], 16)?))
        .collect()
}

fn print_table(rows: &[(String, Tally)]) {
    println!(
        "\n{:<36}{:>10}{:>8}{:>8}{:>8}",
        "file", "instances", "passed", "failed", "rate"
    );
    let mut total = Tally::default();
    for (name, tally) in rows {
        print_row(name, *tally);
        total.instances += tally.instances;
        total.failed += tally.failed;
    }
    print_row("total", total);
}

fn print_row(name: &str, tally: Tally) {
    let passed = tally.instances - tally.failed;
    let rate = if tally.instances == 0 {
        100.0
    } else {
        100.0 * passed as f64 / tally.instances as f64
    };
    println!(
        "{name:<36}{:>10}{passed:>8}{:>8}{rate:>7.1}%",
        tally.instances, tally.failed
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `run_cases` on a file of cases with no draft of its own.
    fn run(
        checker: &Checker,
        file: &str,
        cases: &Value,
        options: &Options,
        report: &mut Report,
    ) -> Tally {
        run_cases(file, cases, None, options, checker, report).expect("well-formed cases")
    }
    use serde_json::json;

    #[test]
    fn both_formats_are_recognised_and_grammar_cases_are_not() {
        assert!(detect(
            &json!([{"description": "d", "schema": {}, "tests": []}])
        ));
        assert!(detect(
            &json!([{"id": "x", "schema": true, "passing": ["1"], "failing": []}])
        ));
        assert!(!detect(
            &json!([{"id": "x", "grammar": "root ::= \"a\"", "passing": ["a"]}])
        ));
        assert!(!detect(&json!([])));
        assert!(!detect(&json!({"schema": {}, "tests": []})));
    }

    #[test]
    fn suite_directories_name_their_draft() {
        let schema = with_default_draft(&json!({"type": "integer"}), draft_uri("draft7"));
        assert_eq!(schema["$schema"], "http://json-schema.org/draft-07/schema#");
        let declared = json!({"$schema": "https://json-schema.org/draft/2020-12/schema"});
        assert_eq!(with_default_draft(&declared, draft_uri("draft7")), declared);
        assert_eq!(
            with_default_draft(&json!(true), draft_uri("draft7")),
            json!(true)
        );
        assert_eq!(draft_uri("optional"), None);
    }

    #[test]
    fn a_directory_runs_every_case_file_and_counts_instances() {
        let dir = std::env::temp_dir()
            .join(format!("constrain-suite-{}", std::process::id()))
            .join("draft2020-12");
        std::fs::create_dir_all(&dir).unwrap();
        let suite = json!([{
            "description": "integers",
            "schema": {"type": "integer", "maximum": 5},
            "tests": [
                {"description": "in range", "data": 3, "valid": true},
                {"description": "too big", "data": 6, "valid": false},
                {"description": "a string", "data": "3", "valid": false}
            ]
        }, {
            "description": "objects",
            "schema": {"type": "object", "properties": {"a": {"type": "boolean"}}, "required": ["a"]},
            "tests": [
                {"description": "present", "data": {"a": true}, "valid": true},
                {"description": "missing", "data": {}, "valid": false}
            ]
        }]);
        let strings = json!([{"id": "enum", "schema": {"enum": ["x", 1]}, "passing": ["\"x\"", "1"], "failing": ["2"]}]);
        let grammar = json!([{"id": "g", "grammar": "root ::= \"a\"", "passing": ["a"]}]);
        std::fs::write(dir.join("a.json"), suite.to_string()).unwrap();
        std::fs::write(dir.join("b.json"), strings.to_string()).unwrap();
        std::fs::write(dir.join("c.json"), grammar.to_string()).unwrap();

        let checker = Checker::bytes_only().unwrap();
        let mut report = Report::default();
        run_directory(&dir, &Options::default(), &checker, &mut report).unwrap();
        let _ = std::fs::remove_dir_all(dir.parent().unwrap());
        assert_eq!(report.failed(), 0);

        let mut report = Report::default();
        let tally = run(&checker, "a.json", &suite, &Options::default(), &mut report);
        assert_eq!((tally.instances, tally.failed), (5, 0));
        let tally = run(
            &checker,
            "b.json",
            &strings,
            &Options::default(),
            &mut report,
        );
        assert_eq!((tally.instances, tally.failed), (3, 0));
        // A wrong expectation fails its instance, once however many layouts fail.
        let wrong = json!([{"description": "d", "schema": {"type": "object"}, "tests": [
            {"description": "an object said to be invalid", "data": {"a": 1}, "valid": false}
        ]}]);
        let tally = run(&checker, "w.json", &wrong, &Options::default(), &mut report);
        assert_eq!((tally.instances, tally.failed), (1, 1));
        assert_eq!(report.failed(), 2, "compact and spaced both fail");
    }

    #[test]
    fn a_schema_that_accepts_nothing_rejects_every_instance() {
        let checker = Checker::bytes_only().unwrap();
        let mut report = Report::default();
        let nothing = json!([{"description": "false", "schema": false, "tests": [
            {"description": "a number", "data": 1, "valid": false},
            {"description": "an object", "data": {}, "valid": false}
        ]}]);
        let tally = run(
            &checker,
            "f.json",
            &nothing,
            &Options::default(),
            &mut report,
        );
        assert_eq!((tally.instances, tally.failed), (2, 0));
        // A valid instance of an empty schema is a failure (the expectation or the compiler is
        // wrong), never a silent pass.
        let wrong = json!([{"description": "d", "schema": {"not": {}}, "tests": [
            {"description": "said to be valid", "data": 1, "valid": true}
        ]}]);
        let tally = run(&checker, "w.json", &wrong, &Options::default(), &mut report);
        assert_eq!((tally.instances, tally.failed), (1, 1));
    }

    #[test]
    fn options_reach_the_compiler() {
        let checker = Checker::bytes_only().unwrap();
        let suite = json!([{"description": "d", "schema": {
            "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}}
        }, "tests": [{"description": "b before a", "data": {"b": 1, "a": 2}, "valid": true}]}]);
        let mut report = Report::default();
        let tally = run(&checker, "o.json", &suite, &Options::default(), &mut report);
        assert_eq!(tally.failed, 1, "schema order is the default");
        let any_order = Options {
            property_order: constrain_jsonschema::PropertyOrder::Any,
            ..Options::default()
        };
        let tally = run(&checker, "o.json", &suite, &any_order, &mut report);
        assert_eq!(tally.failed, 0);
    }

    #[test]
    fn hex_strings_decode_to_bytes() {
        assert_eq!(decode_hex("22ff00").unwrap(), vec![0x22, 0xff, 0x00]);
        assert!(decode_hex("2").is_err());
        assert!(decode_hex("zz").is_err());
    }
}
