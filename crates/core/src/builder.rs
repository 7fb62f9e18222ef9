//! [`GatewayBuilder`]: the one way a gateway is made, by the `toolweave` binary and by programs
//! that embed it.

use std::sync::Arc;

use toolweave_config::{Config, Limits, Policy};
use toolweave_process::WorkerCommand;
use toolweave_upstream::{ClientSessions, UpstreamManager};

use crate::approval::Approver;
use crate::audit::AuditLog;
use crate::engines::{Engines, Isolation};
use crate::error::BuildError;
use crate::executor::Executor;
use crate::gateway::{Gateway, Parts};
use crate::mcp::McpProvider;
use crate::provider::ToolProvider;
use crate::runner::{RemoteRunner, Runner};

/// What a gateway is built from. Made by [`Gateway::builder`]; every part has a default: no
/// tools, [`Limits::default`], an open policy, engine threads of this process, nobody to approve
/// destructive calls, no audit log.
///
/// ```no_run
/// # async fn example() -> Result<(), toolweave_core::BuildError> {
/// use serde_json::json;
/// use toolweave_core::{ClosureProvider, ExecuteOptions, Gateway, Language};
///
/// let gateway = Gateway::builder()
///     .provider(ClosureProvider::new("clock").tool(
///         "now",
///         "The time, in seconds since 1970.",
///         json!({"type": "object"}),
///         |_arguments, _context| async { Ok::<_, String>(json!(1_700_000_000)) },
///     ))
///     .build()?;
/// let report = gateway
///     .execute("await tools.clock.now()", Language::TypeScript, ExecuteOptions::default())
///     .await;
/// # Ok(())
/// # }
/// ```
#[derive(Default)]
pub struct GatewayBuilder {
    providers: Vec<Arc<dyn ToolProvider>>,
    mcp: Option<Mcp>,
    client_sessions: ClientSessions,
    limits: Limits,
    policy: Policy,
    isolation: Option<Isolation>,
    fresh_workers: bool,
    worker: Option<WorkerCommand>,
    executor: Option<ExecutorChoice>,
    approver: Option<Arc<dyn Approver>>,
    audit: Option<AuditLog>,
    pins: Option<(std::path::PathBuf, toolweave_config::CheckDefinitions)>,
    returns: Option<std::path::PathBuf>,
    llm: crate::llm::LlmOptions,
    redaction: Option<crate::redaction::Redaction>,
}

/// Where the builder's gateway runs guest code, when not on its own engines.
enum ExecutorChoice {
    /// An executor made already.
    Made(Arc<dyn Executor>),
    /// A remote runner, made with the builder's limits.
    Runner(Runner),
}

impl Gateway {
    /// A builder: providers, MCP servers, limits, policy, isolation, approver and audit.
    pub fn builder() -> GatewayBuilder {
        GatewayBuilder::default()
    }
}

/// Where the MCP servers come from.
enum Mcp {
    /// Servers to start when the gateway is built.
    Config(Config),
    /// A manager already started.
    Started(Arc<UpstreamManager>),
}

impl GatewayBuilder {
    /// Adds `provider`: its tools are called as `tools.<namespace>.<tool>`. Providers keep the
    /// order they are added in, after the MCP servers.
    #[must_use]
    pub fn provider(self, provider: impl ToolProvider) -> Self {
        self.shared_provider(Arc::new(provider))
    }

    /// Adds a provider the caller keeps a handle on.
    #[must_use]
    pub fn shared_provider(mut self, provider: Arc<dyn ToolProvider>) -> Self {
        self.providers.push(provider);
        self
    }

    /// Starts the MCP servers of `config` when the gateway is built (in the background: it does
    /// not wait for them), each a provider under its configured name.
    #[must_use]
    pub fn mcp_servers(mut self, config: &Config) -> Self {
        self.mcp = Some(Mcp::Config(config.clone()));
        self
    }

    /// Takes the MCP servers of a manager already started, instead of [`mcp_servers`](Self::mcp_servers).
    #[must_use]
    pub fn upstream(mut self, upstream: Arc<UpstreamManager>) -> Self {
        self.mcp = Some(Mcp::Started(upstream));
        self
    }

    /// Whom the gateway serves, which decides what MCP servers are told it supports
    /// (elicitation, sampling, roots). Default: no MCP client.
    #[must_use]
    pub fn client_sessions(mut self, client_sessions: ClientSessions) -> Self {
        self.client_sessions = client_sessions;
        self
    }

    /// The limits every execution runs under.
    #[must_use]
    pub fn limits(mut self, limits: Limits) -> Self {
        self.limits = limits;
        self
    }

    /// Which tools guest code may see and call, and which destructive ones are pre-approved.
    #[must_use]
    pub fn policy(mut self, policy: Policy) -> Self {
        self.policy = policy;
        self
    }

    /// Pins each tool's definition in the file at `path` the first time the gateway sees it
    /// (`toolweave_config::default_pins_path` is the user's own), and holds a tool whose
    /// definition then differs from its pin out of the catalog until it is accepted (`toolweave
    /// trust`). A definition seen for the first time is read for findings (instructions aimed at
    /// the model, directions to move data out, hidden text) and gets what `check` says.
    /// Default: definitions are taken as providers list them.
    #[must_use]
    pub fn pins(
        mut self,
        path: std::path::PathBuf,
        check: toolweave_config::CheckDefinitions,
    ) -> Self {
        self.pins = Some((path, check));
        self
    }

    /// Learns what tools without an output schema return: the shape (types and key names,
    /// never values) of each successful call's value is kept in the folder at `path`
    /// (`toolweave_config::default_observed_folder` is the user's own) and declared as the
    /// tool's result type, marked as observed. Default: results are not observed.
    #[must_use]
    pub fn observe_returns(mut self, path: std::path::PathBuf) -> Self {
        self.returns = Some(path);
        self
    }

    /// Where JavaScript and TypeScript run. [`Isolation::Worker`] needs [`worker`](Self::worker).
    #[must_use]
    pub fn isolation(mut self, isolation: Isolation) -> Self {
        self.isolation = Some(isolation);
        self
    }

    /// Every execution in a fresh worker process: none is kept for its session's next
    /// execution (by default a session's executions run one after another in workers of its
    /// own, each in a fresh engine runtime). About 1.5 ms of CPU more per execution.
    #[must_use]
    pub fn fresh_workers(mut self, fresh: bool) -> Self {
        self.fresh_workers = fresh;
        self
    }

    /// How to start worker processes: normally [`worker_command`](crate::worker_command), this
    /// program re-entered, whose `main` begins with [`run_worker_if_asked`](crate::run_worker_if_asked).
    /// With it Python runs in workers (where its memory limit holds) whatever the isolation.
    #[must_use]
    pub fn worker(mut self, command: WorkerCommand) -> Self {
        self.worker = Some(command);
        self
    }

    /// Where guest code runs, made already, instead of [`isolation`](Self::isolation) and
    /// [`worker`](Self::worker): [`Engines`], a [`RemoteRunner`], or an executor of one's own.
    #[must_use]
    pub fn executor(mut self, executor: Arc<dyn Executor>) -> Self {
        self.executor = Some(ExecutorChoice::Made(executor));
        self
    }

    /// Guest code runs on a `toolweave runner` reached through `runner` (a command, or TCP with
    /// a token), under this builder's limits; the gateway keeps the tools and decides the
    /// limits. Instead of [`isolation`](Self::isolation).
    #[must_use]
    pub fn runner(mut self, runner: Runner) -> Self {
        self.executor = Some(ExecutorChoice::Runner(runner));
        self
    }

    /// Who approves calls to destructive tools when an execution names nobody
    /// ([`ExecuteOptions::approver`](crate::ExecuteOptions::approver)).
    #[must_use]
    pub fn approver(mut self, approver: Arc<dyn Approver>) -> Self {
        self.approver = Some(approver);
        self
    }

    /// Records every execution in `audit`.
    #[must_use]
    pub fn audit(mut self, audit: AuditLog) -> Self {
        self.audit = Some(audit);
        self
    }

    /// How `llm.ask` and `llm.think` are answered: each execution's budgets, the system prompts
    /// allowed, and a provider for clients that cannot sample. Default:
    /// [`LlmOptions::default`](crate::LlmOptions), sampling only.
    #[must_use]
    pub fn llm(mut self, llm: crate::llm::LlmOptions) -> Self {
        self.llm = llm;
        self
    }

    /// Replaces what `detectors` find by tokens in everything the model reads, and tokens in
    /// tools' arguments by their values (none: nothing is redacted, the default).
    #[must_use]
    pub fn redact(mut self, detectors: &[toolweave_config::Detector]) -> Self {
        self.redaction = crate::redaction::Redaction::new(detectors);
        self
    }

    /// The gateway. Call it within a tokio runtime: worker processes and MCP servers start in
    /// the background at once, and the catalog follows the providers from then on.
    ///
    /// # Errors
    ///
    /// Two providers with one namespace, an empty namespace, or worker isolation without a
    /// worker command.
    pub fn build(self) -> Result<Arc<Gateway>, BuildError> {
        check_namespaces(&self.providers, self.mcp.as_ref())?;
        // Engines first: their first workers are on the path of the first execution, and the
        // MCP servers start in the background either way.
        let executor: Arc<dyn Executor> = match self.executor {
            Some(ExecutorChoice::Made(executor)) => executor,
            Some(ExecutorChoice::Runner(runner)) => {
                Arc::new(RemoteRunner::new(runner, &self.limits))
            }
            None => {
                let isolation = self.isolation.unwrap_or(Isolation::InProcess);
                if isolation == Isolation::Worker && self.worker.is_none() {
                    return Err(BuildError::NoWorkerCommand);
                }
                Arc::new(Engines::new(
                    isolation,
                    self.worker,
                    &self.limits,
                    self.fresh_workers,
                ))
            }
        };
        let upstream = match self.mcp {
            Some(Mcp::Started(upstream)) => upstream,
            Some(Mcp::Config(config)) => start_servers(&config, &self.limits, self.client_sessions),
            None => start_servers(&Config::default(), &self.limits, self.client_sessions),
        };
        let mut providers: Vec<Arc<dyn ToolProvider>> = McpProvider::all(&upstream)
            .into_iter()
            .map(|provider| Arc::new(provider) as Arc<dyn ToolProvider>)
            .collect();
        providers.extend(self.providers);
        Ok(Gateway::assemble(Parts {
            upstream,
            providers,
            limits: self.limits,
            policy: self.policy,
            pins: self
                .pins
                .map(|(path, check)| crate::pins::ToolPins::new(path, check)),
            returns: self
                .returns
                .map(|path| Arc::new(crate::returns::ObservedReturns::new(path))),
            audit: self.audit,
            llm: self.llm,
            executor,
            approver: self.approver,
            redaction: self.redaction,
        }))
    }
}

fn start_servers(
    config: &Config,
    limits: &Limits,
    client_sessions: ClientSessions,
) -> Arc<UpstreamManager> {
    UpstreamManager::start(
        config,
        toolweave_upstream::Options {
            startup_timeout: limits.startup_timeout,
            call_timeout: limits.tool_call_timeout,
            client_sessions,
        },
    )
}

/// Every namespace given once and not empty, MCP servers' included.
fn check_namespaces(
    providers: &[Arc<dyn ToolProvider>],
    mcp: Option<&Mcp>,
) -> Result<(), BuildError> {
    let mut namespaces: Vec<String> = match mcp {
        Some(Mcp::Config(config)) => config
            .servers
            .iter()
            .map(|server| server.name.clone())
            .collect(),
        Some(Mcp::Started(upstream)) => upstream.server_names(),
        None => Vec::new(),
    };
    for provider in providers {
        let namespace = provider.namespace();
        if namespace.trim().is_empty() {
            return Err(BuildError::EmptyNamespace);
        }
        if namespaces.iter().any(|known| known == namespace) {
            return Err(BuildError::DuplicateNamespace {
                namespace: namespace.to_owned(),
            });
        }
        namespaces.push(namespace.to_owned());
    }
    Ok(())
}
