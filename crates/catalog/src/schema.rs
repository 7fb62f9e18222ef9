//! JSON Schema → a small, language-neutral type representation.
//!
//! Upstream schemas are untrusted and often odd: the walk ([`ToolTypes::from_schemas`]) never
//! panics, caps depth, width and total work, and turns anything it does not understand into
//! [`TypeExpr::Unknown`]. Every `$ref` target becomes a named [`Definition`], so recursive
//! schemas end in a name instead of expanding forever. Renderers (TypeScript, Python) work only
//! on this representation.

use serde_json::{Number, Value};

/// A type, as the schema walk understands it.
#[derive(Debug, Clone, PartialEq)]
pub enum TypeExpr {
    /// Anything (an empty schema, `true`, or something not understood).
    Unknown,
    /// Nothing (the `false` schema, an empty `anyOf`).
    Never,
    /// `null`.
    Null,
    /// A boolean.
    Boolean,
    /// A number.
    Number,
    /// A whole number (TypeScript has only `number`; Python has `int`).
    Integer,
    /// A string.
    String,
    /// Exactly this JSON scalar (`const`, an enum member): a string, number, boolean or null.
    Literal(Value),
    /// An array whose items all have this type.
    Array(Box<TypeExpr>),
    /// A fixed sequence of item types, optionally followed by any number of `rest` items.
    Tuple {
        /// The leading items, in order.
        items: Vec<TypeExpr>,
        /// The type of items after them, when more are allowed and typed.
        rest: Option<Box<TypeExpr>>,
    },
    /// An object with known properties and/or an index signature.
    Object(ObjectType),
    /// One of several types.
    Union(Vec<TypeExpr>),
    /// All of several types at once.
    Intersection(Vec<TypeExpr>),
    /// A named [`Definition`] of the same tool.
    Reference(String),
}

/// An object type.
#[derive(Debug, Clone, PartialEq)]
pub struct ObjectType {
    /// Declared properties, in schema order.
    pub properties: Vec<Property>,
    /// What other keys may hold.
    pub extra: ExtraProperties,
    /// Whether the schema declared a `properties` keyword (an empty object reads as `{}`).
    pub declares_properties: bool,
}

/// What keys other than the declared properties may hold (`additionalProperties`,
/// `patternProperties`).
#[derive(Debug, Clone, PartialEq)]
pub enum ExtraProperties {
    /// Nothing said: JSON Schema allows anything, and declarations leave it implicit.
    Unspecified,
    /// No other keys (`additionalProperties: false`).
    Closed,
    /// Other keys hold values of this type (`unknown` for `additionalProperties: true`).
    Typed(Box<TypeExpr>),
}

/// One property of an object type.
#[derive(Debug, Clone, PartialEq)]
pub struct Property {
    /// The key, as the schema spells it.
    pub name: String,
    /// Its type.
    pub value: TypeExpr,
    /// Whether the key must be present.
    pub required: bool,
    /// Its documentation.
    pub doc: Documentation,
}

/// What a schema says about a value beyond its type, for doc comments.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Documentation {
    /// `description`, or a `title` that says more than the name.
    pub description: Option<String>,
    /// `default`.
    pub default: Option<Value>,
    /// `format` (`uri`, `date-time`, …).
    pub format: Option<String>,
    /// `pattern`.
    pub pattern: Option<String>,
    /// `minimum`, or `exclusiveMinimum` (then `exclusive_minimum` is set).
    pub minimum: Option<Number>,
    /// `maximum`, or `exclusiveMaximum` (then `exclusive_maximum` is set).
    pub maximum: Option<Number>,
    /// Whether `minimum` is exclusive.
    pub exclusive_minimum: bool,
    /// Whether `maximum` is exclusive.
    pub exclusive_maximum: bool,
    /// `minLength`.
    pub min_length: Option<u64>,
    /// `maxLength`.
    pub max_length: Option<u64>,
    /// `minItems`.
    pub min_items: Option<u64>,
    /// `maxItems`.
    pub max_items: Option<u64>,
    /// `deprecated: true`.
    pub deprecated: bool,
}

impl Documentation {
    /// Whether there is nothing to say.
    pub fn is_empty(&self) -> bool {
        *self == Self::default()
    }
}

/// A named type: the target of one or more `$ref`s.
#[derive(Debug, Clone, PartialEq)]
pub struct Definition {
    /// Identifier, unique within the tool.
    pub name: String,
    /// The type it names.
    pub value: TypeExpr,
    /// Its documentation (the target schema's description).
    pub doc: Documentation,
}

/// The types of one tool: its arguments, its result, and the definitions both refer to.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolTypes {
    /// The arguments object.
    pub input: TypeExpr,
    /// The `structuredContent` type, when the tool declares an `outputSchema`.
    pub output: Option<TypeExpr>,
    /// Named types, in the order they were first referenced.
    pub definitions: Vec<Definition>,
    /// `Some(calls)` when `output` is not declared by the server but was observed in that many
    /// earlier calls ([`crate::observed`]): declarations say so next to it.
    pub observed_calls: Option<u64>,
}

impl ToolTypes {
    /// The definition called `name`.
    pub fn definition(&self, name: &str) -> Option<&Definition> {
        self.definitions
            .iter()
            .find(|definition| definition.name == name)
    }

    /// Whether the arguments may be left out: no property is required.
    pub fn arguments_optional(&self) -> bool {
        self.all_optional(&self.input, 0)
    }

    fn all_optional(&self, value: &TypeExpr, depth: usize) -> bool {
        match value {
            TypeExpr::Object(object) => object.properties.iter().all(|p| !p.required),
            TypeExpr::Unknown => true,
            TypeExpr::Reference(name) if depth < 8 => self
                .definition(name)
                .is_some_and(|definition| self.all_optional(&definition.value, depth + 1)),
            TypeExpr::Intersection(parts) => {
                parts.iter().all(|part| self.all_optional(part, depth + 1))
            }
            _ => false,
        }
    }
}
