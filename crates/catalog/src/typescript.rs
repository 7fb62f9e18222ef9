//! TypeScript text from the type representation: one-line signatures, and the multi-line types
//! and doc comments the declarations (`declarations.rs`) are made of.
//!
//! What is rendered here is what a model reads before it writes code, so it favours short,
//! conventional TypeScript: objects stay on one line unless their properties carry docs, and
//! schema facts (defaults, formats, ranges) become short sentences in doc comments.

use std::collections::HashMap;
use std::fmt::Write as _;

use serde_json::Value;

use crate::docs::documentation_lines;
use crate::names::{property_key, quote};
use crate::schema::{Definition, ExtraProperties, ObjectType, Property, ToolTypes, TypeExpr};

/// An inline object longer than this is spread over lines.
const INLINE_WIDTH: usize = 80;
/// An object past the signature's depth limit.
const ABBREVIATED_OBJECT: &str = "{ … }";
/// How a JSON Schema `integer` reads in TypeScript, which has only `number`.
const INTEGER: &str = "number /* integer */";
/// The arguments part of a signature (TypeScript or Python) is abbreviated until it fits this.
pub(crate) const SIGNATURE_ARGUMENTS_WIDTH: usize = 200;
/// The result part of a signature (TypeScript or Python) is abbreviated until it fits this.
pub(crate) const SIGNATURE_RESULT_WIDTH: usize = 100;
/// The renderings a signature's arguments try in turn, each more abbreviated than the one
/// before, until one fits: `(max_depth, max_properties, max_union)`.
pub(crate) const ARGUMENT_ABBREVIATIONS: [(usize, usize, usize); 7] = [
    (3, usize::MAX, 8),
    (2, usize::MAX, 6),
    (1, usize::MAX, 4),
    (1, 12, 4),
    (1, 6, 3),
    (1, 3, 3),
    (0, 0, 2),
];
/// The renderings a signature's result tries in turn: `(max_depth, max_properties)`, unions of
/// at most [`RESULT_MAX_UNION`] members.
const RESULT_ABBREVIATIONS: [(usize, usize); 4] = [(2, usize::MAX), (1, 8), (1, 4), (0, 0)];
/// How many members of a union a signature's result shows.
pub(crate) const RESULT_MAX_UNION: usize = 4;

/// How to render types.
#[derive(Debug, Clone, Copy)]
enum Layout {
    /// Valid TypeScript with doc comments, spread over lines where that reads better.
    Declaration,
    /// One line without docs, shortened with `…` past these limits.
    Signature {
        max_depth: usize,
        max_properties: usize,
        max_union: usize,
    },
}

/// Renders the types of one tool.
pub(crate) struct Renderer<'a> {
    types: &'a ToolTypes,
    /// Definition names as this output spells them (the whole `.d.ts` renames clashing ones).
    renamed: Option<&'a HashMap<String, String>>,
    layout: Layout,
}

impl<'a> Renderer<'a> {
    /// A renderer for declarations (multi-line, with docs).
    pub(crate) fn declaration(
        types: &'a ToolTypes,
        renamed: Option<&'a HashMap<String, String>>,
    ) -> Self {
        Self {
            types,
            renamed,
            layout: Layout::Declaration,
        }
    }

    /// `name(args: {...}): Promise<...>;` with its doc comment, each line after the first
    /// indented by `indent` levels.
    pub(crate) fn method(&self, name: &str, doc: &[String], indent: usize) -> String {
        let pad = "  ".repeat(indent);
        let mut text = doc_comment(doc, &pad);
        text.push_str(&pad);
        text.push_str(name);
        text.push_str(&self.parameters(indent));
        text.push_str(": Promise<");
        text.push_str(&self.result(indent));
        text.push_str(">;");
        if let Some(calls) = self.types.observed_calls {
            let _ = write!(text, " // {}", crate::observed::note(calls));
        }
        text.push('\n');
        text
    }

    /// `type Name = ...;` for one definition, with its doc comment, indented `indent` levels.
    pub(crate) fn definition(&self, definition: &Definition, indent: usize) -> String {
        self.type_alias(definition, indent)
    }

    fn type_alias(&self, definition: &Definition, indent: usize) -> String {
        let pad = "  ".repeat(indent);
        let mut text = doc_comment(&documentation_lines(&definition.doc), &pad);
        let _ = writeln!(
            text,
            "{pad}type {} = {};",
            self.name_of(&definition.name),
            self.render(&definition.value, 0, indent)
        );
        text
    }

    /// `(args: T)`, or `(args?: T)` when nothing is required.
    fn parameters(&self, indent: usize) -> String {
        let optional = if self.types.arguments_optional() {
            "?"
        } else {
            ""
        };
        let arguments = match &self.types.input {
            // `tools.x.y()` sends `{}`, so a tool without inputs reads best as taking `{}`.
            TypeExpr::Unknown => "{}".to_owned(),
            input => self.render(input, 0, indent),
        };
        format!("(args{optional}: {arguments})")
    }

    fn result(&self, indent: usize) -> String {
        match &self.types.output {
            Some(output) => self.render(output, 0, indent),
            None => "unknown".to_owned(),
        }
    }

    fn name_of(&self, name: &str) -> String {
        self.renamed
            .and_then(|renamed| renamed.get(name))
            .cloned()
            .unwrap_or_else(|| name.to_owned())
    }

    /// `value` as TypeScript; `depth` counts enclosing objects, `indent` is the current level.
    fn render(&self, value: &TypeExpr, depth: usize, indent: usize) -> String {
        match value {
            TypeExpr::Unknown => "unknown".to_owned(),
            TypeExpr::Never => "never".to_owned(),
            TypeExpr::Null => "null".to_owned(),
            TypeExpr::Boolean => "boolean".to_owned(),
            TypeExpr::Number => "number".to_owned(),
            // TypeScript has no integer type: the comment says what validation will hold the
            // value to, so a declaration and a refusal of 2.5 agree.
            TypeExpr::Integer => INTEGER.to_owned(),
            TypeExpr::String => "string".to_owned(),
            TypeExpr::Literal(literal) => literal_text(literal),
            TypeExpr::Reference(name) => self.name_of(name),
            TypeExpr::Array(item) => {
                let item_text = self.render(item, depth, indent);
                if needs_parentheses(item) && item_text != ABBREVIATED_OBJECT {
                    format!("({item_text})[]")
                } else {
                    format!("{item_text}[]")
                }
            }
            TypeExpr::Tuple { items, rest } => {
                let mut parts: Vec<String> = items
                    .iter()
                    .map(|item| self.render(item, depth, indent))
                    .collect();
                if let Some(rest) = rest {
                    let rest_text = self.render(rest, depth, indent);
                    parts.push(if needs_parentheses(rest) {
                        format!("...({rest_text})[]")
                    } else {
                        format!("...{rest_text}[]")
                    });
                }
                format!("[{}]", parts.join(", "))
            }
            TypeExpr::Union(members) => {
                let shown = match self.layout {
                    Layout::Signature { max_union, .. } if members.len() > max_union => {
                        &members[..max_union.saturating_sub(1)]
                    }
                    _ => &members[..],
                };
                let mut text = self.union(shown, depth, indent, false);
                if matches!(self.layout, Layout::Declaration)
                    && text.len() > INLINE_WIDTH
                    && !text.contains('\n')
                {
                    // A long line of object alternatives reads better with each spread out.
                    text = self.union(shown, depth, indent, true);
                }
                if shown.len() < members.len() {
                    text.push_str(" | …");
                }
                text
            }
            TypeExpr::Intersection(parts) => parts
                .iter()
                .map(|part| {
                    let text = self.render(part, depth, indent);
                    if matches!(part, TypeExpr::Union(_)) {
                        format!("({text})")
                    } else {
                        text
                    }
                })
                .collect::<Vec<_>>()
                .join(" & "),
            TypeExpr::Object(object) => self.object(object, depth, indent, false),
        }
    }

    /// Union members joined by `|`; `spread` lays out object members over lines.
    fn union(&self, members: &[TypeExpr], depth: usize, indent: usize, spread: bool) -> String {
        let mut parts: Vec<String> = Vec::new();
        // A number may be an integer: `number` says both.
        let any_number = members.contains(&TypeExpr::Number);
        for member in members {
            if any_number && *member == TypeExpr::Integer {
                continue;
            }
            let text = match member {
                TypeExpr::Object(object) => self.object(object, depth, indent, spread),
                other => self.render(other, depth, indent),
            };
            // Say each alternative once. Abbreviated objects stay apart, so the reader still
            // sees how many alternatives there are.
            if text == ABBREVIATED_OBJECT || !parts.contains(&text) {
                parts.push(text);
            }
        }
        parts.join(" | ")
    }

    fn object(&self, object: &ObjectType, depth: usize, indent: usize, spread: bool) -> String {
        let extra = match &object.extra {
            ExtraProperties::Unspecified => None,
            ExtraProperties::Closed => Some(TypeExpr::Never),
            ExtraProperties::Typed(value) => Some((**value).clone()),
        };
        if object.properties.is_empty() {
            return match extra {
                None => "{}".to_owned(),
                Some(value) => format!("Record<string, {}>", self.render(&value, depth, indent)),
            };
        }
        if let Layout::Signature { max_depth, .. } = self.layout
            && depth >= max_depth
        {
            return ABBREVIATED_OBJECT.to_owned();
        }
        // Extra keys: an index signature when it admits the declared values too, else an
        // intersection (an index signature must cover every property's type).
        let (index_signature, record) = match extra {
            None | Some(TypeExpr::Never) => (None, None),
            Some(TypeExpr::Unknown) => (Some("[key: string]: unknown".to_owned()), None),
            Some(value) => (None, Some(self.render(&value, depth, indent))),
        };
        let body = self.object_body(object, index_signature.as_deref(), depth, indent, spread);
        match record {
            Some(value) => format!("{body} & Record<string, {value}>"),
            None => body,
        }
    }

    fn object_body(
        &self,
        object: &ObjectType,
        index_signature: Option<&str>,
        depth: usize,
        indent: usize,
        spread: bool,
    ) -> String {
        let shown: Vec<&Property> = match self.layout {
            Layout::Signature { max_properties, .. }
                if object.properties.len() > max_properties =>
            {
                // Required properties matter most to a caller: keep them first.
                let mut kept: Vec<usize> = (0..object.properties.len())
                    .filter(|&index| object.properties[index].required)
                    .chain((0..object.properties.len()).filter(|&i| !object.properties[i].required))
                    .take(max_properties)
                    .collect();
                kept.sort_unstable();
                kept.iter()
                    .map(|&index| &object.properties[index])
                    .collect()
            }
            _ => object.properties.iter().collect(),
        };
        let truncated = shown.len() < object.properties.len();
        // Each property's type is rendered once, for both layouts: rendering it again for the
        // spread layout would double the work at every level of nesting.
        let members: Vec<String> = shown
            .iter()
            .map(|property| {
                format!(
                    "{}{}: {}",
                    property_key(&property.name),
                    if property.required { "" } else { "?" },
                    self.render(&property.value, depth + 1, indent + 1)
                )
            })
            .collect();
        let inline_members: Vec<&str> = members
            .iter()
            .map(String::as_str)
            .chain(index_signature)
            .chain(truncated.then_some("…"))
            .collect();
        let inline = format!("{{ {} }}", inline_members.join("; "));
        let spread = matches!(self.layout, Layout::Declaration)
            && (spread
                || inline.len() > INLINE_WIDTH
                || inline.contains('\n')
                || shown.iter().any(|property| !property.doc.is_empty()));
        if !spread {
            return inline;
        }
        let pad = "  ".repeat(indent + 1);
        let mut text = String::from("{\n");
        for (property, member) in shown.iter().zip(&members) {
            text.push_str(&doc_comment(&documentation_lines(&property.doc), &pad));
            let _ = writeln!(text, "{pad}{member};");
        }
        if let Some(index_signature) = index_signature {
            let _ = writeln!(text, "{pad}{index_signature};");
        }
        text.push_str(&"  ".repeat(indent));
        text.push('}');
        text
    }
}

/// `tools.server.tool(args: ...): Promise<...>` on one line, abbreviated to a bounded length.
pub(crate) fn signature(types: &ToolTypes, call: &str) -> String {
    let mut arguments = String::new();
    for (max_depth, max_properties, max_union) in ARGUMENT_ABBREVIATIONS {
        let renderer = Renderer {
            types,
            renamed: None,
            layout: Layout::Signature {
                max_depth,
                max_properties,
                max_union,
            },
        };
        arguments = renderer.parameters(0);
        if arguments.chars().count() <= SIGNATURE_ARGUMENTS_WIDTH {
            break;
        }
    }
    let mut result = "unknown".to_owned();
    for (max_depth, max_properties) in RESULT_ABBREVIATIONS {
        let renderer = Renderer {
            types,
            renamed: None,
            layout: Layout::Signature {
                max_depth,
                max_properties,
                max_union: RESULT_MAX_UNION,
            },
        };
        result = renderer.result(0);
        if result.chars().count() <= SIGNATURE_RESULT_WIDTH {
            break;
        }
    }
    let observed = if types.observed_calls.is_some() {
        " /* observed */"
    } else {
        ""
    };
    format!("{call}{arguments}: Promise<{result}>{observed}")
}

/// `/** line */` for one line, else a `/** ... */` block, each line starting with `pad`; empty
/// without lines.
pub(crate) fn doc_comment(lines: &[String], pad: &str) -> String {
    // `*/` inside would end the comment early.
    let lines: Vec<String> = lines
        .iter()
        .map(|line| line.replace("*/", "*\\/"))
        .collect();
    match lines.as_slice() {
        [] => String::new(),
        // One line stays one line however long: a block would only add lines.
        [line] => format!("{pad}/** {line} */\n"),
        lines => {
            let mut text = format!("{pad}/**\n");
            for line in lines {
                if line.is_empty() {
                    let _ = writeln!(text, "{pad} *");
                } else {
                    let _ = writeln!(text, "{pad} * {line}");
                }
            }
            let _ = writeln!(text, "{pad} */");
            text
        }
    }
}

fn literal_text(value: &Value) -> String {
    match value {
        Value::String(text) => quote(text),
        other => other.to_string(),
    }
}

fn needs_parentheses(value: &TypeExpr) -> bool {
    matches!(
        value,
        TypeExpr::Union(_) | TypeExpr::Intersection(_) | TypeExpr::Integer
    ) || matches!(value, TypeExpr::Object(object)
            if !object.properties.is_empty()
                && matches!(&object.extra, ExtraProperties::Typed(extra) if **extra != TypeExpr::Unknown))
}
