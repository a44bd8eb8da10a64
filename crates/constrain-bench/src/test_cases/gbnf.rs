//! The GBNF case formats of llama.cpp's grammar tests (`data/llama.cpp-grammars/`):
//!
//! * matching cases: `grammar`, `root`, `passing`, `failing`, `string_encoding` (`utf-8` or
//!   `hex`, where special tokens are `0xFF` and the big-endian id); the grammar must build,
//!   every passing string be accepted completely and no failing one;
//! * build failures: `grammar`, `root`, `reason`; the grammar must be refused;
//! * parser cases: `grammar`, `should_parse`.
//!
//! Each object of the list is recognised by its fields, so one file may mix the formats.

use anyhow::{bail, Context};
use serde::Deserialize;
use serde_json::Value;

use super::checker::{Checker, Expect, Subject};
use super::report::Report;

/// Whether `value` looks like a list of GBNF cases.
pub fn detect(value: &Value) -> bool {
    value.as_array().is_some_and(|cases| {
        cases
            .iter()
            .all(|c| c.get("grammar").is_some_and(Value::is_string))
    })
}

/// Runs every case of the list `value`; `default_root` is the start rule of cases that name
/// none.
pub fn run(
    value: &Value,
    default_root: &str,
    checker: &Checker,
    report: &mut Report,
) -> anyhow::Result<()> {
    let Some(cases) = value.as_array() else {
        bail!("expected a JSON list of cases")
    };
    let mut special_token_strings = 0;
    for (i, case) in cases.iter().enumerate() {
        let context = || {
            format!(
                "case {i} ({})",
                case.get("id").and_then(Value::as_str).unwrap_or("no id")
            )
        };
        match CaseKind::of(case) {
            Some(CaseKind::Matching) => {
                let case: MatchingCase = Deserialize::deserialize(case).with_context(context)?;
                special_token_strings +=
                    run_matching(&case, default_root, checker, report).with_context(context)?;
            }
            Some(CaseKind::BuildFailure) => {
                let case: BuildFailure = Deserialize::deserialize(case).with_context(context)?;
                run_build_failure(&case, default_root, checker, report);
            }
            Some(CaseKind::Parser) => {
                let case: ParserCase = Deserialize::deserialize(case).with_context(context)?;
                run_parser(&case, default_root, checker, report);
            }
            None => bail!(
                "{}: not a GBNF case (expected 'passing'/'failing', 'should_parse' or 'reason')",
                context()
            ),
        }
    }
    if special_token_strings > 0 {
        if let Some(name) = checker.tokenizer_name() {
            report.note(format!(
                "{special_token_strings} strings hold special tokens (0xFF + id) or are not UTF-8: \
                 checked at byte level only, not through the {name} tokenizer"
            ));
        }
    }
    Ok(())
}

enum CaseKind {
    Matching,
    BuildFailure,
    Parser,
}

impl CaseKind {
    fn of(case: &Value) -> Option<CaseKind> {
        let has = |field: &str| case.get(field).is_some();
        if has("should_parse") {
            Some(CaseKind::Parser)
        } else if has("passing") || has("failing") {
            Some(CaseKind::Matching)
        } else if has("reason") || has("stage") {
            Some(CaseKind::BuildFailure)
        } else {
            None
        }
    }
}

#[derive(Deserialize)]
struct MatchingCase {
    id: String,
    grammar: String,
    root: Option<String>,
    #[serde(default)]
    passing: Vec<String>,
    #[serde(default)]
    failing: Vec<String>,
    #[serde(default)]
    string_encoding: Encoding,
}

#[derive(Deserialize, Default, Clone, Copy, PartialEq, Eq)]
enum Encoding {
    #[default]
    #[serde(rename = "utf-8")]
    Utf8,
    #[serde(rename = "hex")]
    Hex,
}

#[derive(Deserialize)]
struct BuildFailure {
    id: String,
    grammar: String,
    root: Option<String>,
    reason: Option<String>,
}

#[derive(Deserialize)]
struct ParserCase {
    id: String,
    grammar: String,
    should_parse: bool,
}

/// One check that the grammar builds, then every string; returns how many strings were
/// checked at byte level only.
fn run_matching(
    case: &MatchingCase,
    default_root: &str,
    checker: &Checker,
    report: &mut Report,
) -> anyhow::Result<usize> {
    let strings: Vec<(String, Vec<u8>, Expect)> =
        labelled(case, "passing", &case.passing, Expect::Accept)?
            .into_iter()
            .chain(labelled(case, "failing", &case.failing, Expect::Reject)?)
            .collect();
    let root = case.root.as_deref().unwrap_or(default_root);
    let compiled = checker
        .gbnf_options(root)
        .parse(&case.grammar)
        .map_err(|e| format!("the grammar does not parse: {e}"))
        .and_then(|grammar| {
            checker
                .compile(&grammar)
                .map_err(|e| format!("the grammar does not compile: {e}"))
        });
    let compiled = match compiled {
        Ok(compiled) => compiled,
        Err(what) => {
            let not_run = strings.len() * checker.checks_per_string();
            report.fail_many(
                &case.id,
                1 + not_run,
                format_args!("{what} ({not_run} string checks not run)"),
            );
            return Ok(0);
        }
    };
    report.pass();
    let mut bytes_only = 0;
    for (label, bytes, expect) in &strings {
        let subject = Subject {
            case: &case.id,
            label,
            bytes,
        };
        bytes_only += usize::from(checker.check(&compiled, &subject, *expect, report));
    }
    Ok(bytes_only)
}

/// The strings of one list, decoded, with labels such as `passing[2] "1+2"`.
fn labelled(
    case: &MatchingCase,
    list: &str,
    strings: &[String],
    expect: Expect,
) -> anyhow::Result<Vec<(String, Vec<u8>, Expect)>> {
    strings
        .iter()
        .enumerate()
        .map(|(i, s)| {
            let bytes = match case.string_encoding {
                Encoding::Utf8 => s.as_bytes().to_vec(),
                Encoding::Hex => decode_hex(s).with_context(|| format!("{list}[{i}]"))?,
            };
            Ok((format!("{list}[{i}] {}", show(&bytes)), bytes, expect))
        })
        .collect()
}

fn run_build_failure(
    case: &BuildFailure,
    default_root: &str,
    checker: &Checker,
    report: &mut Report,
) {
    let root = case.root.as_deref().unwrap_or(default_root);
    let built = checker
        .gbnf_options(root)
        .parse(&case.grammar)
        .map(|g| checker.compile(&g));
    match built {
        Ok(Ok(_)) => {
            let why = case
                .reason
                .as_deref()
                .map(|r| format!(" ({r})"))
                .unwrap_or_default();
            report.fail(
                &case.id,
                format_args!("the grammar builds with root '{root}', but must be refused{why}"),
            );
        }
        Ok(Err(_)) | Err(_) => report.pass(),
    }
}

fn run_parser(case: &ParserCase, default_root: &str, checker: &Checker, report: &mut Report) {
    match (
        checker.gbnf_options(default_root).parse(&case.grammar),
        case.should_parse,
    ) {
        (Ok(_), true) | (Err(_), false) => report.pass(),
        (Ok(_), false) => report.fail(&case.id, "the grammar parses, but must be refused"),
        (Err(e), true) => report.fail(&case.id, format_args!("the grammar must parse, but: {e}")),
    }
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

/// A string for a failure line: quoted and escaped, special tokens as `<[id]>`, cut after 60
/// characters.
fn show(bytes: &[u8]) -> String {
    const MAX_CHARS: usize = 60;
    let mut text = String::new();
    let mut rest = bytes;
    while let Some(marker) = rest
        .iter()
        .position(|&b| b == constrain_engine::SPECIAL_TOKEN_MARKER)
    {
        text.push_str(&String::from_utf8_lossy(&rest[..marker]));
        match rest.get(marker + 1..marker + 5) {
            Some(id) => {
                let id = u32::from_be_bytes([id[0], id[1], id[2], id[3]]);
                text.push_str(&format!("<[{id}]>"));
                rest = &rest[marker + 5..];
            }
            None => {
                text.push('\u{FFFD}');
                rest = &rest[marker + 1..];
            }
        }
    }
    text.push_str(&String::from_utf8_lossy(rest));
    let cut: String = text.chars().take(MAX_CHARS).collect();
    if cut.len() < text.len() {
        format!("{cut:?}...")
    } else {
        format!("{text:?}")
    }
}
