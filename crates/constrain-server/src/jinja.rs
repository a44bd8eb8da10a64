//! A model's own chat template: the Jinja text its makers ship (a file, or the GGUF's
//! metadata), rendered with MiniJinja the way Hugging Face's `apply_chat_template` renders it
//! (`trim_blocks` and `lstrip_blocks`, Python's string methods, `tojson` keeping key order,
//! `raise_exception`, `strftime_now`), with the request's messages, tools and
//! `enable_thinking`. Such a template shows the tools and past calls as the model was trained
//! to read them, which the built-in templates can only approximate.

use std::path::Path;

use minijinja::syntax::SyntaxConfig;
use minijinja::value::Kwargs;
use minijinja::{Environment, Error, ErrorKind, Value};
use serde_json::{json, Value as Json};

/// A chat template in Jinja.
pub struct JinjaTemplate {
    env: Environment<'static>,
    text: String,
    bos: String,
    eos: String,
    /// Whether past calls' arguments go in as JSON text (the template writes them as given)
    /// rather than as objects (the template writes them with `tojson`).
    string_arguments: bool,
}

impl std::fmt::Debug for JinjaTemplate {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("JinjaTemplate")
            .field("bytes", &self.text.len())
            .field("string_arguments", &self.string_arguments)
            .finish()
    }
}

impl JinjaTemplate {
    /// The template `text`, with the tokenizer's `bos` and `eos` texts; the error says why it
    /// does not compile.
    pub fn new(text: String, bos: String, eos: String) -> Result<JinjaTemplate, String> {
        let mut env = Environment::new();
        let syntax = SyntaxConfig::builder()
            .trim_blocks(true)
            .lstrip_blocks(true)
            .build()
            .map_err(|e| e.to_string())?;
        env.set_syntax(syntax);
        env.set_unknown_method_callback(minijinja_contrib::pycompat::unknown_method_callback);
        env.add_filter("tojson", tojson);
        env.add_function("raise_exception", raise_exception);
        env.add_function("strftime_now", strftime_now);
        env.add_template_owned("chat", text.clone())
            .map_err(|e| format!("{e:#}"))?;
        let mut template = JinjaTemplate {
            env,
            text,
            bos,
            eos,
            string_arguments: false,
        };
        template.string_arguments = template.takes_string_arguments();
        Ok(template)
    }

    /// A template from `path`: Jinja text, or a `tokenizer_config.json` whose `chat_template`
    /// (a string, or the `default` of a list of named ones) and `bos_token`/`eos_token` are
    /// read.
    pub fn from_file(path: &Path) -> Result<JinjaTemplate, String> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
        let Ok(Json::Object(config)) = serde_json::from_str::<Json>(&text) else {
            return JinjaTemplate::new(text, String::new(), String::new());
        };
        let template = match config.get("chat_template") {
            Some(Json::String(t)) => t.clone(),
            Some(Json::Array(named)) => named
                .iter()
                .find(|t| t["name"] == "default")
                .or_else(|| named.first())
                .and_then(|t| t["template"].as_str())
                .ok_or_else(|| format!("{}: no default chat_template", path.display()))?
                .to_string(),
            _ => return Err(format!("{}: no chat_template in this JSON", path.display())),
        };
        let token = |name: &str| match config.get(name) {
            Some(Json::String(s)) => s.clone(),
            Some(Json::Object(o)) => o
                .get("content")
                .and_then(Json::as_str)
                .unwrap_or_default()
                .to_string(),
            _ => String::new(),
        };
        JinjaTemplate::new(template, token("bos_token"), token("eos_token"))
            .map_err(|e| format!("{}: {e}", path.display()))
    }

    /// The template's text.
    pub fn text(&self) -> &str {
        &self.text
    }

    /// The tokenizer's BOS and EOS texts the template is rendered with.
    pub fn bos_eos(&self) -> (&str, &str) {
        (&self.bos, &self.eos)
    }

    /// Whether the template lists the tools itself (else the server's system text does).
    pub fn shows_tools(&self) -> bool {
        self.text.contains("tools")
    }

    /// Whether the template writes past calls (`tool_calls`) and their results itself.
    pub fn shows_calls(&self) -> bool {
        self.text.contains("tool_calls")
    }

    /// Whether the template writes the empty thought of `enable_thinking: false` itself.
    pub fn switches_thinking(&self) -> bool {
        self.text.contains("enable_thinking")
    }

    /// The prompt of `messages` (OpenAI's shape: `role`, `content`, `tool_calls` with JSON-text
    /// arguments, `tool_call_id`), ending where the assistant's answer starts.
    pub fn render(
        &self,
        messages: &[Json],
        tools: Option<&[Json]>,
        enable_thinking: Option<bool>,
    ) -> Result<String, String> {
        let mut messages = messages.to_vec();
        if !self.string_arguments {
            for m in &mut messages {
                for call in m["tool_calls"].as_array_mut().into_iter().flatten() {
                    let args = &mut call["function"]["arguments"];
                    if let Some(parsed) = args.as_str().and_then(|a| serde_json::from_str(a).ok()) {
                        *args = parsed;
                    }
                }
            }
        }
        let mut context = json!({
            "messages": messages,
            "add_generation_prompt": true,
            "bos_token": self.bos,
            "eos_token": self.eos,
        });
        if let Some(tools) = tools {
            context["tools"] = json!(tools);
        }
        if let Some(on) = enable_thinking {
            context["enable_thinking"] = json!(on);
        }
        let template = self.env.get_template("chat").map_err(|e| e.to_string())?;
        let first = template.render(Value::from(minijinja::value::Serde(&context)));
        let Err(error) = first else {
            return first.map_err(|e| format!("{e:#}"));
        };
        // Some templates read every `content` as text (a call's null one fails there): they
        // get the empty string, as their users pass it.
        let mut nulls = false;
        for m in context["messages"].as_array_mut().into_iter().flatten() {
            if m.get("content").is_some_and(Json::is_null) {
                m["content"] = json!("");
                nulls = true;
            }
        }
        if !nulls {
            return Err(format!("{error:#}"));
        }
        template
            .render(Value::from(minijinja::value::Serde(&context)))
            .map_err(|_| format!("{error:#}"))
    }

    /// Whether a call's arguments given as JSON text come out of the template as that text
    /// (templates that write `arguments` as given) rather than quoted or dropped (templates
    /// that apply `tojson` to an object).
    fn takes_string_arguments(&self) -> bool {
        let probe = "{\"probe_key\": \"probe value\"}";
        let messages = [
            json!({"role": "user", "content": "probe"}),
            json!({"role": "assistant", "content": null, "tool_calls": [{"id": "probe_call",
                "type": "function", "function": {"name": "probe_tool", "arguments": probe}}]}),
        ];
        let mut template = JinjaTemplate {
            env: self.env.clone(),
            text: self.text.clone(),
            bos: String::new(),
            eos: String::new(),
            string_arguments: true,
        };
        let as_text = template
            .render(&messages, None, None)
            .is_ok_and(|t| t.contains(probe));
        template.string_arguments = false;
        as_text
    }
}

/// `tojson` as Hugging Face's templates get it: keys in their order, non-ASCII kept, Python's
/// separators (`, ` and `: `), `indent` for pretty printing.
fn tojson(value: Value, kwargs: Kwargs) -> Result<Value, Error> {
    let indent: Option<usize> = kwargs.get("indent")?;
    kwargs.assert_all_used()?;
    let json = serde_json::to_value(&value)
        .map_err(|e| Error::new(ErrorKind::InvalidOperation, e.to_string()))?;
    let text = match indent {
        Some(n) => {
            let pad = vec![b' '; n];
            let mut out = Vec::new();
            let formatter = serde_json::ser::PrettyFormatter::with_indent(&pad);
            let mut ser = serde_json::Serializer::with_formatter(&mut out, formatter);
            serde::Serialize::serialize(&json, &mut ser)
                .map_err(|e| Error::new(ErrorKind::InvalidOperation, e.to_string()))?;
            String::from_utf8_lossy(&out).into_owned()
        }
        None => constrain::Separators::python().write(&json),
    };
    Ok(Value::from_safe_string(text))
}

/// `raise_exception(message)`: the template refuses the conversation.
fn raise_exception(message: String) -> Result<Value, Error> {
    Err(Error::new(ErrorKind::InvalidOperation, message))
}

/// `strftime_now(format)`: today's date (UTC) in `%d %b %Y`-style formats (`%d %m %y %Y %b
/// %B %H %M %S %%`).
fn strftime_now(format: String) -> String {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let (year, month, day) = civil_date(now / 86_400);
    let seconds = now % 86_400;
    const MONTHS: [&str; 12] = [
        "January",
        "February",
        "March",
        "April",
        "May",
        "June",
        "July",
        "August",
        "September",
        "October",
        "November",
        "December",
    ];
    let name = MONTHS[(month - 1) as usize];
    let mut out = String::new();
    let mut chars = format.chars();
    while let Some(c) = chars.next() {
        if c != '%' {
            out.push(c);
            continue;
        }
        match chars.next() {
            Some('d') => out.push_str(&format!("{day:02}")),
            Some('m') => out.push_str(&format!("{month:02}")),
            Some('y') => out.push_str(&format!("{:02}", year % 100)),
            Some('Y') => out.push_str(&year.to_string()),
            Some('b') => out.push_str(&name[..3]),
            Some('B') => out.push_str(name),
            Some('H') => out.push_str(&format!("{:02}", seconds / 3600)),
            Some('M') => out.push_str(&format!("{:02}", seconds / 60 % 60)),
            Some('S') => out.push_str(&format!("{:02}", seconds % 60)),
            Some('%') => out.push('%'),
            Some(other) => {
                out.push('%');
                out.push(other);
            }
            None => out.push('%'),
        }
    }
    out
}

/// Year, month (1-12) and day of the `days`-th day since 1970-01-01 (the proleptic Gregorian
/// calendar; Howard Hinnant's `civil_from_days`).
fn civil_date(days: u64) -> (i64, u32, u32) {
    let z = days as i64 + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let month = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    let year = yoe + era * 400 + i64::from(month <= 2);
    (year, month, day)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dates_and_probes() {
        assert_eq!(civil_date(0), (1970, 1, 1));
        assert_eq!(civil_date(20_786), (2026, 11, 29));
        let t = JinjaTemplate::new(
            "{% for m in messages %}{{ m.role }}:{{ m.content }}{% for c in m.tool_calls or [] %}\
             {{ c.function.arguments }}{% endfor %}|{% endfor %}"
                .into(),
            String::new(),
            String::new(),
        )
        .unwrap();
        assert!(t.string_arguments);
        let objects = JinjaTemplate::new(
            "{% for m in messages %}{% for c in m.tool_calls or [] %}{{ c.function.arguments | tojson }}\
             {% endfor %}{% endfor %}"
                .into(),
            String::new(),
            String::new(),
        )
        .unwrap();
        assert!(!objects.string_arguments);
        let out = objects
            .render(
                &[
                    json!({"role": "assistant", "content": null, "tool_calls": [{"function":
                    {"name": "f", "arguments": "{\"b\": 1, \"a\": \"é\"}"}}]}),
                ],
                None,
                None,
            )
            .unwrap();
        assert_eq!(out, "{\"b\": 1, \"a\": \"é\"}");
        let refusing = JinjaTemplate::new(
            "{{ raise_exception('no system turns') }}".into(),
            String::new(),
            String::new(),
        )
        .unwrap();
        assert!(refusing
            .render(&[], None, None)
            .unwrap_err()
            .contains("no system turns"));
    }
}
