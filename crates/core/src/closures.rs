//! Functions of the host program as tools: [`ClosureProvider`].
//!
//! ```
//! use serde_json::{Value, json};
//! use toolweave_core::ClosureProvider;
//!
//! let math = ClosureProvider::new("math").tool(
//!     "add",
//!     "Adds two numbers.",
//!     json!({
//!         "type": "object",
//!         "properties": {"a": {"type": "number"}, "b": {"type": "number"}},
//!         "required": ["a", "b"]
//!     }),
//!     |arguments: Value, _context| async move {
//!         let sum = arguments["a"].as_f64().unwrap_or(0.0) + arguments["b"].as_f64().unwrap_or(0.0);
//!         Ok::<_, String>(json!(sum))
//!     },
//! );
//! ```

use std::future::Future;
use std::sync::Arc;

use futures::future::BoxFuture;
use rmcp::model::{CallToolResult, ContentBlock, JsonObject, Tool};
use serde_json::{Map, Value};

use toolweave_catalog::ToolDefinition;

use crate::error::ProviderError;
use crate::provider::{CallContext, ProviderState, ToolProvider};

/// What a closure tool's function fails with: any error, or a message (`String`, `&str`).
pub type ToolError = Box<dyn std::error::Error + Send + Sync>;

/// One closure tool's function, boxed.
type Function =
    Arc<dyn Fn(Value, CallContext) -> BoxFuture<'static, Result<Value, ToolError>> + Send + Sync>;

/// Tools made of async functions of the host program, under one namespace.
///
/// Each function takes the call's arguments (a JSON object that matches the tool's
/// `inputSchema`: the gateway checked it) and the [`CallContext`], and returns the value guest
/// code's promise resolves to, or an error whose text the guest's promise rejects with. A
/// function still running when the execution stops waiting is dropped.
pub struct ClosureProvider {
    namespace: String,
    /// What the provider says about using its tools.
    instructions: Option<String>,
    tools: Vec<(ToolDefinition, Function)>,
    /// Definitions that could not be used, each naming the tool and what to change: the provider
    /// is then [`Failed`](ProviderState::Failed) with them as its reason.
    problems: Vec<String>,
}

impl ClosureProvider {
    /// A provider with no tools yet, under `namespace`.
    pub fn new(namespace: impl Into<String>) -> Self {
        Self {
            namespace: namespace.into(),
            instructions: None,
            tools: Vec::new(),
            problems: Vec::new(),
        }
    }

    /// Adds tool `name`, described by `description`, taking arguments as `input_schema` (a JSON
    /// Schema object) describes, answered by `function`.
    #[must_use]
    pub fn tool<F, Fut, E>(
        self,
        name: &str,
        description: &str,
        input_schema: Value,
        function: F,
    ) -> Self
    where
        F: Fn(Value, CallContext) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<Value, E>> + Send + 'static,
        E: Into<ToolError>,
    {
        let schema = match input_schema {
            Value::Object(schema) => schema,
            other => {
                let problem = format!(
                    "tool \"{name}\" has an inputSchema that is not a JSON object ({other}); give \
                     it one such as {{\"type\": \"object\", \"properties\": {{}}}}"
                );
                return self.with_problem(problem);
            }
        };
        let tool = Tool::new(name.to_owned(), description.to_owned(), Arc::new(schema));
        self.with_tool(tool, function)
    }

    /// Adds `tool` (a full MCP tool definition: title, output schema, annotations such as
    /// `destructiveHint`), answered by `function`.
    #[must_use]
    pub fn with_tool<F, Fut, E>(mut self, tool: Tool, function: F) -> Self
    where
        F: Fn(Value, CallContext) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<Value, E>> + Send + 'static,
        E: Into<ToolError>,
    {
        if let Some(problem) = definition_problem(&tool) {
            return self.with_problem(problem);
        }
        if self.tools.iter().any(|(known, _)| known.name == tool.name) {
            let problem = format!("tool \"{}\" is defined twice", tool.name);
            return self.with_problem(problem);
        }
        let name = tool.name.clone();
        let tool = match toolweave_upstream::definition(&self.namespace, tool) {
            Ok(tool) => tool,
            Err(error) => {
                return self.with_problem(format!("tool \"{name}\" cannot be kept: {error}"));
            }
        };
        let function: Function = Arc::new(move |arguments, context| {
            let answer = function(arguments, context);
            Box::pin(async move { answer.await.map_err(Into::into) })
        });
        self.tools.push((tool, function));
        self
    }

    /// What a model reads about using these tools as a whole, before their declarations, when
    /// it describes the namespace (as an MCP server's `instructions`).
    #[must_use]
    pub fn instructions(mut self, instructions: impl Into<String>) -> Self {
        self.instructions = Some(instructions.into());
        self
    }

    fn with_problem(mut self, problem: String) -> Self {
        self.problems.push(problem);
        self
    }
}

/// Why `tool` cannot be offered, if it cannot: a schema that is not valid JSON Schema would
/// check nothing, and nothing else checks a closure's arguments.
fn definition_problem(tool: &Tool) -> Option<String> {
    let schemas = [
        ("inputSchema", Some(&tool.input_schema)),
        ("outputSchema", tool.output_schema.as_ref()),
    ];
    for (which, schema) in schemas {
        let Some(schema) = schema else { continue };
        let schema = Value::Object(JsonObject::clone(schema));
        if let Err(error) = jsonschema::validator_for(&schema) {
            return Some(format!(
                "tool \"{}\" has an {which} that is not valid JSON Schema: {error}",
                tool.name
            ));
        }
    }
    None
}

impl ToolProvider for ClosureProvider {
    fn namespace(&self) -> &str {
        &self.namespace
    }

    fn state(&self) -> ProviderState {
        if self.problems.is_empty() {
            ProviderState::Ready
        } else {
            ProviderState::Failed {
                reason: self.reason(),
            }
        }
    }

    fn instructions(&self) -> Option<String> {
        self.instructions.clone()
    }

    fn tools(&self) -> BoxFuture<'_, Result<Vec<ToolDefinition>, ProviderError>> {
        let tools = if self.problems.is_empty() {
            Ok(self.tools.iter().map(|(tool, _)| tool.clone()).collect())
        } else {
            Err(ProviderError::Definition {
                reason: self.reason(),
            })
        };
        Box::pin(std::future::ready(tools))
    }

    fn call(
        &self,
        tool: &str,
        arguments: Map<String, Value>,
        context: CallContext,
    ) -> BoxFuture<'_, Result<CallToolResult, ProviderError>> {
        let function = self
            .tools
            .iter()
            .find(|(known, _)| known.name == tool)
            .map(|(_, function)| function.clone());
        let tool = tool.to_owned();
        Box::pin(async move {
            let Some(function) = function else {
                return Err(ProviderError::UnknownTool {
                    namespace: self.namespace.clone(),
                    tool,
                });
            };
            let cancel = context.cancel.clone();
            let answer = tokio::select! {
                biased;
                () = cancel.cancelled() => return Err(ProviderError::Cancelled),
                answer = function(Value::Object(arguments), context) => answer,
            };
            Ok(match answer {
                Ok(value) => result_of(value),
                Err(error) => CallToolResult::error(vec![ContentBlock::text(error.to_string())]),
            })
        })
    }
}

impl ClosureProvider {
    /// Every problem of the definitions, in one sentence each.
    fn reason(&self) -> String {
        format!(
            "the tools of \"{}\" cannot be offered: {}",
            self.namespace,
            self.problems.join("; ")
        )
    }
}

/// A function's value as a tool result: the value itself as structured content (which is what
/// guest code receives), with no copy of it as text.
fn result_of(value: Value) -> CallToolResult {
    let mut result = CallToolResult::success(Vec::new());
    result.structured_content = Some(value);
    result
}
