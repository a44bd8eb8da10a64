//! XGrammar's structural tags through the facade: each format type accepting and refusing
//! text, XGrammar's and vLLM's documented examples, errors that name the JSON pointer, and
//! masks with a real tokenizer where triggers and end texts split across tokens.

use constrain::{
    CompileOptions, Constraint, Error, Limits, Matcher, SchemaOptions, Separators, TokenIndex,
    TokenKind, Tokenizer, Whitespace,
};
use serde_json::{json, Value};

fn options() -> CompileOptions {
    CompileOptions {
        schema: SchemaOptions {
            whitespace: Whitespace::Compact,
            separators: Some(Separators::python()),
            ..SchemaOptions::default()
        },
        limits: Limits::default(),
    }
}

fn matcher(tag: &Value) -> Matcher {
    let index = TokenIndex::new(constrain_testdata::byte_vocabulary());
    let compiled = Constraint::StructuralTag(tag.clone())
        .compile_for(index, &options())
        .unwrap_or_else(|e| panic!("{tag} does not compile: {e}"))
        .grammar;
    Matcher::new(compiled)
}

/// Checks that the structural tag accepts each of `good` in full and refuses each of `bad`
/// (as a prefix that cannot go on, or as a whole that cannot end).
fn check(tag: Value, good: &[&str], bad: &[&str]) {
    let wrapped = json!({"type": "structural_tag", "format": tag});
    for text in good {
        let mut m = matcher(&wrapped);
        let fed = m.accept_bytes(text.as_bytes());
        assert!(
            fed.is_ok() && m.is_accepting(),
            "{wrapped} should accept {text:?}"
        );
    }
    for text in bad {
        let mut m = matcher(&wrapped);
        let fed = m.accept_bytes(text.as_bytes());
        assert!(
            fed.is_err() || !m.is_accepting(),
            "{wrapped} should refuse {text:?}"
        );
    }
}

fn error_of(tag: Value) -> Error {
    match Constraint::StructuralTag(tag).build(&options()) {
        Ok(_) => panic!("compiled"),
        Err(e) => e,
    }
}

/// The JSON pointer an error names.
fn pointer_of(tag: Value) -> String {
    match error_of(tag) {
        Error::StructuralTag(e) => e.pointer().to_string(),
        Error::StructuralTagPart { pointer, .. } => pointer,
        other => panic!("not a structural-tag error: {other}"),
    }
}

fn person() -> Value {
    json!({"type": "object", "properties": {"name": {"type": "string"}, "age": {"type": "integer"}},
           "required": ["name", "age"], "additionalProperties": false})
}

#[test]
fn a_const_string_is_exactly_its_value() {
    check(
        json!({"type": "const_string", "value": "Hello, World!"}),
        &["Hello, World!"],
        &["Hello", "Hello, World!!", ""],
    );
}

#[test]
fn a_json_schema_is_a_valid_document() {
    check(
        json!({"type": "json_schema", "json_schema": person()}),
        &[r#"{"name": "Ada", "age": 36}"#],
        &[r#"{"name": "Ada"}"#, r#"{"name": "Ada", "age": "36"}"#],
    );
}

#[test]
fn a_grammar_and_a_regex_are_their_languages() {
    check(
        json!({"type": "grammar", "grammar": "root ::= \"a\" [0-9]+"}),
        &["a1", "a123"],
        &["a", "b1"],
    );
    check(
        json!({"type": "regex", "pattern": "[a-c]{2}-[0-9]"}),
        &["ab-1"],
        &["ab1", "abc-1"],
    );
}

#[test]
fn any_text_at_the_end_of_the_output_allows_anything_and_the_end() {
    check(
        json!({"type": "any_text"}),
        &["", "anything </x> at all\n"],
        &[],
    );
    check(
        json!({"type": "any_text", "excludes": ["<tool_call>"]}),
        &["", "a <tool_call"],
        &["a <tool_call>"],
    );
}

#[test]
fn a_sequence_takes_each_element_and_an_or_any_one() {
    check(
        json!({"type": "sequence", "elements": [
            {"type": "const_string", "value": "n="},
            {"type": "or", "elements": [
                {"type": "regex", "pattern": "[0-9]+"},
                {"type": "const_string", "value": "none"}]}]}),
        &["n=42", "n=none"],
        &["n=", "n=4x", "none"],
    );
}

#[test]
fn a_tag_wraps_its_content_in_begin_and_one_of_its_end_texts() {
    check(
        json!({"type": "tag", "begin": "<r>", "content": {"type": "json_schema", "json_schema": {"type": "integer"}},
               "end": ["</r>", "</answer>"]}),
        &["<r>12</r>", "<r>12</answer>"],
        &["<r>12", "<r>x</r>", "12</r>"],
    );
}

#[test]
fn free_text_in_a_tag_stops_at_the_first_end_text() {
    check(
        json!({"type": "tag", "begin": "<think>", "content": {"type": "any_text"}, "end": "</think>"}),
        &[
            "<think></think>",
            "<think>a < b </think>",
            "<think>x</thin></think>",
        ],
        &["<think>a</think>b</think>", "<think>a</think>b", "<think>a"],
    );
}

/// XGrammar's triggered-tags example: free text, each trigger opening a tag.
fn functions(at_least_one: bool, stop_after_first: bool) -> Value {
    json!({"type": "triggered_tags", "triggers": ["<function="],
           "tags": [
               {"begin": "<function=func1>", "content": {"type": "json_schema", "json_schema": person()}, "end": "</function>"},
               {"begin": "<function=func2>", "content": {"type": "json_schema", "json_schema": person()}, "end": "</function>"}],
           "at_least_one": at_least_one, "stop_after_first": stop_after_first})
}

const CALL1: &str = r#"<function=func1>{"name": "John", "age": 30}</function>"#;
const CALL2: &str = r#"<function=func2>{"name": "Jane", "age": 25}</function>"#;

#[test]
fn triggered_tags_follow_a_tag_wherever_a_trigger_appears() {
    let mixed = format!("any_text{CALL1}any_text1{CALL2}any_text2");
    let two = format!("{CALL1}{CALL2}");
    check(
        functions(false, false),
        &["", "just prose <functio", CALL1, CALL2, &mixed, &two],
        &[
            "x <function=func3>{}",
            r#"<function=func1>{"name": "John"}</function>"#,
            "<function=func1>{\"name\": \"John\", \"age\": 30}",
            "<function=",
        ],
    );
}

#[test]
fn at_least_one_starts_with_a_tag_and_stop_after_first_ends_after_one() {
    let after = format!("{CALL1} then text");
    let two = format!("{CALL1}{CALL2}");
    let prose_then_call = format!("prose {CALL1}");
    check(
        functions(true, false),
        &[CALL1, &after, &two],
        &["", "prose", &prose_then_call],
    );
    check(
        functions(false, true),
        &["", "prose", CALL1, &prose_then_call],
        &[&after, &two],
    );
    check(
        functions(true, true),
        &[CALL1, CALL2],
        &["", &prose_then_call, &after, &two],
    );
}

#[test]
fn tags_with_a_separator_allow_nothing_else() {
    let tags = json!([
        {"type": "tag", "begin": "<function=func1>", "content": {"type": "json_schema", "json_schema": person()}, "end": "</function>"},
        {"type": "tag", "begin": "<function=func2>", "content": {"type": "json_schema", "json_schema": person()}, "end": "</function>"}]);
    let two = format!("{CALL1},{CALL2}");
    let three = format!("{CALL1},{CALL2},{CALL1}");
    let spaced = format!("{CALL1}, {CALL2}");
    check(
        json!({"type": "tags_with_separator", "tags": tags, "separator": ","}),
        &["", CALL1, &two, &three],
        &[&spaced, "prose", &format!("{CALL1},")],
    );
    check(
        json!({"type": "tags_with_separator", "tags": tags, "separator": ",", "at_least_one": true}),
        &[CALL1, &two],
        &[""],
    );
    check(
        json!({"type": "tags_with_separator", "tags": tags, "separator": ",", "stop_after_first": true}),
        &["", CALL1],
        &[&two],
    );
}

#[test]
fn xgrammars_think_then_tool_calls_example_holds() {
    let tag = json!({"type": "sequence", "elements": [
        {"type": "tag", "begin": "<think>", "content": {"type": "any_text"}, "end": "</think>"},
        functions(false, false)]});
    let full = format!("<think>I should call it</think>Sure. {CALL1} Done.");
    check(
        tag.clone(),
        &["<think></think>", &full],
        &["no think", "<think>x</think><function=func9>"],
    );
    let forced = json!({"type": "sequence", "elements": [
        {"type": "tag", "begin": "<think>", "content": {"type": "any_text"}, "end": "</think>"},
        functions(true, true)]});
    let one = format!("<think>a</think>{CALL2}");
    check(forced, &[&one], &["<think>a</think>", &format!("{one}x")]);
}

#[test]
fn a_tag_list_inside_a_triggered_tag_stops_at_its_end_text() {
    // XGrammar's Phi-4-mini example: one trigger opens a list of calls.
    let call = |name: &str| {
        json!({"begin": format!("{{\"name\": \"{name}\", \"arguments\": "),
               "content": {"type": "json_schema", "json_schema": {"type": "object"}}, "end": "}"})
    };
    let tag = json!({"type": "triggered_tags", "triggers": ["<|tool_call|>"], "stop_after_first": true,
        "tags": [{"begin": "<|tool_call|>[", "end": "]<|/tool_call|>",
                  "content": {"type": "tags_with_separator", "separator": ", ",
                              "tags": [call("f"), call("g")]}}]});
    check(
        tag,
        &[
            "text <|tool_call|>[{\"name\": \"f\", \"arguments\": {}}, {\"name\": \"g\", \"arguments\": {\"x\": 1}}]<|/tool_call|>",
            "<|tool_call|>[]<|/tool_call|>",
            "only text",
        ],
        &[
            "<|tool_call|>[{\"name\": \"h\", \"arguments\": {}}]<|/tool_call|>",
            "<|tool_call|>[]<|/tool_call|> more",
        ],
    );
}

#[test]
fn vllms_older_structures_and_triggers_are_triggered_tags_of_schemas() {
    let legacy = json!({"type": "structural_tag",
        "structures": [{"begin": "<function=func1>", "schema": person(), "end": "</function>"}],
        "triggers": ["<function="]});
    let mixed = format!("hi {CALL1} bye");
    for text in ["", "plain", CALL1, &mixed] {
        let mut m = matcher(&legacy);
        assert!(
            m.accept_bytes(text.as_bytes()).is_ok() && m.is_accepting(),
            "{text}"
        );
    }
    let mut m = matcher(&legacy);
    assert!(m.accept_bytes(b"<function=func1>{}").is_err());
}

#[test]
fn a_structural_tag_composes_with_other_constraints() {
    let tag = json!({"type": "structural_tag", "format": {"type": "json_schema", "json_schema": {"type": "integer"}}});
    let both = Constraint::Sequence(vec![
        Constraint::JsonSchema(json!({"type": "integer"})),
        Constraint::Text(";".into()),
        Constraint::StructuralTag(tag),
        Constraint::Text(";".into()),
        Constraint::JsonSchema(json!({"type": "integer"})),
    ]);
    let index = TokenIndex::new(constrain_testdata::byte_vocabulary());
    let mut m = Matcher::new(
        both.compile_for(index, &options())
            .expect("compiles")
            .grammar,
    );
    assert!(m.accept_bytes(b"1;2;3").is_ok() && m.is_accepting());
}

#[test]
fn errors_name_the_json_pointer_and_what_was_expected() {
    assert_eq!(pointer_of(json!({"type": "structural_tag"})), "");
    assert_eq!(
        pointer_of(json!({"type": "structural_tags", "format": {}})),
        "/type"
    );
    assert_eq!(
        pointer_of(json!({"format": {"type": "sequence", "elements": [
            {"type": "const_string", "value": "a"}, {"type": "nope"}]}})),
        "/format/elements/1/type"
    );
    assert_eq!(
        pointer_of(json!({"format": {"type": "const_string", "value": 3}})),
        "/format/value"
    );
    assert_eq!(
        pointer_of(
            json!({"format": {"type": "triggered_tags", "triggers": ["<f="],
            "tags": [{"begin": "<g=x>", "content": {"type": "any_text"}, "end": "</g>"}]}})
        ),
        "/format/tags/0/begin"
    );
    assert_eq!(
        pointer_of(json!({"format": {"type": "sequence", "elements": [
            {"type": "any_text"}, {"type": "const_string", "value": "x"}]}})),
        "/format/elements/0"
    );
    assert_eq!(
        pointer_of(
            json!({"format": {"type": "tag", "begin": "<a>", "content": {"type": "any_text"}, "end": ""}})
        ),
        "/format/end"
    );
    // A part that its own front-end refuses: the pointer is the part's, the cause kept.
    let error = error_of(json!({"format": {"type": "tag", "begin": "<a>",
        "content": {"type": "json_schema", "json_schema": {"type": "strnig"}}, "end": "</a>"}}));
    assert!(
        matches!(&error, Error::StructuralTagPart { pointer, source }
            if pointer == "/format/content" && matches!(**source, Error::Schema(_))),
        "{error}"
    );
    assert!(error.to_string().contains("/format/content"), "{error}");
    assert_eq!(
        pointer_of(json!({"format": {"type": "regex", "pattern": "(unclosed"}})),
        "/format"
    );
    let message = error_of(json!({"format": {"type": "tag", "begin": "<a>"}})).to_string();
    assert!(message.contains("\"content\""), "{message}");
}

#[test]
fn a_structural_tag_over_the_source_budget_is_refused() {
    let limits = Limits {
        max_source_bytes: 64,
        ..Limits::default()
    };
    let tag = json!({"format": {"type": "const_string", "value": "x".repeat(100)}});
    assert!(matches!(
        Constraint::StructuralTag(tag).build(&CompileOptions::with_limits(limits)),
        Err(Error::Grammar(
            constrain::GrammarError::LimitExceeded { .. }
        ))
    ));
}

/// Whether `text` can begin an output of `(T <f=g>D</f>)* T`, T free text without `<f=`, D
/// digits: the oracle of the real-tokenizer test.
fn oracle_prefix(mut text: &str) -> bool {
    const TRIGGER: &str = "<f=";
    loop {
        let Some(at) = text.find(TRIGGER) else {
            return true;
        };
        let rest = &text[at + TRIGGER.len()..];
        let Some(rest) = rest.strip_prefix("g>") else {
            return "g>".starts_with(rest);
        };
        let digits = rest.len() - rest.trim_start_matches(|c: char| c.is_ascii_digit()).len();
        let rest = &rest[digits..];
        if rest.is_empty() {
            return true;
        }
        if digits == 0 {
            return false;
        }
        match rest.strip_prefix("</f>") {
            Some(after) => text = after,
            None => return "</f>".starts_with(rest),
        }
    }
}

#[test]
fn masks_are_exact_with_a_real_tokenizer_where_triggers_split_across_tokens() {
    let Some(_) = constrain_testdata::require_shared_or_skip("structural tag masks") else {
        return;
    };
    let path = constrain_testdata::shared_tokenizer("qwen3").expect("shared dir exists");
    let tokenizer = Tokenizer::from_file(path).expect("loads");
    let vocab = tokenizer.vocabulary().clone();
    let index = TokenIndex::new(vocab.clone());
    let tag = json!({"type": "structural_tag", "format": {"type": "triggered_tags", "triggers": ["<f="],
        "tags": [{"begin": "<f=g>", "content": {"type": "regex", "pattern": "[0-9]+"}, "end": "</f>"}]}});
    let compiled = Constraint::StructuralTag(tag)
        .compile_for(index, &options())
        .expect("compiles")
        .grammar;
    let pieces: Vec<(u32, String, TokenKind)> = vocab
        .iter()
        .filter_map(|(id, bytes, kind)| Some((id, String::from_utf8(bytes.to_vec()).ok()?, kind)))
        .collect();
    // Prefixes that end inside a trigger, inside a begin text, inside digits, inside an end text.
    let prefixes = [
        "Hi <",
        "Hi <f",
        "Hi <f=",
        "x <f=g>1",
        "x <f=g>12</",
        "<f=g>1</f> and <",
    ];
    let mut checked = 0;
    for prefix in prefixes {
        let mut m = Matcher::new(compiled.clone());
        m.accept_bytes(prefix.as_bytes()).expect("a valid prefix");
        let mut mask = vec![0u32; compiled.mask_words()];
        m.fill_mask(&mut mask).expect("mask");
        for (id, text, kind) in &pieces {
            if *kind != TokenKind::Text {
                continue;
            }
            let allowed = mask[(*id >> 5) as usize] >> (*id & 31) & 1 == 1;
            let expected = oracle_prefix(&format!("{prefix}{text}"));
            assert_eq!(allowed, expected, "after {prefix:?}, token {id} {text:?}");
            checked += 1;
        }
    }
    assert!(checked > 100_000, "{checked}");
    // A whole output, token by token as the tokenizer splits it, each token in the mask.
    let output = "Sure <f=g>42</f> then <f=g>7</f>.";
    let mut m = Matcher::new(compiled.clone());
    for id in tokenizer.encode(output).expect("encodes") {
        assert!(
            m.is_token_allowed(id).expect("mask"),
            "token {id} of {output:?}"
        );
        m.accept_token(id).expect("accepted");
    }
    assert!(m.is_accepting());
}
