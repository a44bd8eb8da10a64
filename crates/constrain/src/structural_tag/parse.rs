//! A structural tag's JSON read into a typed tree, each node with its JSON pointer, and an
//! error naming the pointer and what was expected there when the JSON is not one.

use serde_json::{Map, Value};
use thiserror::Error;

/// A structural tag that is not one: the JSON pointer of the offending value (`""` for the
/// whole document) and what was expected there.
#[derive(Clone, Debug, Error, PartialEq, Eq)]
#[error("structural tag at \"{pointer}\": {message}")]
pub struct StructuralTagError {
    pointer: String,
    message: String,
}

impl StructuralTagError {
    pub(crate) fn new(pointer: &str, message: impl Into<String>) -> StructuralTagError {
        StructuralTagError {
            pointer: pointer.to_string(),
            message: message.into(),
        }
    }

    /// The JSON pointer of the offending value (`""`: the whole document).
    pub fn pointer(&self) -> &str {
        &self.pointer
    }

    /// What is wrong there, or what was expected.
    pub fn message(&self) -> &str {
        &self.message
    }
}

/// One format of the tree and where it is.
#[derive(Clone, Debug)]
pub(crate) struct Format {
    /// The JSON pointer of this format's object.
    pub pointer: String,
    /// What it is.
    pub kind: Kind,
}

/// The kinds of format.
#[derive(Clone, Debug)]
pub(crate) enum Kind {
    /// Exactly this text.
    ConstString(String),
    /// A JSON document valid against this schema.
    JsonSchema(Value),
    /// Text of this EBNF grammar (start rule `root`).
    Grammar(String),
    /// Text matching this regular expression.
    Regex(String),
    /// Any text without these strings.
    AnyText { excludes: Vec<String> },
    /// Each element in turn.
    Sequence(Vec<Format>),
    /// Any one element.
    Or(Vec<Format>),
    /// Begin text, content, end text.
    Tag(Tag),
    /// Free text in which each trigger opens one of the tags.
    TriggeredTags {
        triggers: Vec<String>,
        tags: Vec<Tag>,
        at_least_one: bool,
        stop_after_first: bool,
        excludes: Vec<String>,
    },
    /// Tags with a separator between two, and nothing else.
    TagsWithSeparator {
        tags: Vec<Tag>,
        separator: String,
        at_least_one: bool,
        stop_after_first: bool,
    },
}

/// A tag: `begin`, the content, then one of the `end` texts.
#[derive(Clone, Debug)]
pub(crate) struct Tag {
    /// The JSON pointer of the tag's object.
    pub pointer: String,
    pub begin: String,
    pub content: Box<Format>,
    /// One or more end texts (XGrammar takes a string or a list).
    pub end: Vec<String>,
}

/// Reads a structural tag: `{"type": "structural_tag", "format": {...}}` (the type may be
/// left out), or the older `{"structures": [{"begin", "schema", "end"}], "triggers": [...]}`,
/// which is triggered tags whose contents are schemas. Formats nest at most `max_depth` deep.
pub(crate) fn parse(value: &Value, max_depth: u32) -> Result<Format, StructuralTagError> {
    let reader = Reader { max_depth };
    let top = reader.object(value, "")?;
    if let Some(kind) = top.get("type") {
        if kind.as_str() != Some("structural_tag") {
            return Err(StructuralTagError::new(
                "/type",
                "expected the string \"structural_tag\"",
            ));
        }
    }
    if top.contains_key("structures") {
        return reader.legacy(top);
    }
    match top.get("format") {
        Some(format) => reader.format(format, "/format", 1),
        None => Err(StructuralTagError::new(
            "",
            "expected a \"format\" (or the older \"structures\" and \"triggers\")",
        )),
    }
}

/// `pointer` extended by one key or index, escaped as RFC 6901 says.
fn child(pointer: &str, key: &str) -> String {
    format!("{pointer}/{}", key.replace('~', "~0").replace('/', "~1"))
}

/// The walk over the JSON, with the depth bound.
struct Reader {
    max_depth: u32,
}

impl Reader {
    fn object<'v>(
        &self,
        value: &'v Value,
        pointer: &str,
    ) -> Result<&'v Map<String, Value>, StructuralTagError> {
        value
            .as_object()
            .ok_or_else(|| StructuralTagError::new(pointer, "expected an object"))
    }

    fn legacy(&self, top: &Map<String, Value>) -> Result<Format, StructuralTagError> {
        let structures = array(top, "", "structures", false)?;
        let mut tags = Vec::with_capacity(structures.len());
        for (i, item) in structures.iter().enumerate() {
            let pointer = child("/structures", &i.to_string());
            let obj = self.object(item, &pointer)?;
            let schema_pointer = child(&pointer, "schema");
            let schema = match obj.get("schema") {
                Some(Value::String(text)) => serde_json::from_str(text).map_err(|e| {
                    StructuralTagError::new(&schema_pointer, format!("expected JSON text: {e}"))
                })?,
                Some(v @ (Value::Object(_) | Value::Bool(_))) => v.clone(),
                _ => {
                    return Err(StructuralTagError::new(
                        &schema_pointer,
                        "expected a JSON Schema (an object, a boolean, or its JSON text)",
                    ))
                }
            };
            tags.push(Tag {
                begin: string(obj, &pointer, "begin", true)?,
                content: Box::new(Format {
                    pointer: schema_pointer,
                    kind: Kind::JsonSchema(schema),
                }),
                end: vec![string(obj, &pointer, "end", true)?],
                pointer,
            });
        }
        Ok(Format {
            pointer: String::new(),
            kind: Kind::TriggeredTags {
                triggers: strings(top, "", "triggers", false)?,
                tags,
                at_least_one: false,
                stop_after_first: false,
                excludes: Vec::new(),
            },
        })
    }

    fn format(
        &self,
        value: &Value,
        pointer: &str,
        depth: u32,
    ) -> Result<Format, StructuralTagError> {
        if depth > self.max_depth {
            return Err(StructuralTagError::new(
                pointer,
                format!(
                    "formats nest deeper than the limit of {} (max_schema_depth)",
                    self.max_depth
                ),
            ));
        }
        let obj = self.object(value, pointer)?;
        let kind = match obj.get("type") {
            Some(Value::String(kind)) => kind.as_str(),
            Some(_) => {
                return Err(StructuralTagError::new(
                    &child(pointer, "type"),
                    "expected a string",
                ))
            }
            None => implied_type(obj).ok_or_else(|| {
                StructuralTagError::new(pointer, "expected a format with a \"type\"")
            })?,
        };
        let kind = match kind {
            "const_string" => Kind::ConstString(string(obj, pointer, "value", false)?),
            "json_schema" => {
                for key in ["style", "parsing_type"] {
                    if let Some(style) = obj.get(key) {
                        if style.as_str() != Some("json") {
                            return Err(StructuralTagError::new(
                                &child(pointer, key),
                                "only \"json\" is supported",
                            ));
                        }
                    }
                }
                match obj.get("json_schema") {
                    Some(schema @ (Value::Object(_) | Value::Bool(_))) => {
                        Kind::JsonSchema(schema.clone())
                    }
                    _ => {
                        return Err(StructuralTagError::new(
                            &child(pointer, "json_schema"),
                            "expected a JSON Schema (an object or a boolean)",
                        ))
                    }
                }
            }
            "grammar" => Kind::Grammar(string(obj, pointer, "grammar", false)?),
            "regex" => Kind::Regex(string(obj, pointer, "pattern", false)?),
            "any_text" => Kind::AnyText {
                excludes: optional_strings(obj, pointer, "excludes")?,
            },
            "sequence" | "or" => {
                let elements_pointer = child(pointer, "elements");
                let elements = array(obj, pointer, "elements", false)?
                    .iter()
                    .enumerate()
                    .map(|(i, e)| {
                        self.format(e, &child(&elements_pointer, &i.to_string()), depth + 1)
                    })
                    .collect::<Result<Vec<_>, _>>()?;
                if kind == "sequence" {
                    Kind::Sequence(elements)
                } else {
                    Kind::Or(elements)
                }
            }
            "tag" => Kind::Tag(self.tag_fields(obj, pointer, depth)?),
            "triggered_tags" => Kind::TriggeredTags {
                triggers: strings(obj, pointer, "triggers", false)?,
                tags: self.tags(obj, pointer, depth)?,
                at_least_one: flag(obj, pointer, "at_least_one")?,
                stop_after_first: flag(obj, pointer, "stop_after_first")?,
                excludes: optional_strings(obj, pointer, "excludes")?,
            },
            "tags_with_separator" => Kind::TagsWithSeparator {
                tags: self.tags(obj, pointer, depth)?,
                separator: string(obj, pointer, "separator", true)?,
                at_least_one: flag(obj, pointer, "at_least_one")?,
                stop_after_first: flag(obj, pointer, "stop_after_first")?,
            },
            "qwen_xml_parameter" => {
                return Err(StructuralTagError::new(
                    &child(pointer, "type"),
                    "\"qwen_xml_parameter\" is not supported",
                ))
            }
            other => {
                return Err(StructuralTagError::new(
                    &child(pointer, "type"),
                    format!(
                        "unknown format type {other:?}; expected one of const_string, \
                         json_schema, grammar, regex, any_text, sequence, or, tag, \
                         triggered_tags, tags_with_separator"
                    ),
                ))
            }
        };
        Ok(Format {
            pointer: pointer.to_string(),
            kind,
        })
    }

    /// The `tags` of triggered tags or tags with a separator: a non-empty list of tags.
    fn tags(
        &self,
        obj: &Map<String, Value>,
        pointer: &str,
        depth: u32,
    ) -> Result<Vec<Tag>, StructuralTagError> {
        let tags_pointer = child(pointer, "tags");
        array(obj, pointer, "tags", false)?
            .iter()
            .enumerate()
            .map(|(i, tag)| {
                let tag_pointer = child(&tags_pointer, &i.to_string());
                let tag_obj = self.object(tag, &tag_pointer)?;
                match tag_obj.get("type") {
                    None => {}
                    Some(kind) if kind.as_str() == Some("tag") => {}
                    Some(_) => {
                        return Err(StructuralTagError::new(
                            &child(&tag_pointer, "type"),
                            "expected the string \"tag\"",
                        ))
                    }
                }
                self.tag_fields(tag_obj, &tag_pointer, depth + 1)
            })
            .collect()
    }

    fn tag_fields(
        &self,
        obj: &Map<String, Value>,
        pointer: &str,
        depth: u32,
    ) -> Result<Tag, StructuralTagError> {
        let content = obj
            .get("content")
            .ok_or_else(|| StructuralTagError::new(pointer, "expected a \"content\" format"))?;
        let end_pointer = child(pointer, "end");
        let end = match obj.get("end") {
            Some(Value::String(end)) => vec![end.clone()],
            Some(Value::Array(_)) => strings(obj, pointer, "end", true)?,
            _ => {
                return Err(StructuralTagError::new(
                    &end_pointer,
                    "expected a string or a non-empty list of strings",
                ))
            }
        };
        Ok(Tag {
            pointer: pointer.to_string(),
            begin: string(obj, pointer, "begin", true)?,
            content: Box::new(self.format(content, &child(pointer, "content"), depth + 1)?),
            end,
        })
    }
}

/// The type of a format written without one, from its fields (XGrammar tries each kind in
/// turn, a tag first).
fn implied_type(obj: &Map<String, Value>) -> Option<&'static str> {
    [
        ("begin", "tag"),
        ("value", "const_string"),
        ("json_schema", "json_schema"),
        ("triggers", "triggered_tags"),
        ("separator", "tags_with_separator"),
        ("elements", "sequence"),
        ("pattern", "regex"),
        ("grammar", "grammar"),
        ("excludes", "any_text"),
    ]
    .into_iter()
    .find(|(key, _)| obj.contains_key(*key))
    .map(|(_, kind)| kind)
}

/// The string at `key` (empty only when `empty_ok`).
fn string(
    obj: &Map<String, Value>,
    pointer: &str,
    key: &str,
    empty_ok: bool,
) -> Result<String, StructuralTagError> {
    match obj.get(key) {
        Some(Value::String(s)) if empty_ok || !s.is_empty() => Ok(s.clone()),
        _ => Err(StructuralTagError::new(
            &child(pointer, key),
            if empty_ok {
                "expected a string"
            } else {
                "expected a non-empty string"
            },
        )),
    }
}

/// The non-empty array at `key` (`empty_ok`: may be empty).
fn array<'v>(
    obj: &'v Map<String, Value>,
    pointer: &str,
    key: &str,
    empty_ok: bool,
) -> Result<&'v Vec<Value>, StructuralTagError> {
    match obj.get(key) {
        Some(Value::Array(items)) if empty_ok || !items.is_empty() => Ok(items),
        _ => Err(StructuralTagError::new(
            &child(pointer, key),
            "expected a non-empty list",
        )),
    }
}

/// The non-empty list of strings at `key`; each string non-empty unless `empty_ok`.
fn strings(
    obj: &Map<String, Value>,
    pointer: &str,
    key: &str,
    empty_ok: bool,
) -> Result<Vec<String>, StructuralTagError> {
    let list_pointer = child(pointer, key);
    array(obj, pointer, key, false)?
        .iter()
        .enumerate()
        .map(|(i, item)| match item {
            Value::String(s) if empty_ok || !s.is_empty() => Ok(s.clone()),
            _ => Err(StructuralTagError::new(
                &child(&list_pointer, &i.to_string()),
                if empty_ok {
                    "expected a string"
                } else {
                    "expected a non-empty string"
                },
            )),
        })
        .collect()
}

/// The list of non-empty strings at `key`, empty when it is absent.
fn optional_strings(
    obj: &Map<String, Value>,
    pointer: &str,
    key: &str,
) -> Result<Vec<String>, StructuralTagError> {
    match obj.get(key) {
        None => Ok(Vec::new()),
        Some(Value::Array(items)) if items.is_empty() => Ok(Vec::new()),
        Some(_) => strings(obj, pointer, key, false),
    }
}

/// The boolean at `key`, false when it is absent.
fn flag(obj: &Map<String, Value>, pointer: &str, key: &str) -> Result<bool, StructuralTagError> {
    match obj.get(key) {
        None => Ok(false),
        Some(Value::Bool(b)) => Ok(*b),
        Some(_) => Err(StructuralTagError::new(
            &child(pointer, key),
            "expected a boolean",
        )),
    }
}
