//! Each JSON Schema feature the declarations cover, compared as whole outputs.

use serde_json::{Value, json};
use toolweave_catalog::ToolDefinition;

use super::{fixture, tool};

/// The declaration of a tool `t` on `fixture` with this input schema.
fn declaration(input: Value) -> String {
    declaration_of(tool("t", input))
}

fn declaration_of(tool: ToolDefinition) -> String {
    let catalog = fixture(vec![tool]);
    catalog.declaration(&catalog.entries()[0])
}

/// The one-line signature of a tool `t` on `fixture` with this input schema.
fn signature(input: Value) -> String {
    let catalog = fixture(vec![tool("t", input)]);
    catalog.signature(&catalog.entries()[0])
}

/// The TypeScript of one property's schema, read back from a one-line signature.
fn type_of(schema: Value) -> String {
    let text = signature(json!({"type": "object", "properties": {"p": schema}, "required": ["p"]}));
    text.strip_prefix("tools.fixture.t(args: { p: ")
        .and_then(|rest| rest.strip_suffix(" }): Promise<unknown>"))
        .unwrap_or(&text)
        .to_owned()
}

#[test]
fn characters_that_do_not_show_are_left_out() {
    // A zero-width space, a right-to-left override and Unicode tag characters (which spell
    // "run" where no one sees it), in the tool's description and in a property's.
    let mut hiding = tool(
        "t",
        json!({
            "type": "object",
            "properties": {"p": {"type": "string", "description": "A path\u{200b}."}},
            "required": ["p"]
        }),
    );
    hiding.description = Some("Reads a file.\u{202e}\u{e0072}\u{e0075}\u{e006e}".to_owned());
    hiding.title = Some("Read\u{2066}er".to_owned());
    let declaration = declaration_of(hiding.clone());
    assert!(
        declaration.contains("/** Reads a file. */"),
        "{declaration}"
    );
    assert!(declaration.contains("A path."), "{declaration}");
    assert!(
        !declaration.contains(['\u{200b}', '\u{202e}', '\u{e0072}', '\\']),
        "{declaration:?}"
    );
    let catalog = super::fixture(vec![hiding]);
    assert_eq!(
        catalog.entries()[0].description.as_deref(),
        Some("Reads a file.")
    );
    assert_eq!(catalog.entries()[0].title.as_deref(), Some("Reader"));
}

#[test]
fn required_and_optional_properties() {
    assert_eq!(
        declaration(json!({
            "type": "object",
            "properties": {"a": {"type": "string"}, "b": {"type": "integer"}},
            "required": ["a", "c"]
        })),
        "declare namespace tools.fixture {\n  function t(args: { a: string; b?: number /* integer */; c: unknown }): Promise<unknown>;\n}\n"
    );
}

#[test]
fn arguments_are_optional_when_nothing_is_required() {
    assert_eq!(
        signature(json!({"type": "object", "properties": {}})),
        "tools.fixture.t(args?: {}): Promise<unknown>"
    );
    assert_eq!(
        signature(json!({})),
        "tools.fixture.t(args?: {}): Promise<unknown>"
    );
    assert_eq!(
        signature(json!({"type": "object", "properties": {"x": {"type": "boolean"}}})),
        "tools.fixture.t(args?: { x?: boolean }): Promise<unknown>"
    );
}

#[test]
fn scalar_types() {
    assert_eq!(type_of(json!({"type": "string"})), "string");
    assert_eq!(type_of(json!({"type": "number"})), "number");
    // TypeScript has no integer type: the comment says what validation holds the value to.
    assert_eq!(type_of(json!({"type": "integer"})), "number /* integer */");
    assert_eq!(
        type_of(json!({"type": "array", "items": {"type": "integer"}})),
        "(number /* integer */)[]"
    );
    // A number may be an integer: `number` says both.
    assert_eq!(type_of(json!({"type": ["integer", "number"]})), "number");
    assert_eq!(
        type_of(json!({"type": ["integer", "string"]})),
        "number /* integer */ | string"
    );
    assert_eq!(type_of(json!({"type": "boolean"})), "boolean");
    assert_eq!(type_of(json!({"type": "null"})), "null");
    assert_eq!(type_of(json!({})), "unknown");
    assert_eq!(type_of(json!(true)), "unknown");
    assert_eq!(type_of(json!(false)), "never");
    assert_eq!(type_of(json!({"type": "mystery"})), "unknown");
    assert_eq!(type_of(json!({"description": "no type"})), "unknown");
}

#[test]
fn arrays_and_tuples() {
    assert_eq!(
        type_of(json!({"type": "array", "items": {"type": "string"}})),
        "string[]"
    );
    assert_eq!(type_of(json!({"type": "array"})), "unknown[]");
    assert_eq!(
        type_of(json!({"type": "array", "items": {"type": ["string", "number"]}})),
        "(string | number)[]"
    );
    assert_eq!(
        type_of(json!({"type": "array", "prefixItems": [{"type": "number"}, {"type": "string"}]})),
        "[number, string]"
    );
    assert_eq!(
        type_of(json!({
            "type": "array",
            "prefixItems": [{"type": "number"}],
            "items": {"type": "boolean"}
        })),
        "[number, ...boolean[]]"
    );
    assert_eq!(
        type_of(json!({
            "type": "array",
            "items": [{"type": "number"}, {"type": "number"}],
            "additionalItems": false
        })),
        "[number, number]"
    );
    assert_eq!(
        type_of(json!({"type": "array", "items": {"type": "array", "items": {"type": "integer"}}})),
        "(number /* integer */)[][]"
    );
}

#[test]
fn enums_and_constants() {
    assert_eq!(
        type_of(json!({"enum": ["a", "b", 3, null, true]})),
        "\"a\" | \"b\" | 3 | null | true"
    );
    assert_eq!(
        type_of(json!({"type": "string", "enum": ["only"]})),
        "\"only\""
    );
    assert_eq!(type_of(json!({"const": "fixed"})), "\"fixed\"");
    assert_eq!(type_of(json!({"const": [1, "two"]})), "[1, \"two\"]");
    assert_eq!(type_of(json!({"const": {"kind": "x"}})), "{ kind: \"x\" }");
    assert_eq!(type_of(json!({"enum": ["quote\"d"]})), "\"quote\\\"d\"");
}

#[test]
fn unions_and_intersections() {
    assert_eq!(
        type_of(json!({"anyOf": [{"type": "string"}, {"type": "number"}]})),
        "string | number"
    );
    assert_eq!(
        type_of(json!({"oneOf": [
            {"type": "object", "properties": {"kind": {"const": "a"}}, "required": ["kind"]},
            {"type": "object", "properties": {"kind": {"const": "b"}, "n": {"type": "number"}}, "required": ["kind", "n"]}
        ]})),
        "{ kind: \"a\" } | { kind: \"b\"; n: number }"
    );
    assert_eq!(
        type_of(json!({"allOf": [
            {"type": "object", "properties": {"a": {"type": "string"}}},
            {"type": "object", "properties": {"b": {"type": "string"}}}
        ]})),
        "{ a?: string } & { b?: string }"
    );
    // `required`-only members constrain the object around them; they add no type.
    assert_eq!(
        type_of(json!({
            "type": "object",
            "properties": {"a": {"type": "string"}, "b": {"type": "string"}},
            "oneOf": [{"required": ["a"]}, {"required": ["b"]}]
        })),
        "{ a?: string; b?: string }"
    );
    assert_eq!(
        type_of(
            json!({"allOf": [{"anyOf": [{"type": "string"}, {"type": "number"}]}, {"type": "object", "properties": {"x": {}}}]})
        ),
        "(string | number) & { x?: unknown }"
    );
    assert_eq!(type_of(json!({"anyOf": []})), "never");
    assert_eq!(
        type_of(json!({"anyOf": [{"type": "string"}, {}]})),
        "unknown"
    );
}

#[test]
fn nullable() {
    assert_eq!(
        type_of(json!({"type": ["string", "null"]})),
        "string | null"
    );
    assert_eq!(
        type_of(json!({"type": "string", "nullable": true})),
        "string | null"
    );
    assert_eq!(
        type_of(json!({"anyOf": [{"type": "integer"}, {"type": "null"}]})),
        "number /* integer */ | null"
    );
    assert_eq!(
        type_of(json!({"type": ["array", "null"], "items": {"type": "string"}})),
        "string[] | null"
    );
}

#[test]
fn maps_and_closed_objects() {
    assert_eq!(
        type_of(json!({"type": "object", "additionalProperties": {"type": "number"}})),
        "Record<string, number>"
    );
    assert_eq!(
        type_of(json!({"type": "object"})),
        "Record<string, unknown>"
    );
    assert_eq!(
        type_of(json!({"type": "object", "additionalProperties": true})),
        "Record<string, unknown>"
    );
    assert_eq!(
        type_of(json!({"type": "object", "additionalProperties": false})),
        "Record<string, never>"
    );
    assert_eq!(
        type_of(
            json!({"type": "object", "properties": {"a": {"type": "string"}}, "additionalProperties": false})
        ),
        "{ a?: string }"
    );
    assert_eq!(
        type_of(
            json!({"type": "object", "properties": {"a": {"type": "string"}}, "additionalProperties": true})
        ),
        "{ a?: string; [key: string]: unknown }"
    );
    assert_eq!(
        type_of(
            json!({"type": "object", "properties": {"a": {"type": "string"}}, "additionalProperties": {"type": "number"}})
        ),
        "{ a?: string } & Record<string, number>"
    );
    assert_eq!(
        type_of(
            json!({"type": "object", "patternProperties": {"^x-": {"type": "string"}, "^n-": {"type": "number"}}})
        ),
        "Record<string, string | number>"
    );
    assert_eq!(
        type_of(
            json!({"type": "array", "items": {"type": "object", "properties": {"a": {"type": "string"}}, "additionalProperties": {"type": "number"}}})
        ),
        "({ a?: string } & Record<string, number>)[]"
    );
}

#[test]
fn property_names_that_are_not_identifiers_are_quoted() {
    assert_eq!(
        signature(json!({
            "type": "object",
            "properties": {"x-api-key": {"type": "string"}, "2d": {"type": "boolean"}, "$ok": {}, "class": {}},
            "required": ["x-api-key"]
        })),
        "tools.fixture.t(args: { \"x-api-key\": string; \"2d\"?: boolean; $ok?: unknown; class?: unknown }): Promise<unknown>"
    );
}

#[test]
fn references_become_named_types() {
    assert_eq!(
        declaration(json!({
            "type": "object",
            "properties": {
                "home": {"$ref": "#/$defs/Address"},
                "work": {"$ref": "#/$defs/Address", "description": "Where they work"},
                "tags": {"type": "array", "items": {"$ref": "#/definitions/Tag"}}
            },
            "required": ["home"],
            "$defs": {
                "Address": {
                    "type": "object",
                    "description": "A postal address",
                    "properties": {"street": {"type": "string"}, "city": {"type": "string"}},
                    "required": ["street", "city"]
                }
            },
            "definitions": {"Tag": {"type": "string", "enum": ["red", "blue"], "title": "Tag"}}
        })),
        r#"declare namespace tools.fixture {
  /** A postal address */
  type Address = { street: string; city: string };
  type Tag = "red" | "blue";
  function t(args: {
    home: Address;
    /** Where they work */
    work?: Address;
    tags?: Tag[];
  }): Promise<unknown>;
}
"#
    );
}

#[test]
fn recursive_references_end_in_names() {
    assert_eq!(
        declaration(json!({
            "type": "object",
            "properties": {"root": {"$ref": "#/$defs/Node"}},
            "required": ["root"],
            "$defs": {
                "Node": {
                    "type": "object",
                    "properties": {
                        "name": {"type": "string"},
                        "children": {"type": "array", "items": {"$ref": "#/$defs/Node"}},
                        "other": {"$ref": "#/$defs/Other"}
                    },
                    "required": ["name"]
                },
                "Other": {"anyOf": [{"$ref": "#/$defs/Node"}, {"type": "null"}]}
            }
        })),
        r#"declare namespace tools.fixture {
  type Node = { name: string; children?: Node[]; other?: Other };
  type Other = Node | null;
  function t(args: { root: Node }): Promise<unknown>;
}
"#
    );
    // A reference to the whole schema names the arguments themselves.
    assert_eq!(
        declaration(json!({
            "type": "object",
            "properties": {"next": {"$ref": "#"}}
        })),
        r#"declare namespace tools.fixture {
  type Args = { next?: Args };
  function t(args?: { next?: Args }): Promise<unknown>;
}
"#
    );
}

#[test]
fn unresolvable_references_are_unknown() {
    assert_eq!(type_of(json!({"$ref": "#/$defs/Missing"})), "unknown");
    assert_eq!(
        type_of(json!({"$ref": "https://example.invalid/schema.json"})),
        "unknown"
    );
    assert_eq!(type_of(json!({"$ref": 7})), "unknown");
}

#[test]
fn names_of_definitions_are_identifiers_and_do_not_shadow() {
    assert_eq!(
        declaration(json!({
            "type": "object",
            "properties": {
                "a": {"$ref": "#/$defs/my-type"},
                "b": {"$ref": "#/$defs/Promise"},
                "c": {"$ref": "#/definitions/my_type"}
            },
            "$defs": {"my-type": {"type": "string"}, "Promise": {"type": "number"}},
            "definitions": {"my_type": {"type": "boolean"}}
        })),
        r#"declare namespace tools.fixture {
  type my_type = string;
  type Promise_ = number;
  type my_type_2 = boolean;
  function t(args?: { a?: my_type; b?: Promise_; c?: my_type_2 }): Promise<unknown>;
}
"#
    );
}

#[test]
fn documentation_becomes_doc_comments() {
    let mut with_docs = tool(
        "t",
        json!({
            "type": "object",
            "properties": {
                "count": {"type": "integer", "description": "How many", "default": 3, "minimum": 1, "maximum": 10},
                "ratio": {"type": "number", "exclusiveMinimum": 0, "exclusiveMaximum": 1},
                "url": {"type": "string", "format": "uri", "pattern": "^https://"},
                "code": {"type": "string", "minLength": 2, "maxLength": 8, "description": "Ends a comment: */ here"},
                "items": {"type": "array", "items": {"type": "string"}, "minItems": 1, "maxItems": 5},
                "old": {"type": "string", "deprecated": true, "description": "Use code"},
                "user_name": {"type": "string", "title": "User Name"},
                "label": {"type": "string", "title": "Shown on the badge"},
                "notes": {"type": "string", "description": "First line.\n\nSecond paragraph.\n"}
            }
        }),
    );
    with_docs.description = Some("Does a thing.\n\nIn detail: more.".to_owned());
    assert_eq!(
        declaration_of(with_docs),
        r#"declare namespace tools.fixture {
  /**
   * Does a thing.
   *
   * In detail: more.
   */
  function t(args?: {
    /** How many. Default: 3. Minimum: 1. Maximum: 10. */
    count?: number /* integer */;
    /** Greater than 0. Less than 1. */
    ratio?: number;
    /** Format: uri. Pattern: "^https://". */
    url?: string;
    /** Ends a comment: *\/ here. Min length: 2. Max length: 8. */
    code?: string;
    /** Min items: 1. Max items: 5. */
    items?: string[];
    /** Use code. Deprecated. */
    old?: string;
    user_name?: string;
    /** Shown on the badge */
    label?: string;
    /**
     * First line.
     *
     * Second paragraph.
     */
    notes?: string;
  }): Promise<unknown>;
}
"#
    );
}

#[test]
fn title_documents_a_tool_without_description() {
    let mut titled = tool("t", json!({"type": "object"}));
    titled.title = Some("Titled Tool".to_owned());
    assert_eq!(
        declaration_of(titled),
        "declare namespace tools.fixture {\n  /** Titled Tool */\n  function t(args?: Record<string, unknown>): Promise<unknown>;\n}\n"
    );
}

#[test]
fn output_schema_types_the_result() {
    let mut with_output = tool("t", json!({"type": "object", "properties": {}}));
    with_output.output_schema = Some(super::schema(&json!({
        "type": "object",
        "properties": {"total": {"type": "number", "description": "The sum"}},
        "required": ["total"]
    })));
    assert_eq!(
        declaration_of(with_output),
        r#"declare namespace tools.fixture {
  function t(args?: {}): Promise<{
    /** The sum */
    total: number;
  }>;
}
"#
    );
}

#[test]
fn long_unions_of_objects_spread_out() {
    assert_eq!(
        declaration(json!({
            "type": "object",
            "properties": {"shape": {"oneOf": [
                {"type": "object", "properties": {"kind": {"const": "circle"}, "radius": {"type": "number"}}, "required": ["kind", "radius"]},
                {"type": "object", "properties": {"kind": {"const": "rectangle"}, "width": {"type": "number"}, "height": {"type": "number"}}, "required": ["kind", "width", "height"]}
            ]}},
            "required": ["shape"]
        })),
        r#"declare namespace tools.fixture {
  function t(args: {
    shape: {
      kind: "circle";
      radius: number;
    } | {
      kind: "rectangle";
      width: number;
      height: number;
    };
  }): Promise<unknown>;
}
"#
    );
}

#[test]
fn signatures_stay_short() {
    let properties: serde_json::Map<String, Value> = (0..40)
        .map(|index| {
            (
                format!("property_number_{index}"),
                json!({"type": "string"}),
            )
        })
        .collect();
    let text = signature(json!({
        "type": "object",
        "properties": properties,
        "required": ["property_number_7", "property_number_30"]
    }));
    assert_eq!(
        text,
        "tools.fixture.t(args: { property_number_0?: string; property_number_1?: string; property_number_2?: string; property_number_3?: string; property_number_7: string; property_number_30: string; … }): Promise<unknown>"
    );
    let deep = signature(json!({
        "type": "object",
        "properties": {"a": {"type": "object", "properties": {"b": {"type": "object", "properties": {"c": {"type": "object", "properties": {"d": {"type": "string"}}}}}}}}
    }));
    assert_eq!(
        deep,
        "tools.fixture.t(args?: { a?: { b?: { c?: { … } } } }): Promise<unknown>"
    );
    let many = signature(json!({
        "type": "object",
        "properties": {"e": {"enum": ["a", "b", "c", "d", "e", "f", "g", "h", "i"]}}
    }));
    assert_eq!(
        many,
        "tools.fixture.t(args?: { e?: \"a\" | \"b\" | \"c\" | \"d\" | \"e\" | \"f\" | \"g\" | … }): Promise<unknown>"
    );
}

#[test]
fn hostile_schemas_do_not_break_anything() {
    // Deep nesting is cut off (far below the deepest schema a tool may have).
    let mut deep = json!({"type": "string"});
    for _ in 0..110 {
        deep = json!({"type": "array", "items": deep});
    }
    let text = declaration(json!({"type": "object", "properties": {"deep": deep}}));
    assert!(text.contains("unknown[]"), "{text}");
    assert!(text.len() < 1000, "{text}");

    // A huge enum becomes its base type.
    let members: Vec<Value> = (0..5000)
        .map(|index| json!(format!("value{index}")))
        .collect();
    assert_eq!(type_of(json!({"enum": members})), "string");

    // Wide, repeated references stay bounded.
    let mut definitions = serde_json::Map::new();
    for index in 0..500 {
        definitions.insert(
            format!("D{index}"),
            json!({"anyOf": [{"$ref": format!("#/$defs/D{}", index + 1)}, {"$ref": format!("#/$defs/D{}", index + 2)}]}),
        );
    }
    let text = declaration(
        json!({"type": "object", "properties": {"x": {"$ref": "#/$defs/D0"}}, "$defs": definitions}),
    );
    assert!(text.len() < 20_000, "{}", text.len());

    // Not schemas at all.
    for schema in [
        json!(null),
        json!(42),
        json!("string"),
        json!([1, 2]),
        json!({"properties": 5, "required": "a", "type": 7}),
    ] {
        let text = signature(schema.clone());
        assert!(text.starts_with("tools.fixture.t(args"), "{schema}: {text}");
    }
}

#[test]
fn definitions_shared_by_input_and_output_are_named_once() {
    let definitions = json!({"Item": {"type": "object", "properties": {"id": {"type": "string"}}, "required": ["id"]}});
    let mut same = tool(
        "t",
        json!({"type": "object", "properties": {"item": {"$ref": "#/$defs/Item"}}, "required": ["item"], "$defs": definitions}),
    );
    same.output_schema = Some(super::schema(&json!({
        "type": "object",
        "properties": {"items": {"type": "array", "items": {"$ref": "#/$defs/Item"}}},
        "required": ["items"],
        "$defs": definitions
    })));
    assert_eq!(
        declaration_of(same.clone()),
        r#"declare namespace tools.fixture {
  type Item = { id: string };
  function t(args: { item: Item }): Promise<{ items: Item[] }>;
}
"#
    );
    // Different definitions under one name stay apart.
    let mut different = same;
    different.output_schema = Some(super::schema(&json!({
        "type": "object",
        "properties": {"item": {"$ref": "#/$defs/Item"}},
        "$defs": {"Item": {"type": "number"}}
    })));
    assert_eq!(
        declaration_of(different),
        r#"declare namespace tools.fixture {
  type Item = { id: string };
  type Item_2 = number;
  function t(args: { item: Item }): Promise<{ item?: Item_2 }>;
}
"#
    );
}

/// An object schema nested 90 levels deep (within the 97 an upstream tool definition may have)
/// is declared to the 25 levels the declarations follow, then `unknown`, each level once.
#[test]
fn deep_object_schemas_are_declared_to_twenty_five_levels() {
    // Each level nests two JSON objects; 55 levels stay within what a tool schema may nest.
    let mut schema = json!({"type": "string"});
    for _ in 0..55 {
        schema = json!({"type": "object", "properties": {"inner": schema}, "required": ["inner"]});
    }
    let declared = declaration(schema);
    assert_eq!(declared.matches("inner: ").count(), 25, "{declared}");
    assert!(declared.contains("inner: unknown"), "{declared}");
}
