//! What the compiled grammar accepts beyond the schema itself: layout, strictness, the
//! documents a `$ref` may name. Budgets are not options: they are `constrain_engine::Limits`,
//! given to [`compile_with_limits`](crate::compile_with_limits).

/// How a compiled schema treats whitespace between JSON tokens.
///
/// The JSON grammar allows any amount of whitespace between tokens; a model that keeps emitting
/// newlines never finishes, so the default bounds every run of whitespace.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Whitespace {
    /// Any JSON whitespace (space, tab, line feed, carriage return) between tokens, at most
    /// `max` characters in each gap. Accepts both compact JSON and Python's `json.dumps` style
    /// (`", "` and `": "`).
    Bounded {
        /// Most whitespace characters in one gap between two tokens.
        max: u32,
    },
    /// Any amount of whitespace between tokens: exactly the JSON grammar.
    Unbounded,
    /// No whitespace at all (separators as given by [`Options::separators`], or `,` and `:`).
    Compact,
    /// Pretty printed like `json.dumps(value, indent=n)`: every member and element on its own
    /// line, indented by `n` spaces per nesting level; empty objects and arrays are `{}` / `[]`.
    Indented(u32),
}

impl Whitespace {
    /// The default bound of [`Whitespace::Bounded`].
    pub const DEFAULT_MAX: u32 = 16;
}

impl Default for Whitespace {
    fn default() -> Whitespace {
        Whitespace::Bounded {
            max: Whitespace::DEFAULT_MAX,
        }
    }
}

/// Exact separator text, for layouts that fix it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Separators {
    /// Between two members of an object or two elements of an array (e.g. `", "`).
    pub item: String,
    /// Between a key and its value (e.g. `": "`).
    pub key: String,
}

impl Separators {
    /// `,` and `:`.
    pub fn compact() -> Separators {
        Separators {
            item: ",".into(),
            key: ":".into(),
        }
    }

    /// `", "` and `": "`, the default of Python's `json.dumps`.
    pub fn python() -> Separators {
        Separators {
            item: ", ".into(),
            key: ": ".into(),
        }
    }

    /// `value` on one line with these separators, members in their stored order: the layout a
    /// grammar compiled with [`Whitespace::Compact`] and these separators generates (handy for
    /// few-shot examples in a prompt).
    ///
    /// ```
    /// use constrain_jsonschema::Separators;
    /// let value = serde_json::json!({"a": [1, "x"], "b": null});
    /// assert_eq!(Separators::python().write(&value), r#"{"a": [1, "x"], "b": null}"#);
    /// ```
    pub fn write(&self, value: &serde_json::Value) -> String {
        let mut out = String::new();
        self.write_into(value, &mut out);
        out
    }

    fn write_into(&self, value: &serde_json::Value, out: &mut String) {
        use serde_json::Value;
        match value {
            Value::Array(items) => {
                out.push('[');
                for (i, item) in items.iter().enumerate() {
                    if i > 0 {
                        out.push_str(&self.item);
                    }
                    self.write_into(item, out);
                }
                out.push(']');
            }
            Value::Object(members) => {
                out.push('{');
                for (i, (key, item)) in members.iter().enumerate() {
                    if i > 0 {
                        out.push_str(&self.item);
                    }
                    out.push_str(&Value::String(key.clone()).to_string());
                    out.push_str(&self.key);
                    self.write_into(item, out);
                }
                out.push('}');
            }
            scalar => out.push_str(&scalar.to_string()),
        }
    }
}

/// What an object may contain besides the properties its schema declares, when the schema has
/// no `additionalProperties`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum AdditionalProperties {
    /// As the specification says: any further key, with any JSON value.
    #[default]
    Spec,
    /// Nothing undeclared: a missing `additionalProperties` counts as `false` (what tool-calling
    /// APIs expect). An explicit `additionalProperties` (or `patternProperties`) is honoured.
    Strict,
}

/// In which order an object's declared properties may appear.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum PropertyOrder {
    /// In the order the schema declares them (`properties`), additional properties after.
    /// This keeps grammars small and lets the engine force keys.
    #[default]
    Schema,
    /// In any order. Each declared property still appears at most once and required ones must
    /// appear: the grammar tracks the subset of properties seen, built lazily as outputs reach
    /// it. Where `minProperties`/`maxProperties` must be counted as well (or some member must
    /// satisfy a `not`), the subsets are spelled out in the grammar, and objects with more
    /// declared properties than [`Options::max_any_order_properties`] are refused.
    Any,
}

/// Which JSON spellings of a string the grammar accepts.
///
/// JSON lets every character of a string be written as a `\uXXXX` escape (and a few as short
/// escapes such as `\/`). Accepting all of them is what reading JSON text needs; a generator
/// rarely wants them: a small model that starts a key with `\u006C` keeps going that way, and a
/// declared key with many spellings cannot be forced.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum Escapes {
    /// Every spelling JSON allows.
    #[default]
    Any,
    /// Only the spelling of Python's `json.dumps(..., ensure_ascii=False)`: characters raw,
    /// escaped only where JSON requires it (`\"`, `\\`, `\n`, `\r`, `\t`, `\b`, `\f`, and
    /// `\u00xx` for the other control characters). Every string value keeps exactly one
    /// spelling, so none becomes unreachable.
    Canonical,
}

/// Which JSON spellings of a number the grammar accepts.
///
/// JSON Schema compares numbers by value: `1.0`, `1e0` and `1` are all the integer 1, and `-0`
/// is 0. Programs that read the output store numbers in typed fields, and many refuse some of
/// those spellings (Pydantic's strict mode, serde's `i64` and Go's `int` reject `1.0` for an
/// integer; a 20-digit integer overflows them). A grammar for generation should produce only
/// spellings every such reader takes; a grammar that checks existing documents should take
/// every spelling the specification allows.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum Numbers {
    /// Spellings typed readers accept, one value rarely having more than one:
    ///
    /// * an integer (`type: integer`, an integral `enum`/`const` value, a number with an
    ///   integral `multipleOf`) is an integer literal: no fraction, no exponent;
    /// * an integer without bounds stays within the 64-bit signed range
    ///   (`-9223372036854775808..=9223372036854775807`), intersected with its bounds; bounds
    ///   that lie wholly outside that range are kept as they are, so no schema becomes
    ///   unsatisfiable;
    /// * zero is never negative (`-0`, `-0.0`);
    /// * exponent notation only where plain digits would be long, as JavaScript's
    ///   `JSON.stringify` writes numbers: a mantissa of one non-zero digit (and a fraction not
    ///   ending in 0), a lower-case `e`, and an exponent of at least 21 (`1e21`, `1.5e+300`)
    ///   or at most -7 (`2e-7`), without leading zeros. Where exponent notation could not
    ///   be bounded exactly (any bound other than 0, `multipleOf`), none is accepted, as
    ///   with [`Numbers::Any`]: plain digits spell every value.
    ///
    /// Leading zeros are never accepted (JSON forbids them). A number that is not an integer
    /// keeps any plain spelling (`0.5`, `0.50`, `1.0` for `type: number`).
    #[default]
    Canonical,
    /// Every spelling JSON allows for a valid value (`1.0` and `-0` for integers, `1E+2`...),
    /// as validating existing documents needs.
    Any,
}

/// Compilation options. [`Options::default`] follows the specification, with bounded whitespace
/// and the number spellings typed readers accept ([`Numbers::Canonical`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Options {
    /// Whitespace between tokens.
    pub whitespace: Whitespace,
    /// Fixed separators; `None` uses the whitespace mode's own (`,`/`:` with optional whitespace
    /// around them, or `,` and `": "` when [`Whitespace::Indented`]).
    pub separators: Option<Separators>,
    /// The meaning of a missing `additionalProperties`.
    pub additional_properties: AdditionalProperties,
    /// Turn every keyword that cannot be enforced into a [`Warning`](crate::Warning) and drop it,
    /// instead of failing. The grammar may then accept documents the schema rejects; every such
    /// place is listed in [`Compiled::warnings`](crate::Compiled::warnings).
    pub lenient: bool,
    /// Order of declared properties.
    pub property_order: PropertyOrder,
    /// Spellings of strings.
    pub escapes: Escapes,
    /// Spellings of numbers.
    pub numbers: Numbers,
    /// Deepest nesting of arrays/objects inside a value the schema does not describe (`{}`,
    /// `true`, an absent `items`...); `u32::MAX` (the default) for no limit.
    pub max_untyped_depth: u32,
    /// Most declared properties of one object under [`PropertyOrder::Any`] when its counts
    /// must be tracked too (see there).
    pub max_any_order_properties: u32,
    /// Enforce `format` (as generators need). The 2020-12 specification makes `format` an
    /// annotation by default; `false` treats it as one.
    pub assert_formats: bool,
    /// Schema documents a `$ref` may name by URI besides the schema itself (the schemas of a
    /// tool's shared types, a meta-schema...), each under the URI it is retrieved by. Nothing
    /// is ever fetched: a reference to any other document is an
    /// [`UnresolvedRef`](crate::SchemaError::UnresolvedRef) error. A resource the schema
    /// itself defines (with `$id`) takes precedence.
    pub resources: std::collections::BTreeMap<String, serde_json::Value>,
}

impl Default for Options {
    fn default() -> Options {
        Options {
            whitespace: Whitespace::default(),
            separators: None,
            additional_properties: AdditionalProperties::Spec,
            lenient: false,
            property_order: PropertyOrder::Schema,
            escapes: Escapes::Any,
            numbers: Numbers::Canonical,
            max_untyped_depth: u32::MAX,
            max_any_order_properties: 6,
            assert_formats: true,
            resources: Default::default(),
        }
    }
}
