//! The schema compiler's options as command-line values, shared by every command that compiles
//! schemas (`test-cases`, `bench maskbench`, `bench soundness`, and the binary's own).

/// `--property-order`.
#[derive(clap::ValueEnum, Clone, Copy, Debug)]
pub enum PropertyOrderArg {
    /// The order of the schema's `properties` (the compiler's default).
    Schema,
    /// Any order.
    Any,
}

impl From<PropertyOrderArg> for constrain_jsonschema::PropertyOrder {
    fn from(arg: PropertyOrderArg) -> Self {
        match arg {
            PropertyOrderArg::Schema => constrain_jsonschema::PropertyOrder::Schema,
            PropertyOrderArg::Any => constrain_jsonschema::PropertyOrder::Any,
        }
    }
}

/// `--escapes`.
#[derive(clap::ValueEnum, Clone, Copy, Debug)]
pub enum EscapesArg {
    /// Strings spelled only as `json.dumps(..., ensure_ascii=False)` writes them.
    Canonical,
    /// Every spelling JSON allows (`\u0061` for `a`, `\/` for `/`, ...).
    Any,
}

impl From<EscapesArg> for constrain_jsonschema::Escapes {
    fn from(arg: EscapesArg) -> Self {
        match arg {
            EscapesArg::Canonical => constrain_jsonschema::Escapes::Canonical,
            EscapesArg::Any => constrain_jsonschema::Escapes::Any,
        }
    }
}

/// `--numbers`.
#[derive(clap::ValueEnum, Clone, Copy, Debug)]
pub enum NumbersArg {
    /// Spellings typed readers accept: integers as integer literals within 64 bits, no `-0`,
    /// exponent notation only for very large or small magnitudes.
    Canonical,
    /// Every spelling JSON Schema allows (`1.0` and `-0` for integers, `1E+2`, ...).
    Any,
}

impl From<NumbersArg> for constrain_jsonschema::Numbers {
    fn from(arg: NumbersArg) -> Self {
        match arg {
            NumbersArg::Canonical => constrain_jsonschema::Numbers::Canonical,
            NumbersArg::Any => constrain_jsonschema::Numbers::Any,
        }
    }
}
