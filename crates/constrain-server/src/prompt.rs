//! A chat request's messages as the turns of a chat template: the tools listed in the system
//! turn, the assistant's past calls spelled as the model writes them, tool results as
//! `<tool_response>` turns; and the tokenizer that turns the rendered prompt into tokens.

use constrain::ToolCallFormat;
use constrain_llama::ChatMessage;

use crate::api::{Message, Tool};
use crate::error::ApiError;
use crate::tools;

/// Text to token ids, as the handlers need it: implemented by llama.cpp's model, and by the
/// fake models of the tests.
pub trait Tokenize: Send + Sync {
    /// The tokens of `text`, special tokens written as text (a chat template's turn markers)
    /// read as those tokens; the error says why the text cannot be tokenized.
    fn tokenize(&self, text: &str) -> Result<Vec<u32>, String>;
}

impl<T: Tokenize + ?Sized> Tokenize for &T {
    fn tokenize(&self, text: &str) -> Result<Vec<u32>, String> {
        (**self).tokenize(text)
    }
}

/// The turns to render. `tools` are listed in the system turn (`required`: the model is told it
/// must call one); `None` lists none. Past calls are spelled in `format`.
pub fn chat_messages(
    messages: &[Message],
    tools: Option<(&[&Tool], bool)>,
    format: &ToolCallFormat,
) -> Result<Vec<ChatMessage>, ApiError> {
    if messages.is_empty() {
        return Err(ApiError::invalid_param(
            "messages",
            "messages must hold at least one message",
        ));
    }
    let mut out: Vec<ChatMessage> = Vec::new();
    let mut system = Vec::new();
    for (i, m) in messages.iter().enumerate() {
        let param = format!("messages[{i}]");
        let text = match &m.content {
            Some(c) => c.text(&format!("{param}.content"))?,
            None => String::new(),
        };
        match m.role.as_str() {
            "system" | "developer" => system.push(text),
            "user" => {
                let text = match &m.name {
                    Some(name) if !name.is_empty() => format!("{name}: {text}"),
                    _ => text,
                };
                out.push(ChatMessage::new("user", text));
            }
            "assistant" => {
                let mut text = text;
                let calls: Vec<(&str, &str)> = m
                    .tool_calls
                    .iter()
                    .flatten()
                    .filter(|c| c.custom.is_none())
                    .map(|c| (c.function.name.as_str(), c.function.arguments.as_str()))
                    .collect();
                if !calls.is_empty() {
                    if !text.is_empty() {
                        text.push('\n');
                    }
                    text.push_str(&tools::render_calls(format, &calls));
                }
                // Custom tools' calls, in the format's text-call form.
                for custom in m
                    .tool_calls
                    .iter()
                    .flatten()
                    .filter_map(|c| c.custom.as_ref())
                {
                    let Some(call) = format.render_text_call(&custom.name, &custom.input) else {
                        return Err(ApiError::invalid_param(
                            &format!("{param}.tool_calls"),
                            "a custom tool's call in the history needs the generic tool-call \
                             format",
                        ));
                    };
                    if !text.is_empty() {
                        text.push('\n');
                    }
                    text.push_str(&call);
                }
                out.push(ChatMessage::new("assistant", text));
            }
            "tool" | "function" => {
                let response = format!("<tool_response>\n{text}\n</tool_response>");
                // Results of one round of calls share one turn.
                match out.last_mut() {
                    Some(last)
                        if last.role == "user" && last.content.ends_with("</tool_response>") =>
                    {
                        last.content.push('\n');
                        last.content.push_str(&response);
                    }
                    _ => out.push(ChatMessage::new("user", response)),
                }
            }
            other => {
                return Err(ApiError::invalid_param(
                    &format!("{param}.role"),
                    format!(
                        "unknown role {other:?}: use system, developer, user, assistant or tool"
                    ),
                ))
            }
        }
    }
    if let Some((tools, required)) = tools {
        if !tools.is_empty() {
            system.push(tools::system_prompt(tools, required, format));
        }
    }
    let system: Vec<String> = system.into_iter().filter(|s| !s.is_empty()).collect();
    if !system.is_empty() {
        out.insert(0, ChatMessage::new("system", system.join("\n\n")));
    }
    Ok(out)
}

/// The messages as a Jinja chat template reads them: OpenAI's shape (`role`, `content` as text
/// or null, `tool_calls` with JSON-text arguments, `tool_call_id`, `name`), `developer` turns
/// as `system` ones.
pub fn jinja_messages(messages: &[Message]) -> Result<Vec<serde_json::Value>, ApiError> {
    use serde_json::json;
    if messages.is_empty() {
        return Err(ApiError::invalid_param(
            "messages",
            "messages must hold at least one message",
        ));
    }
    messages
        .iter()
        .enumerate()
        .map(|(i, m)| {
            let content = match &m.content {
                Some(c) => json!(c.text(&format!("messages[{i}].content"))?),
                None => serde_json::Value::Null,
            };
            let role = if m.role == "developer" {
                "system"
            } else {
                m.role.as_str()
            };
            let mut out = json!({"role": role, "content": content});
            if let Some(calls) = &m.tool_calls {
                out["tool_calls"] = calls
                    .iter()
                    .map(|c| {
                        json!({"id": c.id, "type": "function", "function": {
                            "name": c.function.name, "arguments": c.function.arguments}})
                    })
                    .collect();
            }
            if let Some(id) = &m.tool_call_id {
                out["tool_call_id"] = json!(id);
            }
            if let Some(name) = &m.name {
                out["name"] = json!(name);
            }
            Ok(out)
        })
        .collect()
}

/// The tools as a Jinja chat template reads them (OpenAI's function tools).
pub fn jinja_tools(tools: &[&Tool]) -> Vec<serde_json::Value> {
    tools
        .iter()
        .filter(|t| t.kind == "function")
        .map(|t| {
            let mut function = serde_json::json!({"name": t.function.name});
            if let Some(d) = &t.function.description {
                function["description"] = serde_json::json!(d);
            }
            function["parameters"] = t
                .function
                .parameters
                .clone()
                .unwrap_or_else(|| serde_json::json!({"type": "object", "properties": {}}));
            serde_json::json!({"type": "function", "function": function})
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use constrain_llama::ChatTemplate;
    use serde_json::json;

    fn messages(v: serde_json::Value) -> Vec<Message> {
        serde_json::from_value(v).unwrap()
    }

    #[test]
    fn a_tool_round_trip_renders_with_gemma() {
        let m = messages(json!([
            {"role": "system", "content": "Be brief."},
            {"role": "user", "content": "Weather in Oslo?"},
            {"role": "assistant", "content": null, "tool_calls": [
                {"id": "c1", "type": "function", "function": {"name": "get_weather", "arguments": "{\"city\":\"Oslo\"}"}}]},
            {"role": "tool", "tool_call_id": "c1", "content": "12C"}
        ]));
        let tool: Tool = serde_json::from_value(json!({"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object"}}})).unwrap();
        let turns = chat_messages(&m, Some((&[&tool], false)), &ToolCallFormat::generic()).unwrap();
        assert_eq!(turns.len(), 4);
        assert_eq!(turns[0].role, "system");
        assert!(turns[0].content.starts_with("Be brief.\n\nYou may call"));
        assert_eq!(
            turns[2].content,
            "<tool_call>{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Oslo\"}}</tool_call>"
        );
        assert_eq!(turns[3].content, "<tool_response>\n12C\n</tool_response>");
        let text = ChatTemplate::Gemma.render(&turns, true);
        assert!(text.starts_with("<start_of_turn>user\nBe brief."));
        assert!(text.contains("<start_of_turn>model\n<tool_call>"));
        assert!(text.ends_with("</tool_response><end_of_turn>\n<start_of_turn>model\n"));
    }

    #[test]
    fn bad_roles_and_empty_conversations() {
        let generic = ToolCallFormat::generic();
        assert!(chat_messages(&[], None, &generic).is_err());
        let e = chat_messages(
            &messages(json!([{"role": "robot", "content": "x"}])),
            None,
            &generic,
        )
        .unwrap_err();
        assert_eq!(e.param.as_deref(), Some("messages[0].role"));
    }
}
