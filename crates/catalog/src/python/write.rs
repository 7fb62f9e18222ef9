//! Python text from lowered types: the stubs' definitions and functions, and one-line
//! signatures.

use std::collections::HashMap;
use std::fmt::Write as _;

use serde_json::Value;

use super::lower::{Field, Lowered, NamedType, Parameters, PythonType, is_python_identifier};
use crate::schema::Definition;

/// An inline dict past the depth limit, or the rest of what was left out: `...` is valid Python
/// in these places and reads as "more".
const ABBREVIATED: &str = "...";

/// How to render types.
#[derive(Debug, Clone, Copy)]
pub(super) enum Layout<'a> {
    /// Stub text: named types by their names, nothing left out.
    Stub,
    /// One line: generated `TypedDict`s written in place as dict displays
    /// (`{"city": str, "days": NotRequired[int]}`, the fields of the functional `TypedDict`
    /// form), definitions by their names, shortened with `...` past these limits.
    Line {
        /// The tool's named types.
        named: &'a [NamedType],
        /// The tool's definitions, which keep their names (they may be recursive).
        definitions: &'a [Definition],
        /// Dicts nested deeper than this are `{...}`; the arguments are depth 0.
        max_depth: usize,
        /// Keys (and keyword parameters) shown per dict, required ones first.
        max_properties: usize,
        /// Members shown per union, and values per `Literal`.
        max_union: usize,
    },
}

/// Renders lowered types; `renamed` maps a tool's local names to the names in this output.
pub(super) struct Writer<'a> {
    pub(super) renamed: &'a HashMap<String, String>,
    pub(super) layout: Layout<'a>,
}

impl<'a> Writer<'a> {
    /// A writer of stub text.
    pub(super) fn stub(renamed: &'a HashMap<String, String>) -> Self {
        Self {
            renamed,
            layout: Layout::Stub,
        }
    }

    /// How `name` is spelled in this output.
    pub(super) fn name(&self, name: &str) -> String {
        self.renamed
            .get(name)
            .cloned()
            .unwrap_or_else(|| name.to_owned())
    }

    /// `(max_depth, max_properties, max_union)`: unlimited for stubs.
    fn limits(&self) -> (usize, usize, usize) {
        match self.layout {
            Layout::Stub => (usize::MAX, usize::MAX, usize::MAX),
            Layout::Line {
                max_depth,
                max_properties,
                max_union,
                ..
            } => (max_depth, max_properties, max_union),
        }
    }

    /// `value` as Python; `depth` counts the dicts around it (the arguments are depth 0).
    fn render(&self, value: &PythonType, depth: usize) -> String {
        let (_, _, max_union) = self.limits();
        match value {
            PythonType::Any => "Any".to_owned(),
            PythonType::Never => "Never".to_owned(),
            PythonType::None => "None".to_owned(),
            PythonType::Bool => "bool".to_owned(),
            PythonType::Float => "float".to_owned(),
            PythonType::Int => "int".to_owned(),
            PythonType::Str => "str".to_owned(),
            PythonType::Literal(values) => {
                let mut parts: Vec<String> = shown(values, max_union)
                    .iter()
                    .map(python_literal)
                    .collect();
                if parts.len() < values.len() {
                    parts.push(ABBREVIATED.to_owned());
                }
                format!("Literal[{}]", parts.join(", "))
            }
            PythonType::List(item) => format!("list[{}]", self.render(item, depth)),
            PythonType::Tuple(items, rest) => {
                let mut parts: Vec<String> =
                    items.iter().map(|item| self.render(item, depth)).collect();
                if let Some(rest) = rest {
                    parts.push(format!("*tuple[{}, ...]", self.render(rest, depth)));
                }
                if parts.is_empty() {
                    "tuple[()]".to_owned()
                } else {
                    format!("tuple[{}]", parts.join(", "))
                }
            }
            PythonType::Dict(value) => format!("dict[str, {}]", self.render(value, depth)),
            PythonType::Union(members) => {
                let mut parts: Vec<String> = shown(members, max_union)
                    .iter()
                    .map(|member| self.render(member, depth))
                    .collect();
                if parts.len() < members.len() {
                    parts.push(ABBREVIATED.to_owned());
                }
                parts.join(" | ")
            }
            PythonType::Named(name) => match self.layout {
                Layout::Line {
                    named, definitions, ..
                } if !definitions
                    .iter()
                    .any(|definition| definition.name == *name) =>
                {
                    match named.iter().find(|item| item.name() == name) {
                        Some(NamedType::TypedDict { fields, .. }) => self.dict(fields, depth),
                        _ => self.name(name),
                    }
                }
                _ => self.name(name),
            },
        }
    }

    /// A generated `TypedDict` in place: `{"key": T, "other": NotRequired[T]}`, `{...}` past the
    /// depth limit.
    fn dict(&self, fields: &[Field], depth: usize) -> String {
        let (max_depth, max_properties, _) = self.limits();
        if depth >= max_depth {
            return format!("{{{ABBREVIATED}}}");
        }
        let kept = kept_fields(fields, max_properties);
        let mut parts: Vec<String> = kept
            .iter()
            .map(|field| {
                format!(
                    "{}: {}",
                    python_string(&field.key),
                    self.field_type(field, depth + 1)
                )
            })
            .collect();
        if kept.len() < fields.len() {
            parts.push(ABBREVIATED.to_owned());
        }
        format!("{{{}}}", parts.join(", "))
    }

    /// The function's parameters, without parentheses: `*, a: int, b: str = ...`.
    pub(super) fn parameters(&self, parameters: &Parameters) -> String {
        match parameters {
            Parameters::Keywords(fields) if fields.is_empty() => String::new(),
            Parameters::Keywords(fields) => {
                let (max_depth, max_properties, _) = self.limits();
                // The keywords are the arguments object's keys: past the depth limit, none shows.
                let kept = if max_depth == 0 {
                    Vec::new()
                } else {
                    kept_fields(fields, max_properties)
                };
                let mut parts: Vec<String> = kept
                    .iter()
                    .map(|field| {
                        let value = self.render(&field.value, 1);
                        if field.required {
                            format!("{}: {value}", field.key)
                        } else {
                            format!("{}: {value} = ...", field.key)
                        }
                    })
                    .collect();
                if kept.len() < fields.len() {
                    parts.push(ABBREVIATED.to_owned());
                }
                format!("*, {}", parts.join(", "))
            }
            Parameters::Unpacked(value) => {
                format!("**arguments: Unpack[{}]", self.render(value, 0))
            }
            Parameters::Anything => "**arguments: Any".to_owned(),
        }
    }

    /// The function's return type.
    pub(super) fn result(&self, lowered: &Lowered) -> String {
        self.render(&lowered.result, 0)
    }

    fn field_type(&self, field: &Field, depth: usize) -> String {
        let value = self.render(&field.value, depth);
        if field.required {
            value
        } else {
            format!("NotRequired[{value}]")
        }
    }

    /// A named type's definition: a `TypedDict` class or an alias.
    pub(super) fn named(&self, named: &NamedType) -> String {
        let mut text = String::new();
        match named {
            NamedType::Alias { name, doc, value } => {
                for line in doc {
                    let _ = writeln!(text, "# {line}");
                }
                let _ = writeln!(text, "{} = {}", self.name(name), self.render(value, 0));
            }
            NamedType::TypedDict { name, doc, fields } => {
                let name = self.name(name);
                if fields.iter().all(|field| is_python_identifier(&field.key)) {
                    let _ = writeln!(text, "class {name}(TypedDict):");
                    text.push_str(&docstring(doc, "    "));
                    for field in fields {
                        let _ = writeln!(text, "    {}: {}", field.key, self.field_type(field, 1));
                        text.push_str(&docstring(&field.doc, "    "));
                    }
                } else {
                    // Keys that are not identifiers need the functional form.
                    for line in doc {
                        let _ = writeln!(text, "# {line}");
                    }
                    let entries: Vec<String> = fields
                        .iter()
                        .map(|field| {
                            format!(
                                "{}: {}",
                                python_string(&field.key),
                                self.field_type(field, 1)
                            )
                        })
                        .collect();
                    let _ = writeln!(
                        text,
                        "{name} = TypedDict({}, {{{}}})",
                        python_string(&name),
                        entries.join(", ")
                    );
                }
            }
        }
        text
    }

    /// `async def tool(...) -> T:` with its docstring, at `indent` levels.
    pub(super) fn function(
        &self,
        lowered: &Lowered,
        name: &str,
        doc: &[String],
        indent: usize,
    ) -> String {
        let pad = "    ".repeat(indent);
        let parameters = self.parameters(&lowered.parameters);
        let mut lines: Vec<String> = doc.to_vec();
        if let Parameters::Keywords(fields) = &lowered.parameters {
            let documented: Vec<&Field> = fields.iter().filter(|f| !f.doc.is_empty()).collect();
            if !documented.is_empty() {
                if !lines.is_empty() {
                    lines.push(String::new());
                }
                lines.push("Args:".to_owned());
                for field in documented {
                    let mut field_lines = field.doc.iter();
                    if let Some(first) = field_lines.next() {
                        lines.push(format!("    {}: {first}", field.key));
                    }
                    lines.extend(field_lines.map(|line| format!("        {line}")));
                }
            }
        }
        let observed = lowered
            .observed_calls
            .map(|calls| format!("  # {}", crate::observed::note(calls)))
            .unwrap_or_default();
        let mut text = format!(
            "{pad}async def {name}({parameters}) -> {}:{observed}\n",
            self.result(lowered)
        );
        let body = docstring(&lines, &format!("{pad}    "));
        if body.is_empty() {
            let _ = writeln!(text, "{pad}    ...");
        } else {
            text.push_str(&body);
        }
        text
    }
}

/// A `"""..."""` docstring at `pad`, or nothing without lines.
pub(super) fn docstring(lines: &[String], pad: &str) -> String {
    // Backslashes and triple quotes would change or end the string.
    let mut lines: Vec<String> = lines
        .iter()
        .map(|line| line.replace('\\', "\\\\").replace("\"\"\"", "\\\"\\\"\\\""))
        .collect();
    // A quote just before the closing quotes would merge with them.
    if let [only] = lines.as_mut_slice()
        && only.ends_with('"')
    {
        only.pop();
        only.push_str("\\\"");
    }
    match lines.as_slice() {
        [] => String::new(),
        [line] => format!("{pad}\"\"\"{line}\"\"\"\n"),
        [first, rest @ ..] => {
            let mut text = format!("{pad}\"\"\"{first}\n");
            for line in rest {
                if line.is_empty() {
                    text.push('\n');
                } else {
                    let _ = writeln!(text, "{pad}{line}");
                }
            }
            let _ = writeln!(text, "{pad}\"\"\"");
            text
        }
    }
}

/// A Python string literal (a JSON string is one).
pub(super) fn python_string(text: &str) -> String {
    Value::String(text.to_owned()).to_string()
}

fn python_literal(value: &Value) -> String {
    match value {
        Value::Bool(true) => "True".to_owned(),
        Value::Bool(false) => "False".to_owned(),
        Value::Null => "None".to_owned(),
        other => other.to_string(),
    }
}

/// The first `max` of `items`, all of them when they are not more.
fn shown<T>(items: &[T], max: usize) -> &[T] {
    if items.len() > max {
        &items[..max.saturating_sub(1)]
    } else {
        items
    }
}

/// At most `max` fields, required ones first (they matter most to a caller), in their order.
fn kept_fields(fields: &[Field], max: usize) -> Vec<&Field> {
    let mut kept: Vec<usize> = (0..fields.len())
        .filter(|&index| fields[index].required)
        .chain((0..fields.len()).filter(|&index| !fields[index].required))
        .take(max)
        .collect();
    kept.sort_unstable();
    kept.iter().map(|&index| &fields[index]).collect()
}
