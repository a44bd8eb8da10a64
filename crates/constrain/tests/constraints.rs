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

fn call_schema() -> serde_json::Value {
    json!({"type": "object", "properties": {"name": {"const": "f"},
        "arguments": {"type": "object", "properties": {"n": {"type": "integer"}},
                      "required": ["n"], "additionalProperties": false}},
        "required": ["name", "arguments"], "additionalProperties": false})
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

#[test]
fn tool_calls_compose_text_and_a_schema() {
    let format = ToolCallFormat::hermes();
    let call = Constraint::JsonSchema(call_schema());
    let parallel = format.calls(call.clone(), true);
    assert!(accepts(&parallel, ONE));
    assert!(accepts(&parallel, &format!("{ONE}\n{ONE}")));
    assert!(!accepts(
        &parallel,
        "<tool_call>{\"name\": \"g\", \"arguments\": {\"n\": 1}}</tool_call>"
    ));
    let single = format.calls(call.clone(), false);
    assert!(accepts(&single, ONE));
    assert!(!accepts(&single, &format!("{ONE}\n{ONE}")));

    let or_answer = Constraint::AnyOf(vec![
        single,
        Constraint::JsonSchema(json!({"type": "boolean"})),
    ]);
    assert!(accepts(&or_answer, ONE));
    assert!(accepts(&or_answer, "true"));
    assert!(!accepts(&or_answer, "1"));

    let after = format.after_open(call, true);
    assert!(accepts(
        &after,
        &format!("{{\"name\": \"f\", \"arguments\": {{\"n\": 2}}}}</tool_call>\n{ONE}")
    ));
}

#[test]
fn a_part_used_twice_is_compiled_once() {
    let call = Constraint::JsonSchema(call_schema());
    let once = ToolCallFormat::hermes()
        .calls(call.clone(), false)
        .grammar()
        .unwrap();
    let twice = ToolCallFormat::hermes()
        .calls(call, true)
        .grammar()
        .unwrap();
    // The parallel form adds only its own rule: the schema's rules are not copied again.
    assert_eq!(twice.rule_count(), once.rule_count());
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
