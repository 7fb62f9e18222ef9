//! Python stubs from the same schema walk.

use serde_json::{Value, json};
use toolweave_catalog::{Catalog, ToolDefinition};

use super::{fixture, saved_tools, tool};

#[test]
fn memory_and_everything_stubs() {
    let servers: Vec<String> = ["everything", "memory"]
        .iter()
        .map(|name| (*name).to_owned())
        .collect();
    let tools = servers
        .iter()
        .flat_map(|server| saved_tools(server, server))
        .collect();
    insta::assert_snapshot!(Catalog::new(&servers, tools).python_stubs());
}

#[test]
fn one_stub_covers_the_schema_features() {
    let mut everything = tool(
        "do-it",
        json!({
            "type": "object",
            "properties": {
                "count": {"type": "integer", "description": "How many", "default": 3},
                "mode": {"enum": ["fast", "slow", null]},
                "pair": {"type": "array", "prefixItems": [{"type": "number"}, {"type": "string"}]},
                "shape": {"oneOf": [
                    {"type": "object", "properties": {"radius": {"type": "number"}}, "required": ["radius"]},
                    {"type": "object", "properties": {"side": {"type": "number"}}}
                ]},
                "labels": {"type": "object", "additionalProperties": {"type": "string"}},
                "node": {"$ref": "#/$defs/Node"},
                "headers": {"type": "object", "properties": {"x-api-key": {"type": "string"}, "from": {"type": "string"}}}
            },
            "required": ["count"],
            "$defs": {"Node": {"type": "object", "description": "A tree node", "properties": {"children": {"type": "array", "items": {"$ref": "#/$defs/Node"}}}}}
        }),
    );
    everything.description = Some("Does it.\nCarefully \"\"\" quoted.".to_owned());
    let catalog = fixture(vec![everything]);
    insta::assert_snapshot!(catalog.python_stub(&catalog.entries()[0]));
}

/// The one-line Python signature of one tool on `fixture`.
fn python_signature_of(tool: ToolDefinition) -> String {
    let catalog = fixture(vec![tool]);
    catalog.python_signature(&catalog.entries()[0])
}

/// The one-line Python signature of a tool `t` with this input schema.
fn python_signature(input: Value) -> String {
    python_signature_of(tool("t", input))
}

/// The one-line Python signature of a tool `t` with one required argument and this output schema.
fn python_result(output: Value) -> String {
    let mut with_output = tool(
        "t",
        json!({"type": "object", "properties": {"q": {"type": "string"}}, "required": ["q"]}),
    );
    with_output.output_schema = Some(super::schema(&output));
    python_signature_of(with_output)
}

#[test]
fn python_signatures_take_keywords() {
    assert_eq!(
        python_signature_of(tool(
            "add",
            json!({
                "type": "object",
                "properties": {"a": {"type": "number"}, "b": {"type": "integer", "default": 1}},
                "required": ["a"]
            })
        )),
        "tools.fixture.add(*, a: float, b: int = ...) -> Any"
    );
    let mut dashed = tool("get-sum", json!({"type": "object", "properties": {}}));
    dashed.server = "my-server".to_owned();
    let catalog = Catalog::new(&["my-server".to_owned()], vec![dashed]);
    assert_eq!(
        catalog.python_signature(&catalog.entries()[0]),
        "tools.my_server.get_sum() -> Any"
    );
    // A schema that says nothing about keys takes any keywords, as the stub says.
    assert_eq!(
        python_signature(json!({"type": "object"})),
        "tools.fixture.t(**arguments: Any) -> Any"
    );
    assert_eq!(
        python_signature(json!({})),
        "tools.fixture.t(**arguments: Any) -> Any"
    );
}

#[test]
fn python_signatures_write_object_types_in_place() {
    assert_eq!(
        python_signature(json!({
            "type": "object",
            "properties": {
                "mode": {"enum": ["fast", "slow", null]},
                "flag": {"const": true},
                "items": {"type": "array", "items": {
                    "type": "object",
                    "properties": {"id": {"type": "string"}, "note": {"type": "string"}},
                    "required": ["id"]
                }},
                "labels": {"type": "object", "additionalProperties": {"type": "string"}},
                "pair": {"type": "array", "prefixItems": [{"type": "number"}, {"type": "string"}]}
            },
            "required": ["items"]
        })),
        r#"tools.fixture.t(*, mode: Literal["fast", "slow"] | None = ..., flag: Literal[True] = ..., items: list[{"id": str, "note": NotRequired[str]}], labels: dict[str, str] = ..., pair: tuple[float, str] = ...) -> Any"#
    );
    assert_eq!(
        python_result(json!({
            "type": "object",
            "properties": {
                "city": {"type": "string"},
                "shape": {"oneOf": [
                    {"type": "object", "properties": {"r": {"type": "number"}}, "required": ["r"]},
                    {"type": "string"}
                ]}
            },
            "required": ["city"]
        })),
        r#"tools.fixture.t(*, q: str) -> {"city": str, "shape": NotRequired[{"r": float} | str]}"#
    );
    assert_eq!(
        python_result(json!({"type": "object"})),
        "tools.fixture.t(*, q: str) -> dict[str, Any]"
    );
    assert_eq!(
        python_result(json!({"type": "array", "items": {"type": "string"}})),
        "tools.fixture.t(*, q: str) -> list[str]"
    );
}

#[test]
fn python_signatures_name_definitions_and_unpack_other_keys() {
    // Definitions may be recursive: they keep their names, as in the TypeScript signature.
    assert_eq!(
        python_signature(json!({
            "type": "object",
            "properties": {"node": {"$ref": "#/$defs/Node"}},
            "$defs": {"Node": {"type": "object", "properties": {"children": {"type": "array", "items": {"$ref": "#/$defs/Node"}}}}}
        })),
        "tools.fixture.t(*, node: Node = ...) -> Any"
    );
    // Keys that cannot be keywords (not identifiers, or reserved words).
    assert_eq!(
        python_signature(json!({
            "type": "object",
            "properties": {"x-api-key": {"type": "string"}, "from": {"type": "integer"}},
            "required": ["x-api-key"]
        })),
        r#"tools.fixture.t(**arguments: Unpack[{"x-api-key": str, "from": NotRequired[int]}]) -> Any"#
    );
}

#[test]
fn python_signatures_stay_short() {
    let properties: serde_json::Map<String, Value> = (0..40)
        .map(|index| {
            (
                format!("property_number_{index}"),
                json!({"type": "string"}),
            )
        })
        .collect();
    assert_eq!(
        python_signature(json!({
            "type": "object",
            "properties": properties,
            "required": ["property_number_7", "property_number_30"]
        })),
        "tools.fixture.t(*, property_number_0: str = ..., property_number_1: str = ..., property_number_2: str = ..., property_number_3: str = ..., property_number_7: str, property_number_30: str, ...) -> Any"
    );
    assert_eq!(
        python_signature(json!({
            "type": "object",
            "properties": {"a": {"type": "object", "properties": {"b": {"type": "object", "properties": {"c": {"type": "object", "properties": {"d": {"type": "string"}}}}}}}}
        })),
        r#"tools.fixture.t(*, a: {"b": NotRequired[{"c": NotRequired[{...}]}]} = ...) -> Any"#
    );
    assert_eq!(
        python_signature(json!({
            "type": "object",
            "properties": {"e": {"enum": ["a", "b", "c", "d", "e", "f", "g", "h", "i"]}}
        })),
        r#"tools.fixture.t(*, e: Literal["a", "b", "c", "d", "e", "f", "g", ...] = ...) -> Any"#
    );
    // A long result keeps its required keys first, and as many more as fit.
    assert_eq!(
        python_result(json!({
            "type": "object",
            "properties": {
                "city": {"type": "string"},
                "days": {"type": ["integer", "null"]},
                "tags": {"type": "object", "additionalProperties": {"type": "string"}},
                "pair": {"type": "array", "prefixItems": [{"type": "number"}, {"type": "string"}]},
                "shape": {"type": "object", "properties": {"r": {"type": "number"}}}
            },
            "required": ["city"]
        })),
        r#"tools.fixture.t(*, q: str) -> {"city": str, "days": NotRequired[int | None], ...}"#
    );
}

#[test]
fn python_signatures_of_hostile_schemas_are_bounded() {
    // Far deeper than the schema walk goes (each level nests two JSON objects; a tool schema
    // nests at most MAX_SCHEMA_DEPTH).
    let mut deep = json!({"type": "string"});
    for _ in 0..55 {
        deep = json!({"type": "object", "properties": {"x": deep, "y": {"enum": [1, 2, 3, 4, 5, 6, 7, 8]}}, "required": ["x"]});
    }
    let wide: serde_json::Map<String, Value> = (0..5000)
        .map(|index| {
            (
                format!("k{index}"),
                json!({"anyOf": [{"type": "string"}, {"type": "object", "properties": {"z": {}}}]}),
            )
        })
        .collect();
    for schema in [
        deep,
        json!({"type": "object", "properties": wide}),
        json!(null),
        json!(42),
        json!({"properties": 5, "required": "a", "type": 7}),
    ] {
        let mut hostile = tool("t", schema.clone());
        hostile.output_schema = Some(super::schema(&schema));
        let text = python_signature_of(hostile);
        assert!(text.starts_with("tools.fixture.t("), "{text}");
        assert!(text.chars().count() <= 350, "{}: {text}", text.len());
    }
}
