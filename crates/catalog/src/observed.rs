//! What a tool without an output schema was seen to return: a [`Shape`] inferred from the values
//! its calls resolved to in guest code, joined across calls, and written as its declaration's
//! result type with a note that it was observed, not declared by the server.
//!
//! A shape holds types and key names, never values: no string, number or element of a value is
//! kept. Key names can carry data too (a map keyed by user ids or email addresses), so an object
//! whose keys do not look like field names, or that has more than [`MAX_FIELDS`] of them, is kept
//! as a record (`Record<string, T>`) without its keys. Everything is bounded: how deep a shape
//! goes, how many items of an array and values of a value are looked at, and how many nodes a
//! shape has. Joining is a least upper bound (associative, commutative, idempotent), so shapes
//! recorded by several gateways merge in any order.

use serde_json::{Map, Value};

use crate::schema::{ExtraProperties, ObjectType, Property, TypeExpr};

/// Arrays and objects nested deeper than this are `unknown`.
const MAX_DEPTH: usize = 6;
/// An object with more keys than this is a record: its keys are data, not fields.
pub const MAX_FIELDS: usize = 32;
/// Items of one array (and values of one record) looked at; the rest are taken to be alike.
const MAX_SAMPLED_ITEMS: usize = 32;
/// Nodes of a value looked at in all; past it the rest is `unknown`.
const MAX_VISITED: usize = 2_000;
/// Nodes one shape may have; a larger one loses its deepest levels until it fits.
const MAX_NODES: usize = 256;
/// The longest key kept as a field name.
const MAX_FIELD_NAME: usize = 64;

/// The type of the values a tool returned, as far as they were seen.
#[derive(Debug, Clone, PartialEq)]
pub enum Shape {
    /// Anything: deeper than the bounds, or values of too many kinds to say.
    Unknown,
    /// `null`.
    Null,
    /// A boolean.
    Boolean,
    /// A whole number in every call seen.
    Integer,
    /// A number.
    Number,
    /// A string.
    String,
    /// An array; `None` while only empty arrays were seen.
    Array(Option<Box<Shape>>),
    /// An object with these keys, in the order first seen.
    Object(Vec<Field>),
    /// An object used as a map: its keys are not kept, only what they hold.
    Record(Box<Shape>),
    /// One of several kinds, at most one member per kind (objects and records are one kind).
    Union(Vec<Shape>),
}

/// One key of an observed object.
#[derive(Debug, Clone, PartialEq)]
pub struct Field {
    /// The key.
    pub name: String,
    /// What it held.
    pub shape: Shape,
    /// Whether every object seen had it.
    pub required: bool,
}

/// A tool's observed result type and how many calls it was seen in.
#[derive(Debug, Clone, PartialEq)]
pub struct ObservedReturn {
    /// The join of the shapes of every value seen.
    pub shape: Shape,
    /// How many successful calls it was learned from.
    pub calls: u64,
}

/// The results seen of earlier calls, by tool: what declarations write as the result type of a
/// tool without an output schema.
pub trait Observations {
    /// What `entry`'s calls were seen to return, when anything was (and `entry` declares no
    /// output schema).
    fn observed(&self, entry: &crate::Entry) -> Option<ObservedReturn>;
}

/// No results seen: declarations say only what servers declare.
pub struct NoObservations;

impl Observations for NoObservations {
    fn observed(&self, _entry: &crate::Entry) -> Option<ObservedReturn> {
        None
    }
}

/// What declarations say next to a result type observed in `calls` calls.
pub(crate) fn note(calls: u64) -> String {
    let calls = match calls {
        1 => "1 call".to_owned(),
        many => format!("{many} calls"),
    };
    format!("observed in {calls}, not declared by the server")
}

/// Which members of a union a shape joins with.
#[derive(PartialEq)]
enum Kind {
    Unknown,
    Null,
    Boolean,
    Number,
    String,
    Array,
    Object,
    Union,
}

impl Shape {
    /// The shape of `value`: its types and key names, within the bounds.
    pub fn of(value: &Value) -> Self {
        let mut budget = MAX_VISITED;
        let shape = shape_of(value, 0, &mut budget);
        shape.within_nodes()
    }

    /// The least shape both `self` and `other` fit.
    #[must_use]
    pub fn join(self, other: Shape) -> Shape {
        join(self, other).within_nodes()
    }

    fn kind(&self) -> Kind {
        match self {
            Shape::Unknown => Kind::Unknown,
            Shape::Null => Kind::Null,
            Shape::Boolean => Kind::Boolean,
            Shape::Integer | Shape::Number => Kind::Number,
            Shape::String => Kind::String,
            Shape::Array(_) => Kind::Array,
            Shape::Object(_) | Shape::Record(_) => Kind::Object,
            Shape::Union(_) => Kind::Union,
        }
    }

    /// How many nodes it has.
    fn nodes(&self) -> usize {
        1 + match self {
            Shape::Array(Some(item)) | Shape::Record(item) => item.nodes(),
            Shape::Object(fields) => fields.iter().map(|field| field.shape.nodes()).sum(),
            Shape::Union(members) => members.iter().map(Shape::nodes).sum(),
            _ => 0,
        }
    }

    /// Itself, or, past [`MAX_NODES`], itself cut to fewer levels until it fits.
    fn within_nodes(self) -> Shape {
        let mut depth = MAX_DEPTH;
        let mut shape = self;
        while shape.nodes() > MAX_NODES && depth > 0 {
            depth -= 1;
            shape = shape.cut_below(depth);
        }
        shape
    }

    /// Itself with every array and object `depth` levels down made `unknown`.
    fn cut_below(self, depth: usize) -> Shape {
        let nested = matches!(self, Shape::Array(_) | Shape::Object(_) | Shape::Record(_));
        if depth == 0 && nested {
            return Shape::Unknown;
        }
        let below = depth.saturating_sub(1);
        match self {
            Shape::Array(item) => Shape::Array(item.map(|item| Box::new(item.cut_below(below)))),
            Shape::Record(item) => Shape::Record(Box::new(item.cut_below(below))),
            Shape::Object(fields) => Shape::Object(
                fields
                    .into_iter()
                    .map(|field| Field {
                        shape: field.shape.cut_below(below),
                        ..field
                    })
                    .collect(),
            ),
            Shape::Union(members) => members
                .into_iter()
                .map(|member| member.cut_below(depth))
                .fold(Shape::Union(Vec::new()), join),
            other => other,
        }
    }

    /// The type declarations write for it. A whole number reads as `number` (`float` in
    /// Python): seeing only whole numbers does not say a fraction cannot come.
    pub fn type_expr(&self) -> TypeExpr {
        match self {
            Shape::Unknown => TypeExpr::Unknown,
            Shape::Null => TypeExpr::Null,
            Shape::Boolean => TypeExpr::Boolean,
            Shape::Integer | Shape::Number => TypeExpr::Number,
            Shape::String => TypeExpr::String,
            Shape::Array(item) => TypeExpr::Array(Box::new(
                item.as_ref()
                    .map_or(TypeExpr::Unknown, |item| item.type_expr()),
            )),
            Shape::Object(fields) => TypeExpr::Object(ObjectType {
                properties: fields
                    .iter()
                    .map(|field| Property {
                        name: field.name.clone(),
                        value: field.shape.type_expr(),
                        required: field.required,
                        doc: crate::schema::Documentation::default(),
                    })
                    .collect(),
                extra: ExtraProperties::Unspecified,
                declares_properties: true,
            }),
            Shape::Record(item) => TypeExpr::Object(ObjectType {
                properties: Vec::new(),
                extra: ExtraProperties::Typed(Box::new(item.type_expr())),
                declares_properties: false,
            }),
            Shape::Union(members) => {
                TypeExpr::Union(members.iter().map(Shape::type_expr).collect())
            }
        }
    }

    /// It as a JSON Schema (the form it is kept in): `type`, `items`, `properties`, `required`,
    /// `additionalProperties` and `anyOf`, nothing else.
    pub fn to_schema(&self) -> Value {
        let typed = |name: &str| Value::Object(Map::from_iter([("type".into(), name.into())]));
        match self {
            Shape::Unknown => Value::Object(Map::new()),
            Shape::Null => typed("null"),
            Shape::Boolean => typed("boolean"),
            Shape::Integer => typed("integer"),
            Shape::Number => typed("number"),
            Shape::String => typed("string"),
            Shape::Array(item) => {
                let mut schema = typed("array");
                if let (Some(item), Value::Object(map)) = (item, &mut schema) {
                    map.insert("items".into(), item.to_schema());
                }
                schema
            }
            Shape::Object(fields) => {
                let properties: Map<String, Value> = fields
                    .iter()
                    .map(|field| (field.name.clone(), field.shape.to_schema()))
                    .collect();
                let required: Vec<Value> = fields
                    .iter()
                    .filter(|field| field.required)
                    .map(|field| Value::String(field.name.clone()))
                    .collect();
                let mut schema = Map::from_iter([
                    ("type".into(), "object".into()),
                    ("properties".into(), Value::Object(properties)),
                ]);
                if !required.is_empty() {
                    schema.insert("required".into(), Value::Array(required));
                }
                Value::Object(schema)
            }
            Shape::Record(item) => Value::Object(Map::from_iter([
                ("type".into(), "object".into()),
                ("additionalProperties".into(), item.to_schema()),
            ])),
            Shape::Union(members) => Value::Object(Map::from_iter([(
                "anyOf".into(),
                Value::Array(members.iter().map(Shape::to_schema).collect()),
            )])),
        }
    }

    /// The shape a schema written by [`Shape::to_schema`] holds; `None` for anything else. It
    /// is read from a file, so it is held to the same bounds (and key rules) as a value is.
    pub fn from_schema(schema: &Value) -> Option<Shape> {
        let shape = from_schema(schema, 0)?;
        Some(shape.within_nodes())
    }
}

fn from_schema(schema: &Value, depth: usize) -> Option<Shape> {
    let map = schema.as_object()?;
    if map.is_empty() {
        return Some(Shape::Unknown);
    }
    if let Some(members) = map.get("anyOf") {
        let members = members.as_array()?;
        if map.len() != 1 || members.is_empty() || members.len() > 8 {
            return None;
        }
        return members
            .iter()
            .try_fold(Shape::Union(Vec::new()), |union, member| {
                Some(join(union, from_schema(member, depth)?))
            });
    }
    if depth > MAX_DEPTH {
        return None;
    }
    let shape = match map.get("type")?.as_str()? {
        "null" => Shape::Null,
        "boolean" => Shape::Boolean,
        "integer" => Shape::Integer,
        "number" => Shape::Number,
        "string" => Shape::String,
        "array" => Shape::Array(match map.get("items") {
            Some(items) => Some(Box::new(from_schema(items, depth + 1)?)),
            None => None,
        }),
        "object" => match (map.get("properties"), map.get("additionalProperties")) {
            (Some(Value::Object(properties)), None) => {
                let required: Vec<&str> = match map.get("required") {
                    Some(required) => required
                        .as_array()?
                        .iter()
                        .map(Value::as_str)
                        .collect::<Option<_>>()?,
                    None => Vec::new(),
                };
                if properties.len() > MAX_FIELDS || !properties.keys().all(|key| is_field_name(key))
                {
                    return None;
                }
                let fields = properties
                    .iter()
                    .map(|(name, value)| {
                        Some(Field {
                            name: name.clone(),
                            shape: from_schema(value, depth + 1)?,
                            required: required.contains(&name.as_str()),
                        })
                    })
                    .collect::<Option<_>>()?;
                Shape::Object(fields)
            }
            (None, Some(item)) => Shape::Record(Box::new(from_schema(item, depth + 1)?)),
            _ => return None,
        },
        _ => return None,
    };
    Some(shape)
}

/// The shape of `value` at `depth`, spending `budget` nodes.
fn shape_of(value: &Value, depth: usize, budget: &mut usize) -> Shape {
    if *budget == 0 {
        return Shape::Unknown;
    }
    *budget -= 1;
    match value {
        Value::Null => Shape::Null,
        Value::Bool(_) => Shape::Boolean,
        Value::Number(number) if number.is_i64() || number.is_u64() => Shape::Integer,
        Value::Number(_) => Shape::Number,
        Value::String(_) => Shape::String,
        Value::Array(_) | Value::Object(_) if depth >= MAX_DEPTH => Shape::Unknown,
        Value::Array(items) => Shape::Array(
            items
                .iter()
                .take(MAX_SAMPLED_ITEMS)
                .map(|item| shape_of(item, depth + 1, budget))
                .reduce(join)
                .map(Box::new),
        ),
        Value::Object(map) => {
            if map.len() > MAX_FIELDS || !map.keys().all(|key| is_field_name(key)) {
                let values = map
                    .values()
                    .take(MAX_SAMPLED_ITEMS)
                    .map(|item| shape_of(item, depth + 1, budget))
                    .reduce(join)
                    .unwrap_or(Shape::Unknown);
                return Shape::Record(Box::new(values));
            }
            Shape::Object(
                map.iter()
                    .map(|(name, item)| Field {
                        name: name.clone(),
                        shape: shape_of(item, depth + 1, budget),
                        required: true,
                    })
                    .collect(),
            )
        }
    }
}

/// Whether `key` reads as a field's name rather than as data: at most [`MAX_FIELD_NAME`]
/// characters, a letter, `_`, `$` or `@` first, then letters, digits, `_`, `-` and `$`, and few
/// digits (ids and hashes are mostly digits; `line2` is a field, `U024BE7LH` is not).
/// Addresses, paths, numbers, UUIDs, names with spaces are data.
pub fn is_field_name(key: &str) -> bool {
    let mut characters = key.chars();
    let Some(first) = characters.next() else {
        return false;
    };
    if key.len() > MAX_FIELD_NAME
        || !(first.is_ascii_alphabetic() || matches!(first, '_' | '$' | '@'))
        || !characters.all(|character| {
            character.is_ascii_alphanumeric() || matches!(character, '_' | '-' | '$')
        })
    {
        return false;
    }
    let digits = key.chars().filter(char::is_ascii_digit).count();
    digits <= 4 && digits * 3 <= key.len()
}

/// The least shape both fit (see [`Shape::join`]), without the node bound.
fn join(left: Shape, right: Shape) -> Shape {
    match (left, right) {
        (Shape::Unknown, _) | (_, Shape::Unknown) => Shape::Unknown,
        (Shape::Union(members), other) | (other, Shape::Union(members)) => {
            let mut members = members;
            let others = match other {
                Shape::Union(others) => others,
                other => vec![other],
            };
            for other in others {
                match members
                    .iter()
                    .position(|member| member.kind() == other.kind())
                {
                    Some(at) => {
                        let member = std::mem::replace(&mut members[at], Shape::Unknown);
                        members[at] = join(member, other);
                    }
                    None => members.push(other),
                }
            }
            match members.len() {
                1 => members.pop().unwrap_or(Shape::Unknown),
                _ => Shape::Union(members),
            }
        }
        (Shape::Integer, Shape::Number) | (Shape::Number, Shape::Integer) => Shape::Number,
        (Shape::Array(left), Shape::Array(right)) => Shape::Array(match (left, right) {
            (Some(left), Some(right)) => Some(Box::new(join(*left, *right))),
            (item, None) | (None, item) => item,
        }),
        (Shape::Object(left), Shape::Object(right)) => join_objects(left, right),
        (Shape::Record(item), Shape::Object(fields))
        | (Shape::Object(fields), Shape::Record(item)) => Shape::Record(Box::new(
            fields
                .into_iter()
                .map(|field| field.shape)
                .fold(*item, join),
        )),
        (Shape::Record(left), Shape::Record(right)) => Shape::Record(Box::new(join(*left, *right))),
        (left, right) if left.kind() == right.kind() => left,
        (left, right) => Shape::Union(vec![left, right]),
    }
}

/// Two objects' keys: those of both, required where both require them; a record past
/// [`MAX_FIELDS`] keys.
fn join_objects(left: Vec<Field>, right: Vec<Field>) -> Shape {
    let mut right = right;
    let mut fields: Vec<Field> = left
        .into_iter()
        .map(
            |field| match right.iter().position(|other| other.name == field.name) {
                Some(at) => {
                    let other = right.remove(at);
                    Field {
                        name: field.name,
                        shape: join(field.shape, other.shape),
                        required: field.required && other.required,
                    }
                }
                None => Field {
                    required: false,
                    ..field
                },
            },
        )
        .collect();
    fields.extend(right.into_iter().map(|field| Field {
        required: false,
        ..field
    }));
    if fields.len() > MAX_FIELDS {
        let values = fields
            .into_iter()
            .map(|field| field.shape)
            .reduce(join)
            .unwrap_or(Shape::Unknown);
        return Shape::Record(Box::new(values));
    }
    Shape::Object(fields)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn shape(value: Value) -> Shape {
        Shape::of(&value)
    }

    #[test]
    fn a_shape_keeps_types_and_field_names_never_values() {
        let seen = shape(
            json!({"user": "alice@example.com", "count": 3, "ratio": 0.5,
            "tags": ["secret-tag"], "nested": {"ok": true, "none": null}}),
        );
        let schema = seen.to_schema().to_string();
        for value in ["alice", "secret-tag", "0.5", "3"] {
            assert!(!schema.contains(value), "{value} in {schema}");
        }
        assert_eq!(
            seen.to_schema(),
            json!({"type": "object", "properties": {
                "user": {"type": "string"}, "count": {"type": "integer"},
                "ratio": {"type": "number"}, "tags": {"type": "array", "items": {"type": "string"}},
                "nested": {"type": "object", "properties": {"ok": {"type": "boolean"}, "none": {"type": "null"}}, "required": ["ok", "none"]}},
                "required": ["user", "count", "ratio", "tags", "nested"]})
        );
        assert_eq!(Shape::from_schema(&seen.to_schema()), Some(seen));
    }

    #[test]
    fn keys_that_look_like_data_make_a_record() {
        for map in [
            json!({"alice@example.com": {"id": 1}}),
            json!({"U024BE7LH": {"id": 1}}),
            json!({"123": {"id": 1}}),
            json!({"6f1c2a9e-3b7d-4d5e-9f00-1a2b3c4d5e6f": {"id": 1}}),
            json!({"/home/alice": {"id": 1}}),
            json!({"Alice Smith": {"id": 1}}),
        ] {
            let seen = shape(map.clone());
            assert_eq!(
                seen.to_schema(),
                json!({"type": "object", "additionalProperties": {"type": "object", "properties": {"id": {"type": "integer"}}, "required": ["id"]}}),
                "{map}"
            );
        }
        let many: Map<String, Value> = (0..40).map(|n| (format!("user{n}"), json!(n))).collect();
        assert_eq!(
            shape(Value::Object(many)),
            Shape::Record(Box::new(Shape::Integer))
        );
        for field in ["id", "line2", "created_at", "@type", "$ref", "sha", "ipv4"] {
            assert!(is_field_name(field), "{field}");
        }
    }

    #[test]
    fn joining_makes_missing_keys_optional_and_keeps_unions_small() {
        let joined = shape(json!({"a": 1, "b": "x"}))
            .join(shape(json!({"a": 1.5, "c": null})))
            .join(shape(json!({"a": 2, "b": 3})));
        assert_eq!(
            joined.to_schema(),
            json!({"type": "object", "properties": {
                "a": {"type": "number"},
                "b": {"anyOf": [{"type": "string"}, {"type": "integer"}]},
                "c": {"type": "null"}}, "required": ["a"]})
        );
        // Idempotent and order-free: what two gateways recorded merges to the same shape.
        assert_eq!(joined.clone().join(joined.clone()), joined);
        let one = shape(json!([1, "a"])).join(shape(json!({"k": true})));
        assert_eq!(one.to_schema()["anyOf"].as_array().unwrap().len(), 2);
        assert_eq!(Shape::from_schema(&one.to_schema()), Some(one));
        // Every kind at once is still one member per kind.
        let every = [
            json!(null),
            json!(true),
            json!(1),
            json!("s"),
            json!([]),
            json!({}),
        ]
        .iter()
        .map(Shape::of)
        .reduce(Shape::join)
        .unwrap();
        assert!(
            matches!(&every, Shape::Union(members) if members.len() == 6),
            "{every:?}"
        );
        assert_eq!(every.clone().join(Shape::Unknown), Shape::Unknown);
    }

    #[test]
    fn shapes_stay_within_their_bounds() {
        let mut deep = json!("leaf");
        for _ in 0..50 {
            deep = json!({"next": deep});
        }
        let seen = shape(deep);
        assert_eq!(
            seen.to_schema().to_string().matches("properties").count(),
            MAX_DEPTH
        );
        let wide: Vec<Value> = (0..10_000)
            .map(|n| json!({format!("field{}", n % 20): {"a": [1, 2, {"b": n}]}}))
            .collect();
        let seen = shape(Value::Array(wide));
        assert!(seen.nodes() <= MAX_NODES);
        let many_fields: Map<String, Value> = (0..30)
            .map(|n| (format!("f{n}"), json!({"x": {"y": {"z": [n]}}, "w": [[n]]})))
            .collect();
        let joined = (0..20)
            .map(|_| shape(Value::Object(many_fields.clone())))
            .reduce(Shape::join)
            .unwrap();
        assert!(joined.nodes() <= MAX_NODES, "{}", joined.nodes());
        assert_eq!(
            Shape::from_schema(&json!({"type": "object", "properties": {"a b": {}}})),
            None
        );
        assert_eq!(
            Shape::from_schema(&json!({"type": "string", "enum": ["x"]})),
            Some(Shape::String)
        );
    }
}
