//! Tool calls: how tools are shown to the model, what its calls are constrained to, and the
//! checks a request's tools go through. How calls are spelled, and read back, is the model
//! family's [`ToolCallFormat`] (the server's `--tool-format`, by default the one its chat
//! template writes): for instance, with the `generic` format,
//!
//! ```text
//! <tool_call>{"name": "get_weather", "arguments": {"city": "Oslo"}}</tool_call>
//! ```
//!
//! several calls one per line, the tools listed in the system turn.

use constrain::ToolCallFormat;
use serde_json::{json, Value};

use crate::api::Tool;
use crate::error::ApiError;

/// The system text that lists the tools and how to call them in `format`.
pub fn system_prompt(tools: &[&Tool], required: bool, format: &ToolCallFormat) -> String {
    let mut text = String::new();
    if required {
        text.push_str("You must call one of the functions below to answer the user.\n");
    } else {
        text.push_str(
            "You may call one or more of the functions below to assist with the user query, \
             or answer directly.\n",
        );
    }
    text.push_str("Function signatures, within <tools></tools> tags:\n<tools>\n");
    for tool in tools {
        if let Some(custom) = tool.custom.as_ref().filter(|_| tool.kind == "custom") {
            let mut entry = json!({"type": "custom", "name": custom.name});
            if let Some(d) = &custom.description {
                entry["description"] = json!(d);
            }
            if let Some(f) = &custom.format {
                entry["format"] = f.clone();
            }
            text.push_str(&entry.to_string());
            text.push('\n');
            continue;
        }
        let mut function = json!({"name": tool.function.name});
        if let Some(d) = &tool.function.description {
            function["description"] = json!(d);
        }
        function["parameters"] = parameters(tool);
        text.push_str(&json!({"type": "function", "function": function}).to_string());
        text.push('\n');
    }
    let example = format.render(&[("<function-name>", "<args-json-object>")]);
    text.push_str(&format!(
        "</tools>\nTo call a function, write its name and a JSON object of its arguments like \
         this{}:\n{example}",
        if format.allows_parallel() {
            " (several calls one after the other)"
        } else {
            ""
        }
    ));
    if let Some(custom) = format.render_text_call("<tool-name>", "<input>") {
        if tools.iter().any(|t| t.kind == "custom") {
            text.push_str(&format!(
                "\nTo call a custom tool, write its name, a new line, then its input as plain text \
                 in its format:\n{custom}"
            ));
        }
    }
    text
}

/// The input a custom tool takes.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum CustomInput {
    /// Any text.
    Text,
    /// Text in this Lark grammar's language.
    Lark(String),
    /// Text matching this regular expression.
    Regex(String),
}

impl CustomInput {
    /// The constraint of the input, for a format whose text calls end at `close`.
    pub fn constraint(&self, close: &str) -> constrain::Constraint {
        match self {
            CustomInput::Text => constrain::Constraint::StructuralTag(json!({
                "type": "structural_tag",
                "format": {"type": "any_text", "excludes": [close]},
            })),
            CustomInput::Lark(text) => constrain::Constraint::Lark(text.clone()),
            CustomInput::Regex(pattern) => constrain::Constraint::Regex(pattern.clone()),
        }
    }
}

/// A custom tool's `format`: absent or `{"type": "text"}`, or `{"type": "grammar", "grammar":
/// {"syntax": "lark" | "regex", "definition": ...}}` (the flat `syntax` and `definition` of the
/// Responses API's form are taken too).
fn custom_input(format: Option<&Value>, at: &str) -> Result<CustomInput, ApiError> {
    let Some(format) = format.filter(|f| !f.is_null()) else {
        return Ok(CustomInput::Text);
    };
    let bad = |field: &str, why: String| {
        let field = format!("{at}{field}");
        Err(ApiError::invalid_param(&field, format!("{field}: {why}")))
    };
    match format.get("type").and_then(Value::as_str) {
        Some("text") => Ok(CustomInput::Text),
        Some("grammar") => {
            let grammar = format.get("grammar").unwrap_or(format);
            let definition = grammar.get("definition").and_then(Value::as_str);
            let Some(definition) = definition else {
                return bad(
                    ".grammar.definition",
                    "a grammar format needs its definition".into(),
                );
            };
            match grammar.get("syntax").and_then(Value::as_str) {
                Some("lark") => Ok(CustomInput::Lark(definition.into())),
                Some("regex") => Ok(CustomInput::Regex(definition.into())),
                other => bad(
                    ".grammar.syntax",
                    format!(
                        "{} is not one of \"lark\", \"regex\"",
                        other.map_or("absent".into(), |o| format!("{o:?}"))
                    ),
                ),
            }
        }
        other => bad(
            ".type",
            format!(
                "{} is not one of \"text\", \"grammar\"",
                other.map_or("absent".into(), |o| format!("{o:?}"))
            ),
        ),
    }
}

/// The custom tools among `tools`, each with its input.
pub fn custom_callable(tools: &[&Tool]) -> Vec<(String, CustomInput)> {
    tools
        .iter()
        .filter(|t| t.kind == "custom")
        .filter_map(|t| {
            let custom = t.custom.as_ref()?;
            let input = custom_input(custom.format.as_ref(), "").ok()?;
            Some((custom.name.clone(), input))
        })
        .collect()
}

/// A function's parameters schema (none given: an object without properties).
fn parameters(tool: &Tool) -> Value {
    tool.function
        .parameters
        .clone()
        .unwrap_or_else(|| json!({"type": "object", "properties": {}}))
}

/// The calls of an assistant message as the history spells them (`arguments` that are not JSON
/// are kept as a JSON string rather than breaking the format).
pub fn render_calls(format: &ToolCallFormat, calls: &[(&str, &str)]) -> String {
    let spelled: Vec<(&str, String)> = calls
        .iter()
        .map(|(name, arguments)| {
            let args: Value = serde_json::from_str(arguments).unwrap_or_else(|_| json!(arguments));
            (*name, constrain::Separators::python().write(&args))
        })
        .collect();
    let borrowed: Vec<(&str, &str)> = spelled.iter().map(|(n, a)| (*n, a.as_str())).collect();
    format.render(&borrowed)
}

/// Checks tool definitions: `function` or `custom` kind (a custom tool needs a format with
/// text calls), a usable name, object parameters or a known custom format, unique names.
pub fn check_tools(tools: &[Tool], format: &ToolCallFormat) -> Result<(), ApiError> {
    let mut seen = std::collections::HashSet::new();
    for (i, tool) in tools.iter().enumerate() {
        let param = |f: &str| format!("tools[{i}].{f}");
        let name_field = match tool.kind.as_str() {
            "function" => "function.name",
            "custom" => {
                let Some(custom) = &tool.custom else {
                    return Err(ApiError::invalid_param(
                        &param("custom"),
                        format!("tools[{i}] is of type custom but has no `custom` object"),
                    ));
                };
                if !format.allows_text_calls() {
                    return Err(ApiError::invalid_param(
                        &param("type"),
                        format!(
                            "custom tools need the generic tool-call format, and this server \
                             writes calls in the {} format (see `constrain serve --tool-format`)",
                            format.name()
                        ),
                    ));
                }
                custom_input(custom.format.as_ref(), &param("custom.format"))?;
                "custom.name"
            }
            _ => {
                return Err(ApiError::invalid_param(
                    &param("type"),
                    format!(
                        "tools[{i}].type {:?} is not supported; use \"function\" or \"custom\"",
                        tool.kind
                    ),
                ))
            }
        };
        let name = &tool.name().to_string();
        let valid = !name.is_empty()
            && name.len() <= 64
            && name
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-');
        if !valid {
            return Err(ApiError::invalid_param(
                &param(name_field),
                format!("tool name {name:?} must be 1-64 characters of a-z, A-Z, 0-9, _ and -"),
            ));
        }
        if !seen.insert(name.clone()) {
            return Err(ApiError::invalid_param(
                &param(name_field),
                format!("two tools are named {name:?}"),
            ));
        }
        if let Some(p) = &tool.function.parameters {
            if !(p.is_object() || p.is_boolean()) {
                return Err(ApiError::invalid_param(
                    &param("function.parameters"),
                    "parameters must be a JSON Schema (an object)",
                ));
            }
        }
    }
    Ok(())
}

/// The functions a call may name, each with its parameters schema (custom tools aside).
pub fn callable(tools: &[&Tool]) -> Vec<(String, Value)> {
    tools
        .iter()
        .filter(|t| t.kind != "custom")
        .map(|t| (t.function.name.clone(), parameters(t)))
        .collect()
}

/// A schema error inside one tool's parameters, said of that tool (its name, and the JSON
/// pointer inside its own `parameters`); `None` when no tool's parameters alone fail.
pub fn parameters_error(tools: &[(String, Value)], err: &constrain::Error) -> Option<ApiError> {
    let constrain::Error::Schema(_) = err else {
        return None;
    };
    tools.iter().find_map(|(name, parameters)| {
        let constrain::Error::Schema(e) = constrain::Constraint::JsonSchema(parameters.clone())
            .grammar()
            .err()?
        else {
            return None;
        };
        Some(
            ApiError::invalid_param(
                "tools",
                format!(
                    "tools: the parameters of function {name:?}: {e} (JSON pointer '{}')",
                    e.pointer().filter(|p| !p.is_empty()).unwrap_or("/")
                ),
            )
            .with_code("invalid_schema"),
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tool(name: &str, params: Value) -> Tool {
        serde_json::from_value(json!({
            "type": "function",
            "function": {"name": name, "description": "d", "parameters": params}
        }))
        .unwrap()
    }

    #[test]
    fn a_schema_error_in_parameters_names_the_tool_and_its_own_pointer() {
        let good = tool("good", json!({"type": "object"}));
        let bad = tool(
            "bad",
            json!({"type": "object", "properties": {"x": {"type": 5}}}),
        );
        for tools in [vec![&bad], vec![&good, &bad]] {
            let tools = callable(&tools);
            let calls = ToolCallFormat::generic().calls(
                &tools
                    .iter()
                    .map(|(n, p)| (n.clone(), constrain::Constraint::JsonSchema(p.clone())))
                    .collect::<Vec<_>>(),
                false,
            );
            let err = calls.grammar().unwrap_err();
            let api = parameters_error(&tools, &err).expect("inside the parameters");
            assert_eq!(api.param.as_deref(), Some("tools"));
            assert!(
                api.message.contains("function \"bad\"")
                    && api.message.contains("/properties/x/type")
                    && !api.message.contains("arguments"),
                "{}",
                api.message
            );
        }
        let dangling = callable(&[&tool("d", json!({"$ref": "#/$defs/missing"}))]);
        let err = constrain::Constraint::JsonSchema(dangling[0].1.clone())
            .grammar()
            .unwrap_err();
        let api = parameters_error(&dangling, &err).expect("inside the parameters");
        assert!(api.message.contains("'#/$defs/missing'"), "{}", api.message);
    }

    #[test]
    fn tool_checks() {
        let g = ToolCallFormat::generic();
        assert!(check_tools(&[tool("ok_name-1", json!({"type": "object"}))], &g).is_ok());
        let e = check_tools(&[tool("bad name", json!({}))], &g).unwrap_err();
        assert_eq!(e.param.as_deref(), Some("tools[0].function.name"));
        let e = check_tools(&[tool("a", json!({})), tool("a", json!({}))], &g).unwrap_err();
        assert!(e.message.contains("two tools"));
        let custom: Tool = serde_json::from_value(json!({"type": "custom", "custom": {"name": "m",
            "format": {"type": "grammar", "grammar": {"syntax": "lark", "definition": "start: \"x\""}}}}))
        .unwrap();
        assert!(check_tools(std::slice::from_ref(&custom), &g).is_ok());
        let e = check_tools(&[custom], &ToolCallFormat::hermes()).unwrap_err();
        assert_eq!(e.param.as_deref(), Some("tools[0].type"));
        let odd: Tool = serde_json::from_value(json!({"type": "custom", "custom": {"name": "m",
            "format": {"type": "grammar", "grammar": {"syntax": "ebnf", "definition": "x"}}}}))
        .unwrap();
        let e = check_tools(&[odd], &g).unwrap_err();
        assert_eq!(
            e.param.as_deref(),
            Some("tools[0].custom.format.grammar.syntax")
        );
        let e = check_tools(&[tool("a", json!("string"))], &g).unwrap_err();
        assert_eq!(e.param.as_deref(), Some("tools[0].function.parameters"));
    }

    #[test]
    fn the_history_spells_calls_as_the_grammar_does() {
        assert_eq!(
            render_calls(&ToolCallFormat::generic(), &[("f", "{\"a\":1}")]),
            "<tool_call>{\"name\": \"f\", \"arguments\": {\"a\": 1}}</tool_call>"
        );
        assert_eq!(
            render_calls(&ToolCallFormat::mistral(), &[("f", "{}"), ("g", "not json")]),
            "[TOOL_CALLS] [{\"name\": \"f\", \"arguments\": {}}, {\"name\": \"g\", \"arguments\": \"not json\"}]"
        );
        let text = system_prompt(
            &[&tool("f", json!({"type": "object"}))],
            true,
            &ToolCallFormat::hermes(),
        );
        assert!(text.contains("\"name\":\"f\"") && text.contains("must call"));
        assert!(
            text.contains("<tool_call>\n{\"name\": \"<function-name>\""),
            "{text}"
        );
    }
}
