//! Python text from lowered types.

use std::collections::HashMap;
use std::fmt::Write as _;

use serde_json::Value;

use super::lower::{Field, Lowered, NamedType, Parameters, PythonType, is_python_identifier};

/// Renders lowered types; `renamed` maps a tool's local names to the names in this output.
pub(super) struct Writer<'a> {
    pub(super) renamed: &'a HashMap<String, String>,
}

impl Writer<'_> {
    /// How `name` is spelled in this output.
    pub(super) fn name(&self, name: &str) -> String {
        self.renamed
            .get(name)
            .cloned()
            .unwrap_or_else(|| name.to_owned())
    }

    fn render(&self, value: &PythonType) -> String {
        match value {
            PythonType::Any => "Any".to_owned(),
            PythonType::Never => "Never".to_owned(),
            PythonType::None => "None".to_owned(),
            PythonType::Bool => "bool".to_owned(),
            PythonType::Float => "float".to_owned(),
            PythonType::Int => "int".to_owned(),
            PythonType::Str => "str".to_owned(),
            PythonType::Literal(values) => format!(
                "Literal[{}]",
                values
                    .iter()
                    .map(python_literal)
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
            PythonType::List(item) => format!("list[{}]", self.render(item)),
            PythonType::Tuple(items, rest) => {
                let mut parts: Vec<String> = items.iter().map(|item| self.render(item)).collect();
                if let Some(rest) = rest {
                    parts.push(format!("*tuple[{}, ...]", self.render(rest)));
                }
                if parts.is_empty() {
                    "tuple[()]".to_owned()
                } else {
                    format!("tuple[{}]", parts.join(", "))
                }
            }
            PythonType::Dict(value) => format!("dict[str, {}]", self.render(value)),
            PythonType::Union(members) => members
                .iter()
                .map(|member| self.render(member))
                .collect::<Vec<_>>()
                .join(" | "),
            PythonType::Named(name) => self.name(name),
        }
    }

    fn field_type(&self, field: &Field) -> String {
        let value = self.render(&field.value);
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
                let _ = writeln!(text, "{} = {}", self.name(name), self.render(value));
            }
            NamedType::TypedDict { name, doc, fields } => {
                let name = self.name(name);
                if fields.iter().all(|field| is_python_identifier(&field.key)) {
                    let _ = writeln!(text, "class {name}(TypedDict):");
                    text.push_str(&docstring(doc, "    "));
                    for field in fields {
                        let _ = writeln!(text, "    {}: {}", field.key, self.field_type(field));
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
                            format!("{}: {}", python_string(&field.key), self.field_type(field))
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
        let parameters = match &lowered.parameters {
            Parameters::Keywords(fields) if fields.is_empty() => String::new(),
            Parameters::Keywords(fields) => {
                let parts: Vec<String> = fields
                    .iter()
                    .map(|field| {
                        let value = self.render(&field.value);
                        if field.required {
                            format!("{}: {value}", field.key)
                        } else {
                            format!("{}: {value} = ...", field.key)
                        }
                    })
                    .collect();
                format!("*, {}", parts.join(", "))
            }
            Parameters::Unpacked(value) => format!("**arguments: Unpack[{}]", self.render(value)),
            Parameters::Anything => "**arguments: Any".to_owned(),
        };
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
        let mut text = format!(
            "{pad}async def {name}({parameters}) -> {}:\n",
            self.render(&lowered.result)
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
