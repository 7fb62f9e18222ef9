//! A tool's types as Python types: every object type with properties becomes a named
//! `TypedDict` (named after the tool and the path to it); intersections of objects merge, other
//! intersections become `Any`.

use std::collections::HashSet;

use serde_json::Value;

use crate::docs::documentation_lines;
use crate::schema::{Definition, ExtraProperties, ObjectType, Property, ToolTypes, TypeExpr};

/// Python's hard keywords: not usable as keyword-argument or class-syntax field names.
const KEYWORDS: &[&str] = &[
    "False", "None", "True", "and", "as", "assert", "async", "await", "break", "class", "continue",
    "def", "del", "elif", "else", "except", "finally", "for", "from", "global", "if", "import",
    "in", "is", "lambda", "nonlocal", "not", "or", "pass", "raise", "return", "try", "while",
    "with", "yield",
];

/// A Python type.
#[derive(Debug, Clone, PartialEq)]
pub(super) enum PythonType {
    Any,
    Never,
    None,
    Bool,
    Float,
    Int,
    Str,
    /// `Literal[...]` of strings, numbers and booleans.
    Literal(Vec<Value>),
    List(Box<PythonType>),
    Tuple(Vec<PythonType>, Option<Box<PythonType>>),
    /// `dict[str, T]`.
    Dict(Box<PythonType>),
    Union(Vec<PythonType>),
    /// A named type of the same tool.
    Named(String),
}

/// One key of a `TypedDict`, or one keyword argument.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct Field {
    pub(super) key: String,
    pub(super) value: PythonType,
    pub(super) required: bool,
    pub(super) doc: Vec<String>,
}

/// A named type: a `TypedDict` or an alias.
#[derive(Debug, Clone, PartialEq)]
pub(super) enum NamedType {
    TypedDict {
        name: String,
        doc: Vec<String>,
        fields: Vec<Field>,
    },
    Alias {
        name: String,
        doc: Vec<String>,
        value: PythonType,
    },
}

impl NamedType {
    /// The type's name.
    pub(super) fn name(&self) -> &str {
        match self {
            NamedType::TypedDict { name, .. } | NamedType::Alias { name, .. } => name,
        }
    }
}

/// How a tool's function takes its arguments.
#[derive(Debug, Clone, PartialEq)]
pub(super) enum Parameters {
    /// `*, a: int, b: str = ...`
    Keywords(Vec<Field>),
    /// `**arguments: Unpack[T]`, when keys are not Python identifiers.
    Unpacked(PythonType),
    /// `**arguments: Any`, when the schema says nothing usable.
    Anything,
}

/// A tool lowered to Python: its named types, parameters and result.
pub(super) struct Lowered {
    pub(super) named: Vec<NamedType>,
    pub(super) parameters: Parameters,
    pub(super) result: PythonType,
    /// `Some(calls)` when the result was observed in that many calls, not declared.
    pub(super) observed_calls: Option<u64>,
}

impl Lowered {
    /// Lowers one tool's types; `tool` (its guest name) names its generated types.
    pub(super) fn new(types: &ToolTypes, tool: &str) -> Self {
        let mut lowerer = Lowerer {
            used: types
                .definitions
                .iter()
                .map(|definition| definition.name.clone())
                .collect(),
            named: Vec::new(),
        };
        for definition in &types.definitions {
            lowerer.definition(definition);
        }
        let stem = pascal_case(tool);
        let parameters = match &types.input {
            TypeExpr::Object(object)
                if object.properties.is_empty()
                    && !matches!(object.extra, ExtraProperties::Typed(_)) =>
            {
                Parameters::Keywords(Vec::new())
            }
            TypeExpr::Object(object)
                if !object.properties.is_empty()
                    && object
                        .properties
                        .iter()
                        .all(|property| is_python_identifier(&property.name)) =>
            {
                Parameters::Keywords(lowerer.fields(&object.properties, &stem))
            }
            TypeExpr::Object(object) if !object.properties.is_empty() => {
                Parameters::Unpacked(lowerer.lower(&types.input, &format!("{stem}Args")))
            }
            TypeExpr::Reference(name)
                if types.definition(name).is_some_and(|definition| {
                    matches!(&definition.value, TypeExpr::Object(object) if !object.properties.is_empty())
                }) =>
            {
                Parameters::Unpacked(PythonType::Named(name.clone()))
            }
            _ => Parameters::Anything,
        };
        let result = match &types.output {
            Some(output) => lowerer.lower(output, &format!("{stem}Result")),
            None => PythonType::Any,
        };
        Self {
            named: lowerer.named,
            parameters,
            result,
            observed_calls: types.observed_calls,
        }
    }
}

/// Turns type expressions into Python types, naming object types as it goes.
struct Lowerer {
    used: HashSet<String>,
    named: Vec<NamedType>,
}

impl Lowerer {
    fn definition(&mut self, definition: &Definition) {
        let doc = documentation_lines(&definition.doc);
        let named = match &definition.value {
            TypeExpr::Object(object) if !object.properties.is_empty() => NamedType::TypedDict {
                name: definition.name.clone(),
                doc,
                fields: self.fields(&object.properties, &definition.name),
            },
            other => NamedType::Alias {
                name: definition.name.clone(),
                doc,
                value: self.lower(other, &definition.name),
            },
        };
        self.named.push(named);
    }

    fn fields(&mut self, properties: &[Property], hint: &str) -> Vec<Field> {
        properties
            .iter()
            .map(|property| Field {
                key: property.name.clone(),
                value: self.lower(
                    &property.value,
                    &format!("{hint}{}", pascal_case(&property.name)),
                ),
                required: property.required,
                doc: documentation_lines(&property.doc),
            })
            .collect()
    }

    /// `value` as a Python type; object types become `TypedDict`s named from `hint`.
    fn lower(&mut self, value: &TypeExpr, hint: &str) -> PythonType {
        match value {
            TypeExpr::Unknown => PythonType::Any,
            TypeExpr::Never => PythonType::Never,
            TypeExpr::Null | TypeExpr::Literal(Value::Null) => PythonType::None,
            TypeExpr::Boolean => PythonType::Bool,
            TypeExpr::Number => PythonType::Float,
            TypeExpr::Integer => PythonType::Int,
            TypeExpr::String => PythonType::Str,
            TypeExpr::Literal(literal) => PythonType::Literal(vec![literal.clone()]),
            TypeExpr::Array(item) => {
                PythonType::List(Box::new(self.lower(item, &format!("{hint}Item"))))
            }
            TypeExpr::Tuple { items, rest } => PythonType::Tuple(
                items
                    .iter()
                    .map(|item| self.lower(item, &format!("{hint}Item")))
                    .collect(),
                rest.as_ref()
                    .map(|rest| Box::new(self.lower(rest, &format!("{hint}Item")))),
            ),
            TypeExpr::Object(object) => self.object(object, hint),
            TypeExpr::Union(members) => self.union(members, hint),
            TypeExpr::Intersection(parts) => {
                let objects: Vec<&ObjectType> = parts
                    .iter()
                    .filter_map(|part| match part {
                        TypeExpr::Object(object) => Some(object),
                        _ => None,
                    })
                    .collect();
                if objects.len() != parts.len() {
                    return PythonType::Any;
                }
                let merged = ObjectType {
                    properties: objects
                        .iter()
                        .flat_map(|object| object.properties.iter().cloned())
                        .collect(),
                    extra: ExtraProperties::Unspecified,
                    declares_properties: true,
                };
                self.object(&merged, hint)
            }
            TypeExpr::Reference(name) => PythonType::Named(name.clone()),
        }
    }

    fn object(&mut self, object: &ObjectType, hint: &str) -> PythonType {
        if object.properties.is_empty() {
            let value = match &object.extra {
                ExtraProperties::Closed => PythonType::Never,
                ExtraProperties::Unspecified => PythonType::Any,
                ExtraProperties::Typed(value) => self.lower(value, &format!("{hint}Value")),
            };
            return PythonType::Dict(Box::new(value));
        }
        let name = self.claim(hint);
        let fields = self.fields(&object.properties, &name);
        self.named.push(NamedType::TypedDict {
            name: name.clone(),
            doc: Vec::new(),
            fields,
        });
        PythonType::Named(name)
    }

    fn union(&mut self, members: &[TypeExpr], hint: &str) -> PythonType {
        let mut literals = Vec::new();
        let mut types: Vec<PythonType> = Vec::new();
        let mut objects = 0;
        for member in members {
            let lowered = match member {
                TypeExpr::Literal(literal) if !literal.is_null() => {
                    literals.push(literal.clone());
                    continue;
                }
                TypeExpr::Object(object) if !object.properties.is_empty() => {
                    objects += 1;
                    self.object(object, &format!("{hint}{objects}"))
                }
                other => self.lower(other, hint),
            };
            if !types.contains(&lowered) {
                types.push(lowered);
            }
        }
        if !literals.is_empty() {
            types.insert(0, PythonType::Literal(literals));
        }
        match types.len() {
            1 => types.pop().unwrap_or(PythonType::Any),
            _ => PythonType::Union(types),
        }
    }

    fn claim(&mut self, wanted: &str) -> String {
        let mut candidate = wanted.to_owned();
        let mut counter = 2;
        while self.used.contains(&candidate) {
            candidate = format!("{wanted}{counter}");
            counter += 1;
        }
        self.used.insert(candidate.clone());
        candidate
    }
}

pub(super) fn is_python_identifier(text: &str) -> bool {
    let mut characters = text.chars();
    let starts_well = characters
        .next()
        .is_some_and(|first| first.is_ascii_alphabetic() || first == '_');
    starts_well
        && characters.all(|c| c.is_ascii_alphanumeric() || c == '_')
        && !KEYWORDS.contains(&text)
}

/// `get-sum` → `GetSum`, `entityType` → `EntityType`.
fn pascal_case(text: &str) -> String {
    let mut result = String::new();
    let mut upper_next = true;
    for character in text.chars() {
        if character.is_ascii_alphanumeric() {
            if upper_next {
                result.push(character.to_ascii_uppercase());
            } else {
                result.push(character);
            }
            upper_next = false;
        } else {
            upper_next = true;
        }
    }
    if result.starts_with(|c: char| c.is_ascii_digit()) || result.is_empty() {
        result.insert(0, 'T');
    }
    result
}
