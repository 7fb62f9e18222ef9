//! The walk from JSON Schema to [`TypeExpr`]s: `$ref`s become named definitions, and caps on
//! depth, width and total work keep hostile schemas harmless.

use std::collections::{HashMap, HashSet};

use serde_json::{Map, Value};

use crate::names::sanitize_identifier;
use crate::schema::{
    Definition, Documentation, ExtraProperties, ObjectType, Property, ToolTypes, TypeExpr,
};

impl ToolTypes {
    /// Walks a tool's input and output schemas.
    pub fn from_schemas(input: &Value, output: Option<&Value>) -> Self {
        tool_types(input, output)
    }
}

/// Nesting deeper than this becomes `unknown`.
const MAX_DEPTH: usize = 24;
/// Schema nodes visited per document before everything else becomes `unknown`.
const MAX_NODES: usize = 20_000;
/// Named definitions per tool before further `$ref`s become `unknown`.
const MAX_DEFINITIONS: usize = 100;
/// Enum members kept as literals; a longer enum becomes its members' base types.
const MAX_ENUM_MEMBERS: usize = 100;
/// Properties kept per object; the rest fold into an index signature.
const MAX_PROPERTIES: usize = 300;

/// Walks a tool's input and output schemas.
pub(crate) fn tool_types(input: &Value, output: Option<&Value>) -> ToolTypes {
    let mut names = DefinitionNames::default();
    let mut definitions = Vec::new();
    let (input_type, input_named) =
        Walker::new(input, "Args", &mut names, HashMap::new()).run(&mut definitions);
    let output = output.map(|schema| {
        // Servers often give both schemas the same definitions: name them once.
        let inherited = if same_definitions(input, schema) {
            input_named
                .iter()
                .filter(|(pointer, _)| is_definition_pointer(pointer))
                .map(|(pointer, name)| (pointer.clone(), name.clone()))
                .collect()
        } else {
            HashMap::new()
        };
        Walker::new(schema, "Result", &mut names, inherited)
            .run(&mut definitions)
            .0
    });
    ToolTypes {
        input: input_type,
        output,
        definitions,
        observed_calls: None,
    }
}

/// Names given to definitions across both documents of one tool.
#[derive(Default)]
struct DefinitionNames {
    used: HashSet<String>,
}

impl DefinitionNames {
    fn claim(&mut self, wanted: &str) -> String {
        let base = definition_identifier(wanted);
        let mut candidate = base.clone();
        let mut counter = 2;
        while self.used.contains(&candidate) {
            candidate = format!("{base}_{counter}");
            counter += 1;
        }
        self.used.insert(candidate.clone());
        candidate
    }
}

/// Names a definition may not take: they would shadow what the declarations use.
const RESERVED_TYPE_NAMES: &[&str] = &[
    "Array",
    "CallToolResult",
    "ContentBlock",
    "Promise",
    "Record",
    "ToolServer",
    "any",
    "bigint",
    "boolean",
    "never",
    "number",
    "object",
    "string",
    "symbol",
    "unknown",
    // Python's typing names, for the Python renderer.
    "Any",
    "Literal",
    "NotRequired",
    "Optional",
    "TypedDict",
    "Union",
];

fn definition_identifier(wanted: &str) -> String {
    let mut identifier = sanitize_identifier(wanted);
    if RESERVED_TYPE_NAMES.contains(&identifier.as_str()) {
        identifier.push('_');
    }
    identifier
}

/// One walk over one schema document (the input or the output schema of a tool).
struct Walker<'a> {
    root: &'a Value,
    root_name: &'static str,
    names: &'a mut DefinitionNames,
    /// JSON pointer → definition name, for targets already named.
    named: HashMap<String, String>,
    /// Targets named but not converted yet.
    pending: Vec<(String, String)>,
    nodes: usize,
}

impl<'a> Walker<'a> {
    /// A walk of `root`; `named` holds targets another walk already named.
    fn new(
        root: &'a Value,
        root_name: &'static str,
        names: &'a mut DefinitionNames,
        named: HashMap<String, String>,
    ) -> Self {
        Self {
            root,
            root_name,
            names,
            named,
            pending: Vec::new(),
            nodes: 0,
        }
    }

    /// The document's type; adds the definitions it names to `definitions` and returns which
    /// pointer got which name.
    fn run(mut self, definitions: &mut Vec<Definition>) -> (TypeExpr, HashMap<String, String>) {
        let root = self.convert(self.root, 0);
        // Converting one definition may name more; each is converted once, so recursion ends.
        let mut next = 0;
        while let Some((pointer, name)) = self.pending.get(next).cloned() {
            next += 1;
            let target = resolve_pointer(self.root, &pointer);
            let (value, doc) = match target {
                Some(schema) => (self.convert(schema, 0), documentation(schema, Some(&name))),
                None => (TypeExpr::Unknown, Documentation::default()),
            };
            definitions.push(Definition { name, value, doc });
        }
        (root, self.named)
    }

    fn convert(&mut self, schema: &Value, depth: usize) -> TypeExpr {
        self.nodes += 1;
        if depth > MAX_DEPTH || self.nodes > MAX_NODES {
            return TypeExpr::Unknown;
        }
        let object = match schema {
            Value::Bool(false) => return TypeExpr::Never,
            Value::Object(object) => object,
            _ => return TypeExpr::Unknown,
        };
        if let Some(Value::String(reference)) = object.get("$ref") {
            // Draft-07 ignores the keywords beside a `$ref`; later drafts rarely need them.
            let target = self.reference(reference);
            return nullable(object, target);
        }
        let mut parts = Vec::new();
        if let Some(value) = object.get("const") {
            parts.push(literal_type(value, depth));
        } else if let Some(Value::Array(members)) = object.get("enum") {
            parts.push(enum_type(members));
        } else {
            parts.push(self.by_type(object, depth));
        }
        for keyword in ["anyOf", "oneOf"] {
            if let Some(Value::Array(members)) = object.get(keyword) {
                let members = members
                    .iter()
                    .map(|member| self.convert(member, depth + 1))
                    .collect();
                parts.push(union(members));
            }
        }
        if let Some(Value::Array(members)) = object.get("allOf") {
            for member in members {
                parts.push(self.convert(member, depth + 1));
            }
        }
        nullable(object, intersection(parts))
    }

    /// The part of a schema given by `type`, or implied by keywords when `type` is absent.
    fn by_type(&mut self, object: &Map<String, Value>, depth: usize) -> TypeExpr {
        match object.get("type") {
            Some(Value::String(name)) => self.named_type(name, object, depth),
            Some(Value::Array(names)) => {
                let members = names
                    .iter()
                    .filter_map(Value::as_str)
                    .map(|name| self.named_type(name, object, depth))
                    .collect();
                union(members)
            }
            _ if is_object_schema(object) => self.object_type(object, depth),
            _ if ["items", "prefixItems"]
                .iter()
                .any(|key| object.contains_key(*key)) =>
            {
                self.array_type(object, depth)
            }
            _ => TypeExpr::Unknown,
        }
    }

    fn named_type(&mut self, name: &str, object: &Map<String, Value>, depth: usize) -> TypeExpr {
        match name {
            "string" => TypeExpr::String,
            "number" => TypeExpr::Number,
            "integer" => TypeExpr::Integer,
            "boolean" => TypeExpr::Boolean,
            "null" => TypeExpr::Null,
            "object" => self.object_type(object, depth),
            "array" => self.array_type(object, depth),
            _ => TypeExpr::Unknown,
        }
    }

    fn object_type(&mut self, object: &Map<String, Value>, depth: usize) -> TypeExpr {
        let required: Vec<&str> = match object.get("required") {
            Some(Value::Array(names)) => names.iter().filter_map(Value::as_str).collect(),
            _ => Vec::new(),
        };
        let mut properties = Vec::new();
        let mut overflow = Vec::new();
        let declared = object.get("properties").and_then(Value::as_object);
        for (name, schema) in declared.into_iter().flatten() {
            let value = self.convert(schema, depth + 1);
            if properties.len() >= MAX_PROPERTIES {
                overflow.push(value);
                continue;
            }
            properties.push(Property {
                name: name.clone(),
                value,
                required: required.contains(&name.as_str()),
                doc: documentation(schema, Some(name)),
            });
        }
        // Keys required without a declaration still have to be there.
        for name in &required {
            let known = declared.is_some_and(|declared| declared.contains_key(*name));
            let seen = properties.iter().any(|property| property.name == *name);
            if !known && !seen && properties.len() < MAX_PROPERTIES {
                properties.push(Property {
                    name: (*name).to_owned(),
                    value: TypeExpr::Unknown,
                    required: true,
                    doc: Documentation::default(),
                });
            }
        }
        let mut extra_types = overflow;
        if let Some(Value::Object(patterns)) = object.get("patternProperties") {
            for schema in patterns.values() {
                extra_types.push(self.convert(schema, depth + 1));
            }
        }
        let extra = match object.get("additionalProperties") {
            Some(Value::Bool(false)) if extra_types.is_empty() => ExtraProperties::Closed,
            Some(Value::Bool(false)) => ExtraProperties::Typed(Box::new(union(extra_types))),
            Some(schema) => {
                extra_types.push(self.convert(schema, depth + 1));
                ExtraProperties::Typed(Box::new(union(extra_types)))
            }
            None if !extra_types.is_empty() => ExtraProperties::Typed(Box::new(union(extra_types))),
            // A bare `{ "type": "object" }` is a map of anything, and reads best as one.
            None if properties.is_empty() && declared.is_none() => {
                ExtraProperties::Typed(Box::new(TypeExpr::Unknown))
            }
            None => ExtraProperties::Unspecified,
        };
        TypeExpr::Object(ObjectType {
            properties,
            extra,
            declares_properties: declared.is_some(),
        })
    }

    fn array_type(&mut self, object: &Map<String, Value>, depth: usize) -> TypeExpr {
        // 2020-12 tuples: `prefixItems` then `items` for the rest; draft-07: `items: [..]`
        // then `additionalItems`.
        let (prefix, rest) = match (object.get("prefixItems"), object.get("items")) {
            (Some(Value::Array(prefix)), rest) => (Some(prefix), rest),
            (_, Some(Value::Array(prefix))) => (Some(prefix), object.get("additionalItems")),
            (_, items) => (None, items),
        };
        let rest = match rest {
            None | Some(Value::Bool(true)) => None,
            Some(schema) => Some(self.convert(schema, depth + 1)),
        };
        match prefix {
            Some(prefix) => TypeExpr::Tuple {
                items: prefix
                    .iter()
                    .take(MAX_PROPERTIES)
                    .map(|item| self.convert(item, depth + 1))
                    .collect(),
                rest: rest
                    .filter(|rest| *rest != TypeExpr::Unknown && *rest != TypeExpr::Never)
                    .map(Box::new),
            },
            None => TypeExpr::Array(Box::new(rest.unwrap_or(TypeExpr::Unknown))),
        }
    }

    fn reference(&mut self, reference: &str) -> TypeExpr {
        // Only references inside this document; remote ones are never fetched.
        let Some(pointer) = reference.strip_prefix('#') else {
            return TypeExpr::Unknown;
        };
        if let Some(name) = self.named.get(pointer) {
            return TypeExpr::Reference(name.clone());
        }
        if self.named.len() >= MAX_DEFINITIONS || resolve_pointer(self.root, pointer).is_none() {
            return TypeExpr::Unknown;
        }
        let wanted = pointer
            .rsplit('/')
            .next()
            .filter(|last| !last.is_empty())
            .map(unescape_pointer_segment)
            .unwrap_or_else(|| self.root_name.to_owned());
        let name = self.names.claim(&wanted);
        self.named.insert(pointer.to_owned(), name.clone());
        self.pending.push((pointer.to_owned(), name.clone()));
        TypeExpr::Reference(name)
    }
}

/// The keywords that hold definitions.
const DEFINITION_KEYWORDS: [&str; 2] = ["$defs", "definitions"];

/// Whether a JSON pointer points into a definitions section (`/$defs/...`, `/definitions/...`).
fn is_definition_pointer(pointer: &str) -> bool {
    DEFINITION_KEYWORDS
        .iter()
        .any(|keyword| pointer.starts_with(&format!("/{keyword}/")))
}

/// Whether two documents have equal definitions sections that refer only into themselves, so a
/// name given to one's definition means the same in the other.
fn same_definitions(left: &Value, right: &Value) -> bool {
    let mut any = false;
    for keyword in DEFINITION_KEYWORDS {
        let (left, right) = (left.get(keyword), right.get(keyword));
        if left != right {
            return false;
        }
        if let Some(section) = left {
            any = true;
            if !references_stay_in_definitions(section, 0) {
                return false;
            }
        }
    }
    any
}

fn references_stay_in_definitions(value: &Value, depth: usize) -> bool {
    if depth > MAX_DEPTH * 4 {
        return false;
    }
    match value {
        Value::Object(object) => object.iter().all(|(key, item)| match (key.as_str(), item) {
            ("$ref", Value::String(reference)) => reference
                .strip_prefix('#')
                .is_some_and(is_definition_pointer),
            _ => references_stay_in_definitions(item, depth + 1),
        }),
        Value::Array(items) => items
            .iter()
            .all(|item| references_stay_in_definitions(item, depth + 1)),
        _ => true,
    }
}

/// `value`, or `value | null` under OpenAPI's `nullable: true`.
fn nullable(object: &Map<String, Value>, value: TypeExpr) -> TypeExpr {
    if object.get("nullable") == Some(&Value::Bool(true)) {
        union(vec![value, TypeExpr::Null])
    } else {
        value
    }
}

/// Whether keywords only objects have imply `type: "object"` (`required` alone does not: in an
/// `anyOf` member it only constrains the object around it).
fn is_object_schema(object: &Map<String, Value>) -> bool {
    ["properties", "additionalProperties", "patternProperties"]
        .iter()
        .any(|key| object.contains_key(*key))
}

/// The schema at a JSON pointer (`/$defs/Node`) inside `root`; `""` is the root itself.
fn resolve_pointer<'v>(root: &'v Value, pointer: &str) -> Option<&'v Value> {
    if pointer.is_empty() {
        return Some(root);
    }
    let mut current = root;
    for segment in pointer.strip_prefix('/')?.split('/') {
        let segment = unescape_pointer_segment(segment);
        current = match current {
            Value::Object(object) => object.get(&segment)?,
            Value::Array(items) => items.get(segment.parse::<usize>().ok()?)?,
            _ => return None,
        };
    }
    Some(current)
}

fn unescape_pointer_segment(segment: &str) -> String {
    percent_decode(segment)
        .replace("~1", "/")
        .replace("~0", "~")
}

/// Decodes `%XX` escapes (a `$ref` is a URI fragment); malformed escapes are kept as written.
fn percent_decode(text: &str) -> String {
    if !text.contains('%') {
        return text.to_owned();
    }
    let bytes = text.as_bytes();
    let mut decoded = Vec::with_capacity(bytes.len());
    let mut index = 0;
    while index < bytes.len() {
        let escaped = (bytes[index] == b'%')
            .then(|| bytes.get(index + 1..index + 3))
            .flatten()
            .and_then(|hex| std::str::from_utf8(hex).ok())
            .and_then(|hex| u8::from_str_radix(hex, 16).ok());
        match escaped {
            Some(byte) => {
                decoded.push(byte);
                index += 3;
            }
            None => {
                decoded.push(bytes[index]);
                index += 1;
            }
        }
    }
    String::from_utf8_lossy(&decoded).into_owned()
}

/// The type of exactly this JSON value.
fn literal_type(value: &Value, depth: usize) -> TypeExpr {
    if depth > MAX_DEPTH {
        return TypeExpr::Unknown;
    }
    match value {
        Value::Array(items) => TypeExpr::Tuple {
            items: items
                .iter()
                .take(MAX_PROPERTIES)
                .map(|item| literal_type(item, depth + 1))
                .collect(),
            rest: None,
        },
        Value::Object(object) => TypeExpr::Object(ObjectType {
            properties: object
                .iter()
                .take(MAX_PROPERTIES)
                .map(|(name, item)| Property {
                    name: name.clone(),
                    value: literal_type(item, depth + 1),
                    required: true,
                    doc: Documentation::default(),
                })
                .collect(),
            extra: ExtraProperties::Unspecified,
            declares_properties: true,
        }),
        scalar => TypeExpr::Literal(scalar.clone()),
    }
}

fn enum_type(members: &[Value]) -> TypeExpr {
    if members.len() > MAX_ENUM_MEMBERS {
        // Too many to list: say what kinds of values they are.
        return union(members.iter().map(base_type).collect());
    }
    union(
        members
            .iter()
            .map(|member| literal_type(member, 0))
            .collect(),
    )
}

fn base_type(value: &Value) -> TypeExpr {
    match value {
        Value::Null => TypeExpr::Null,
        Value::Bool(_) => TypeExpr::Boolean,
        Value::Number(_) => TypeExpr::Number,
        Value::String(_) => TypeExpr::String,
        Value::Array(_) => TypeExpr::Array(Box::new(TypeExpr::Unknown)),
        Value::Object(_) => TypeExpr::Object(ObjectType {
            properties: Vec::new(),
            extra: ExtraProperties::Typed(Box::new(TypeExpr::Unknown)),
            declares_properties: false,
        }),
    }
}

/// A union, flattened and simplified: `unknown` absorbs everything, `never` disappears,
/// duplicates go, and one member is itself.
pub(crate) fn union(members: Vec<TypeExpr>) -> TypeExpr {
    let mut flat: Vec<TypeExpr> = Vec::new();
    for member in members {
        match member {
            TypeExpr::Unknown => return TypeExpr::Unknown,
            TypeExpr::Never => {}
            TypeExpr::Union(inner) => {
                for item in inner {
                    if !flat.contains(&item) {
                        flat.push(item);
                    }
                }
            }
            other => {
                if !flat.contains(&other) {
                    flat.push(other);
                }
            }
        }
    }
    match flat.len() {
        0 => TypeExpr::Never,
        1 => flat.pop().unwrap_or(TypeExpr::Never),
        _ => TypeExpr::Union(flat),
    }
}

/// An intersection, flattened and simplified: `unknown` parts disappear, `never` absorbs
/// everything, duplicates go, and one part is itself.
pub(crate) fn intersection(parts: Vec<TypeExpr>) -> TypeExpr {
    let mut flat: Vec<TypeExpr> = Vec::new();
    for part in parts {
        match part {
            TypeExpr::Unknown => {}
            TypeExpr::Never => return TypeExpr::Never,
            TypeExpr::Intersection(inner) => {
                for item in inner {
                    if !flat.contains(&item) {
                        flat.push(item);
                    }
                }
            }
            other => {
                if !flat.contains(&other) {
                    flat.push(other);
                }
            }
        }
    }
    match flat.len() {
        0 => TypeExpr::Unknown,
        1 => flat.pop().unwrap_or(TypeExpr::Unknown),
        _ => TypeExpr::Intersection(flat),
    }
}

/// What a schema says about a value beyond its type. `name` is the property it describes, so a
/// title that only repeats it (as pydantic writes them) is left out.
pub(crate) fn documentation(schema: &Value, name: Option<&str>) -> Documentation {
    let Value::Object(object) = schema else {
        return Documentation::default();
    };
    let text = |key: &str| {
        object
            .get(key)
            .and_then(Value::as_str)
            .map(str::trim)
            .filter(|text| !text.is_empty())
            .map(str::to_owned)
    };
    let count = |key: &str| object.get(key).and_then(Value::as_u64);
    let number = |key: &str| match object.get(key) {
        Some(Value::Number(number)) => Some(number.clone()),
        _ => None,
    };
    let description = text("description")
        .or_else(|| text("title").filter(|title| name.is_none_or(|name| !same_words(title, name))));
    let (minimum, exclusive_minimum) = match (number("minimum"), number("exclusiveMinimum")) {
        (_, Some(exclusive)) => (Some(exclusive), true),
        (minimum, None) => (minimum, false),
    };
    let (maximum, exclusive_maximum) = match (number("maximum"), number("exclusiveMaximum")) {
        (_, Some(exclusive)) => (Some(exclusive), true),
        (maximum, None) => (maximum, false),
    };
    Documentation {
        description,
        default: object.get("default").cloned(),
        format: text("format"),
        pattern: text("pattern"),
        minimum,
        maximum,
        exclusive_minimum,
        exclusive_maximum,
        min_length: count("minLength"),
        max_length: count("maxLength"),
        min_items: count("minItems"),
        max_items: count("maxItems"),
        deprecated: object.get("deprecated") == Some(&Value::Bool(true)),
    }
}

/// Whether a title and a key spell the same words (`"Entity Name"` and `entity_name`).
fn same_words(title: &str, name: &str) -> bool {
    let letters = |text: &str| -> String {
        text.chars()
            .filter(|c| c.is_alphanumeric())
            .flat_map(char::to_lowercase)
            .collect()
    };
    letters(title) == letters(name)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn pointers_unescape() {
        let root = json!({"$defs": {"a/b": {"type": "string"}, "c d": {"type": "number"}}});
        assert_eq!(
            resolve_pointer(&root, "/$defs/a~1b"),
            Some(&json!({"type": "string"}))
        );
        assert_eq!(
            resolve_pointer(&root, "/$defs/c%20d"),
            Some(&json!({"type": "number"}))
        );
        assert_eq!(resolve_pointer(&root, "/$defs/missing"), None);
        assert_eq!(percent_decode("%zz%4"), "%zz%4");
    }

    #[test]
    fn unions_simplify() {
        assert_eq!(
            union(vec![TypeExpr::String, TypeExpr::Unknown]),
            TypeExpr::Unknown
        );
        assert_eq!(union(vec![]), TypeExpr::Never);
        assert_eq!(
            union(vec![TypeExpr::String, TypeExpr::String]),
            TypeExpr::String
        );
        assert_eq!(
            intersection(vec![TypeExpr::Unknown, TypeExpr::Number]),
            TypeExpr::Number
        );
    }
}
