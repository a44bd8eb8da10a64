//! Every kind of constraint through the facade: leaves, compositions (tool calls), the
//! cache, and what a composition refuses.

use std::sync::Arc;

use constrain::{
    CompileOptions, Constraint, Error, GrammarCache, Limits, Matcher, SchemaOptions, Separators,
    TokenIndex, ToolCallFormat, Whitespace,
};
use serde_json::json;

fn index() -> Arc<TokenIndex> {
    TokenIndex::new(constrain_testdata::byte_vocabulary())
}

/// Compact JSON with Python's separators, as the surfaces generate it.
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

fn accepts(constraint: &Constraint, text: &str) -> bool {
    let compiled = constraint
        .compile_for(index(), &options())
        .expect("compiles")
        .grammar;
    let mut m = Matcher::new(compiled);
    m.accept_bytes(text.as_bytes()).is_ok() && m.is_accepting()
}

const ONE: &str = "<tool_call>{\"name\": \"f\", \"arguments\": {\"n\": 1}}</tool_call>";

#[test]
fn every_leaf_kind_compiles_through_one_entry() {
    assert!(accepts(
        &Constraint::JsonSchema(json!({"type": "boolean"})),
        "true"
    ));
    assert!(accepts(&Constraint::Regex("[a-c]{2}".into()), "ab"));
    assert!(!accepts(&Constraint::Regex("[a-c]{2}".into()), "abc"));
    assert!(accepts(
        &Constraint::Gbnf("root ::= \"x\" [0-9]".into()),
        "x7"
    ));
    assert!(accepts(
        &Constraint::GbnfWithRoot("top ::= \"y\"".into(), "top".into()),
        "y"
    ));
    assert!(accepts(&Constraint::Text("exactly".into()), "exactly"));
    let lark = Constraint::Lark("start: \"x\" INT\n%import common.INT\n%ignore \" \"".into());
    assert!(accepts(&lark, "x 42"));
    assert!(!accepts(&lark, "x4 2"));
}

#[test]
fn a_lark_grammar_composes_and_its_errors_keep_their_place() {
    let call = Constraint::Sequence(vec![
        Constraint::Text("<call>".into()),
        Constraint::Lark("start: \"f(\" [CNAME] \")\"\n%import common.CNAME".into()),
        Constraint::Text("</call>".into()),
    ]);
    assert!(accepts(&call, "<call>f(x)</call>"));
    assert!(!accepts(&call, "<call>f(1)</call>"));
    let error = Constraint::Lark("start: A\nA: /(?=a)a/".into())
        .compile_for(index(), &options())
        .expect_err("look-ahead has no exact equivalent");
    assert!(matches!(&error, Error::Lark(e) if e.line() == Some(2) && e.column() == Some(4)));
    let small = CompileOptions::with_limits(Limits {
        max_source_bytes: 8,
        ..Limits::default()
    });
    assert!(Constraint::Lark("start: \"long enough\"".into())
        .compile_for(index(), &small)
        .is_err());
}

#[test]
fn schemas_take_the_compilations_options_unless_they_carry_their_own() {
    let schema = json!({"type": "object", "properties": {"a": {"type": "integer"}}});
    // The compilation's options: Python's separators, no other whitespace.
    assert!(accepts(
        &Constraint::JsonSchema(schema.clone()),
        "{\"a\": 1}"
    ));
    assert!(!accepts(
        &Constraint::JsonSchema(schema.clone()),
        "{\"a\":1}"
    ));
    let own = SchemaOptions {
        whitespace: Whitespace::Compact,
        separators: Some(Separators::compact()),
        ..SchemaOptions::default()
    };
    assert!(accepts(
        &Constraint::JsonSchemaWith(schema, own),
        "{\"a\":1}"
    ));
}

fn tools() -> Vec<(String, Constraint)> {
    vec![(
        "f".to_string(),
        Constraint::JsonSchema(
            json!({"type": "object", "properties": {"n": {"type": "integer"}},
            "required": ["n"], "additionalProperties": false}),
        ),
    )]
}

#[test]
fn tool_calls_compose_text_and_a_schema() {
    let format = ToolCallFormat::generic();
    let parallel = format.calls(&tools(), true);
    assert!(accepts(&parallel, ONE));
    assert!(accepts(&parallel, &format!("{ONE}\n{ONE}")));
    assert!(!accepts(
        &parallel,
        "<tool_call>{\"name\": \"g\", \"arguments\": {\"n\": 1}}</tool_call>"
    ));
    assert!(!accepts(
        &parallel,
        "<tool_call>{\"name\": \"f\", \"arguments\": {\"n\": 1.5}}</tool_call>"
    ));
    let single = format.calls(&tools(), false);
    assert!(accepts(&single, ONE));
    assert!(!accepts(&single, &format!("{ONE}\n{ONE}")));

    let or_answer = Constraint::AnyOf(vec![
        single,
        Constraint::JsonSchema(json!({"type": "boolean"})),
    ]);
    assert!(accepts(&or_answer, ONE));
    assert!(accepts(&or_answer, "true"));
    assert!(!accepts(&or_answer, "1"));

    let after = format.after_trigger(&tools(), true);
    assert!(accepts(
        &after,
        &format!("{{\"name\": \"f\", \"arguments\": {{\"n\": 2}}}}</tool_call>\n{ONE}")
    ));
}

#[test]
fn every_family_accepts_what_it_renders_and_nothing_else() {
    for name in constrain::TOOL_CALL_FORMATS {
        let format = ToolCallFormat::from_name(name).unwrap();
        let one = format.render(&[("f", "{\"n\": 1}")]);
        let two = format.render(&[("f", "{\"n\": 1}"), ("f", "{\"n\": 2}")]);
        assert!(
            accepts(&format.calls(&tools(), false), &one),
            "{name}: {one}"
        );
        assert!(!accepts(&format.calls(&tools(), false), &two), "{name}");
        assert_eq!(
            accepts(&format.calls(&tools(), true), &two),
            format.allows_parallel(),
            "{name}: {two}"
        );
        let rest = one
            .strip_prefix(format.trigger_text())
            .expect("the trigger opens it");
        assert!(
            accepts(&format.after_trigger(&tools(), true), rest),
            "{name}"
        );
        let bad = format.render(&[("f", "{\"n\": \"x\"}")]);
        assert!(!accepts(&format.calls(&tools(), true), &bad), "{name}");
    }
}

#[test]
fn a_part_used_twice_is_compiled_once() {
    let once = ToolCallFormat::generic()
        .calls(&tools(), false)
        .grammar()
        .unwrap();
    let twice = ToolCallFormat::generic()
        .calls(&tools(), true)
        .grammar()
        .unwrap();
    // The parallel form adds only its own rules: the schema's rules are not copied again.
    assert!(
        twice.rule_count() <= once.rule_count() + 3,
        "{} vs {}",
        twice.rule_count(),
        once.rule_count()
    );
}

#[test]
fn a_check_beside_a_grammar_cannot_be_composed() {
    let unique = Constraint::JsonSchema(json!({"type": "array", "uniqueItems": true}));
    assert!(unique.grammar().is_ok(), "alone it compiles");
    let composed = Constraint::Sequence(vec![Constraint::Text("x".into()), unique]);
    let err = composed.grammar().unwrap_err();
    assert!(matches!(err, Error::Grammar(_)), "{err}");
    assert!(err.to_string().contains("only"), "{err}");
}

#[test]
fn the_compile_time_budget_covers_every_part() {
    let limits = Limits {
        max_compile_time: Some(std::time::Duration::ZERO),
        ..Limits::default()
    };
    let two = Constraint::Sequence(vec![
        Constraint::JsonSchema(json!({"type": "string"})),
        Constraint::Regex("[0-9]+".into()),
    ]);
    let err = two.compile_with(index(), &limits).unwrap_err();
    assert!(err.to_string().contains("time"), "{err}");
}

#[test]
fn the_cache_keeps_compilations_and_failures_by_key() {
    let cache = GrammarCache::new(index(), options(), 4);
    let regex = Constraint::Regex("a+".into());
    let (first, hit) = cache.get(&regex);
    assert!(!hit);
    let (second, hit) = cache.get(&regex);
    assert!(hit);
    assert!(Arc::ptr_eq(&first.unwrap(), &second.unwrap()));

    let bad =
        Constraint::JsonSchema(json!({"type": "object", "properties": {"a": {"minimum": "x"}}}));
    let err = cache.get(&bad).0.unwrap_err();
    assert!(err.to_string().contains("/properties/a"), "{err}");
    assert!(cache.get(&bad).1, "a failure is cached too");

    for i in 0..10 {
        cache
            .get(&Constraint::Regex(format!("b{{{i}}}")))
            .0
            .unwrap();
    }
    assert_eq!(cache.len(), 4);
}

#[test]
fn warnings_travel_with_the_compilation() {
    let schema = json!({"type": "string", "format": "no-such-format"});
    let compiled = Constraint::JsonSchema(schema)
        .compile_for(index(), &options())
        .unwrap();
    assert_eq!(compiled.warnings.len(), 1, "{:?}", compiled.warnings);
    assert!(compiled.warnings[0].to_string().contains("no-such-format"));
}

#[test]
fn schema_text_errors_name_line_and_column() {
    let err = constrain::parse_schema("{\n  \"type\": }", &Limits::default()).unwrap_err();
    let text = err.to_string();
    assert!(text.contains("line 2"), "{text}");
    let limits = Limits {
        max_source_bytes: 4,
        ..Limits::default()
    };
    assert!(constrain::parse_schema("{\"type\": \"string\"}", &limits).is_err());
}

#[test]
fn tool_formats_are_detected_from_the_published_templates() {
    let Some(shared) = constrain_testdata::require_shared_or_skip("tool format detection") else {
        return;
    };
    for (model, family) in [
        ("qwen3", "hermes"),
        ("deepseek_v3", "deepseek"),
        ("gemma3", "generic"),
        // This Llama 3.1 template predates tool calling: nothing in it says how calls look.
        ("llama3_1", "generic"),
    ] {
        let config = shared
            .join("tokenizers")
            .join(model)
            .join("tokenizer_config.json");
        let config: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(&config).unwrap()).unwrap();
        let template = config["chat_template"].as_str().unwrap();
        assert_eq!(ToolCallFormat::detect(template).name(), family, "{model}");
    }
}

#[test]
fn lark_embeds_json_schemas_with_percent_json() {
    let grammar = Constraint::Lark(
        r#"start: "Result: " item ("," item)*
item: %json {"type": "object", "properties": {"n": {"type": "integer"}},
              "required": ["n"], "additionalProperties": false}
"#
        .into(),
    );
    assert!(accepts(&grammar, "Result: {\"n\": 1}"));
    assert!(accepts(&grammar, "Result: {\"n\": 1},{\"n\": -2}"));
    assert!(!accepts(&grammar, "Result: {\"n\": 1.5}"));
    assert!(!accepts(&grammar, "Result: {\"m\": 1}"));
    // Errors say where: a bad schema, JSON that is not, a %json inside a terminal.
    for (text, expected) in [
        (
            "start: %json {\"type\": 5}",
            "1:8: %json: invalid schema at /type",
        ),
        ("start: %json {\"type\": }", "not JSON"),
        ("start: A\nA: %json {}", "not a terminal's"),
        ("start: %json [1]", "JSON object"),
    ] {
        let err = Constraint::Lark(text.into()).grammar().unwrap_err();
        assert!(err.to_string().contains(expected), "{text}: {err}");
    }
}

#[test]
fn lark_numbers_stay_within_their_terminal() {
    let grammar = Constraint::Lark(
        "start: expr\nexpr: term ((\"+\" | \"-\") term)*\nterm: NUMBER | \"(\" expr \")\"\nNUMBER: /[0-9]{1,4}/\n%ignore \" \"\n"
            .into(),
    );
    assert!(accepts(&grammar, "1315"));
    assert!(accepts(&grammar, "13 + 14"));
    assert!(!accepts(&grammar, "131314141515"));
    assert!(!accepts(&grammar, "1313 1414"));
}
