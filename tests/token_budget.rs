//! Token budgets with real tokenizers: JSON Schemas (the project's and, when the shared data is
//! present, MaskBench's), GBNF grammars and regexes, under logits that always prefer to go on
//! (the longest token, an opening bracket, a digit). Every output must end complete within its
//! budget, from the shortest completion's size up to 20 tokens more, and validate.

use std::path::Path;
use std::sync::Arc;

use constrain::{
    ConstrainedSampler, Constraint, Escapes, Matcher, SamplerConfig, SchemaOptions, StopReason,
    TokenIndex, TokenKind, Tokenizer, Vocabulary,
};

/// What an adversarial model prefers, as logits: among the tokens the mask leaves, greedy
/// decoding then picks the preferred one.
#[derive(Clone, Copy, Debug)]
enum Adversary {
    Longest,
    Opening,
    Digits,
}

impl Adversary {
    fn logits(self, vocab: &Vocabulary) -> Vec<f32> {
        (0..vocab.logits_width() as u32)
            .map(|t| match (vocab.kind(t), vocab.token_bytes(t)) {
                (Some(TokenKind::Text), Some(bytes)) => {
                    let bonus = match self {
                        Adversary::Longest => 0.0,
                        Adversary::Opening => {
                            if bytes.iter().any(|b| matches!(b, b'{' | b'[' | b'(')) {
                                1000.0
                            } else {
                                0.0
                            }
                        }
                        Adversary::Digits => {
                            if bytes.iter().any(u8::is_ascii_digit) {
                                1000.0
                            } else {
                                0.0
                            }
                        }
                    };
                    bytes.len() as f32 + bonus + (t % 97) as f32 * 1e-3
                }
                (Some(TokenKind::EndOfSequence), _) => -1000.0,
                _ => -500.0,
            })
            .collect()
    }
}

/// Runs `constraint` under budgets from its shortest completion's size to 20 more (every
/// `stride`-th), each adversary in turn; `valid` judges each output.
fn check(
    name: &str,
    constraint: &Constraint,
    index: &Arc<TokenIndex>,
    stride: usize,
    valid: &dyn Fn(&[u8]) -> bool,
) {
    let grammar = constraint
        .compile(index.clone())
        .unwrap_or_else(|e| panic!("{name}: {e}"));
    let needed = Matcher::new(grammar.clone())
        .shortest_completion()
        .expect("within limits")
        .expect("a completion")
        .tokens
        .len();
    let vocab = index.vocabulary();
    let adversaries = [Adversary::Longest, Adversary::Opening, Adversary::Digits];
    for (i, budget) in (needed..=needed + 20).step_by(stride).enumerate() {
        let adversary = adversaries[i % adversaries.len()];
        let logits = adversary.logits(vocab);
        let mut sampler =
            ConstrainedSampler::new(grammar.clone(), SamplerConfig::greedy(), 0).expect("sampler");
        let out = sampler
            .generate(&mut |_| logits.clone(), budget)
            .unwrap_or_else(|e| panic!("{name}, budget {budget}: {e}"));
        let text = String::from_utf8_lossy(&out.bytes);
        assert_eq!(
            out.stop,
            StopReason::Complete,
            "{name}, budget {budget}, {adversary:?}: incomplete {text}"
        );
        assert!(out.tokens.len() <= budget, "{name}, budget {budget}");
        assert!(
            valid(&out.bytes),
            "{name}, budget {budget}, {adversary:?}: invalid {text}"
        );
    }
}

fn schema_constraint(schema: &serde_json::Value) -> Constraint {
    Constraint::JsonSchemaWith(
        schema.clone(),
        SchemaOptions {
            escapes: Escapes::Canonical,
            max_untyped_depth: 3,
            ..SchemaOptions::default()
        },
    )
}

fn validates(schema: &serde_json::Value) -> impl Fn(&[u8]) -> bool + '_ {
    move |bytes| {
        serde_json::from_slice::<serde_json::Value>(bytes)
            .is_ok_and(|doc| jsonschema::is_valid(schema, &doc))
    }
}

fn tokenizer_index() -> Arc<TokenIndex> {
    let path = constrain_testdata::shared_tokenizer("llama3_1")
        .unwrap_or_else(constrain_testdata::fixture_tokenizer);
    let tokenizer = Tokenizer::from_file(&path).expect("tokenizer");
    TokenIndex::new(tokenizer.vocabulary().clone())
}

fn read_json(path: &Path) -> serde_json::Value {
    serde_json::from_slice(&std::fs::read(path).expect("readable")).expect("JSON")
}

#[test]
fn schemas_of_the_project_end_complete_within_every_budget() {
    let index = tokenizer_index();
    let dir = constrain_testdata::workspace_root().join("schemas");
    let mut paths: Vec<_> = std::fs::read_dir(&dir)
        .expect("schemas/")
        .map(|e| e.expect("entry").path())
        .collect();
    paths.sort();
    for path in paths {
        let schema = read_json(&path);
        let name = path.display().to_string();
        check(
            &name,
            &schema_constraint(&schema),
            &index,
            1,
            &validates(&schema),
        );
    }
}

#[test]
fn grammars_and_regexes_end_complete_within_every_budget() {
    let index = tokenizer_index();
    let dir = constrain_testdata::workspace_root().join("grammars");
    for file in ["json.gbnf", "arithmetic.gbnf", "list.gbnf", "iso8601.gbnf"] {
        let text = std::fs::read_to_string(dir.join(file)).expect("grammar");
        let constraint = Constraint::Gbnf(text);
        let grammar = constraint.compile(index.clone()).expect("compiles");
        let accepts = |bytes: &[u8]| {
            let mut m = Matcher::new(grammar.clone());
            m.accept_bytes(bytes).is_ok() && m.is_accepting()
        };
        check(file, &constraint, &index, 1, &accepts);
    }
    for pattern in [
        r"[A-Z][a-z]{2,12} [0-9]{1,3}(, [A-Z][a-z]+)*\.",
        r"(\+[0-9]{1,3} )?\(?[0-9]{3}\)?[ -]?[0-9]{3}-[0-9]{4}",
    ] {
        let re = regex::Regex::new(&format!("^(?:{pattern})$")).expect("valid");
        let accepts = |bytes: &[u8]| std::str::from_utf8(bytes).is_ok_and(|s| re.is_match(s));
        check(
            pattern,
            &Constraint::Regex(pattern.into()),
            &index,
            1,
            &accepts,
        );
    }
}

/// MaskBench dev schemas (the first 200 in name order that compile), budgets from the
/// shortest completion to 20 more in steps of 5.
#[test]
fn maskbench_schemas_end_complete_within_their_budgets() {
    let Some(shared) = constrain_testdata::require_shared_or_skip(
        "maskbench_schemas_end_complete_within_their_budgets",
    ) else {
        return;
    };
    let index = tokenizer_index();
    let dir = shared.join("data/maskbench-dev");
    let mut paths: Vec<_> = std::fs::read_dir(&dir)
        .expect("maskbench-dev")
        .map(|e| e.expect("entry").path())
        .collect();
    paths.sort();
    let mut checked = 0;
    for path in paths {
        if checked == 200 {
            break;
        }
        let file = read_json(&path);
        let schema = file["schema"].clone();
        let constraint = schema_constraint(&schema);
        if constraint.compile(index.clone()).is_err() {
            continue;
        }
        let name = path.display().to_string();
        check(&name, &constraint, &index, 5, &validates(&schema));
        checked += 1;
    }
    assert_eq!(checked, 200);
}
