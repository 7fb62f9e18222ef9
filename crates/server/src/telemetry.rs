//! Traces (`--otlp-endpoint`): every execution is a span, with a child span per tool call and,
//! under that, one per upstream request, exported over OTLP (HTTP, protobuf) to a collector.
//!
//! The spans are `tracing` spans at [`SPAN_TARGET`] (made here, in the bridge and in the upstream
//! manager), which `tracing-opentelemetry` turns into OpenTelemetry spans. They are `TRACE`
//! spans: without an exporter the log filter leaves them disabled, so tracing costs nothing
//! when it is off. An execution joins the caller's trace when its request's `_meta` carries W3C
//! trace context (`traceparent`, `tracestate`), as MCP clients put it there. Every upstream
//! request carries trace context on in its own `_meta`: its own span's when spans are exported,
//! else the caller's as it came, so the upstream server's spans join the caller's trace either
//! way. Spans leave in batches, from a thread of the SDK's own, so exporting never waits on the
//! protocol thread.

use std::time::Duration;

use opentelemetry::propagation::{Extractor, TextMapPropagator};
use opentelemetry::trace::TracerProvider as _;
use opentelemetry_otlp::{WithExportConfig, WithHttpConfig};
use opentelemetry_sdk::Resource;
use opentelemetry_sdk::propagation::TraceContextPropagator;
use opentelemetry_sdk::trace::SdkTracerProvider;
use rmcp::model::RequestMetaObject;
use toolweave_core::{Language, SPAN_TARGET};
use tracing_opentelemetry::OpenTelemetrySpanExt;
use tracing_subscriber::Layer;
use tracing_subscriber::registry::LookupSpan;

/// Where on a collector OTLP over HTTP takes traces.
const TRACES_PATH: &str = "/v1/traces";
/// How long one export may take before it is given up.
const EXPORT_TIMEOUT: Duration = Duration::from_secs(10);
/// How long the spans still queued at shutdown get to leave.
const SHUTDOWN_WAIT: Duration = Duration::from_secs(5);

/// Why traces cannot be exported.
#[derive(Debug, thiserror::Error)]
pub enum TelemetryError {
    /// The endpoint is not an `http://` or `https://` URL.
    #[error(
        "--otlp-endpoint {endpoint}: not an http:// or https:// URL; give the collector's OTLP/HTTP \
         address, such as http://127.0.0.1:4318"
    )]
    Endpoint {
        /// As given.
        endpoint: String,
    },
    /// The exporter could not be built.
    #[error("--otlp-endpoint {endpoint}: the trace exporter could not be set up: {cause}")]
    Exporter {
        /// As given.
        endpoint: String,
        /// Why.
        cause: String,
    },
}

/// The trace exporter: spans go to the collector until [`Traces::shutdown`].
#[derive(Debug)]
pub struct Traces {
    provider: SdkTracerProvider,
}

impl Traces {
    /// Exports to the collector at `endpoint` (its base URL, as `OTEL_EXPORTER_OTLP_ENDPOINT`
    /// is given: `/v1/traces` is added unless the URL ends with it). The service is named
    /// `toolweave` unless `OTEL_SERVICE_NAME` says otherwise; `OTEL_BSP_*` tune the batches.
    pub fn start(endpoint: &str) -> Result<Self, TelemetryError> {
        let trimmed = endpoint.trim_end_matches('/');
        if !(trimmed.starts_with("http://") || trimmed.starts_with("https://")) {
            return Err(TelemetryError::Endpoint {
                endpoint: endpoint.to_owned(),
            });
        }
        let url = if trimmed.ends_with(TRACES_PATH) {
            trimmed.to_owned()
        } else {
            format!("{trimmed}{TRACES_PATH}")
        };
        let failed = |cause: String| TelemetryError::Exporter {
            endpoint: endpoint.to_owned(),
            cause,
        };
        let exporter = opentelemetry_otlp::SpanExporter::builder()
            .with_http()
            .with_http_client(http_client().map_err(failed)?)
            .with_protocol(opentelemetry_otlp::Protocol::HttpBinary)
            .with_endpoint(url)
            .with_timeout(EXPORT_TIMEOUT)
            .build()
            .map_err(|error| failed(error.to_string()))?;
        let mut resource = Resource::builder();
        if std::env::var_os("OTEL_SERVICE_NAME").is_none() {
            resource = resource.with_service_name("toolweave");
        }
        let provider = SdkTracerProvider::builder()
            .with_batch_exporter(exporter)
            .with_resource(resource.build())
            .build();
        Ok(Self { provider })
    }

    /// The `tracing` layer that turns toolweave's spans (and only those) into exported spans.
    pub fn layer<S>(&self) -> impl Layer<S> + use<S>
    where
        S: tracing::Subscriber + for<'span> LookupSpan<'span>,
    {
        let tracer = self.provider.tracer("toolweave");
        tracing_opentelemetry::layer()
            .with_tracer(tracer)
            .with_location(false)
            .with_threads(false)
            .with_target(false)
            .with_tracked_inactivity(false)
            .with_filter(tracing_subscriber::filter::filter_fn(|metadata| {
                metadata.is_span() && metadata.target() == SPAN_TARGET
            }))
    }

    /// Sends the spans still queued, and stops. Blocks (up to a few seconds): call it off the
    /// protocol thread, or once serving is over.
    pub fn shutdown(self) {
        if let Err(error) = self.provider.shutdown_with_timeout(SHUTDOWN_WAIT) {
            tracing::warn!(%error, "the last traces could not be sent");
        }
    }
}

/// The blocking HTTP client the exporter's thread sends with: rustls with the platform's
/// certificate roots, as for remote upstream servers.
fn http_client() -> Result<reqwest::blocking::Client, String> {
    use rustls_platform_verifier::BuilderVerifierExt;

    let provider = std::sync::Arc::new(rustls::crypto::ring::default_provider());
    let tls = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|error| error.to_string())?
        .with_platform_verifier()
        .map_err(|error| error.to_string())?
        .with_no_client_auth();
    reqwest::blocking::Client::builder()
        .tls_backend_preconfigured(tls)
        .timeout(EXPORT_TIMEOUT)
        .build()
        .map_err(|error| error.to_string())
}

/// The span of one execution, a child of the caller's span when the request's `_meta` names
/// one (W3C `traceparent`); a disabled span when traces are off.
pub(crate) fn execution_span(language: Language, meta: &RequestMetaObject) -> tracing::Span {
    let span = tracing::trace_span!(
        target: SPAN_TARGET,
        "execute_code",
        otel.kind = "server",
        otel.status_code = tracing::field::Empty,
        language = language.name(),
        outcome = tracing::field::Empty,
    );
    if !span.is_disabled() {
        let caller = TraceContextPropagator::new().extract(&MetaCarrier(meta));
        // Fails only without the OpenTelemetry layer, when the span is not exported anyway.
        let _ = span.set_parent(caller);
    }
    span
}

/// The caller's W3C trace context in a request's `_meta` (`traceparent`, `tracestate`), when it
/// is well formed: what upstream requests made for the request carry on when toolweave's own
/// spans are not exported. A `traceparent` that is not W3C trace context is not passed on.
pub(crate) fn caller_trace(meta: &RequestMetaObject) -> Option<toolweave_core::TraceContext> {
    use opentelemetry::trace::TraceContextExt;
    let caller = TraceContextPropagator::new().extract(&MetaCarrier(meta));
    let span = caller.span();
    let context = span.span_context();
    if !context.is_valid() {
        return None;
    }
    let tracestate = context.trace_state().header();
    Some(toolweave_core::TraceContext {
        traceparent: format!(
            "00-{}-{}-{:02x}",
            context.trace_id(),
            context.span_id(),
            context.trace_flags().to_u8()
        ),
        tracestate: (!tracestate.is_empty()).then_some(tracestate),
    })
}

/// Marks how an execution ended on its span: `ok`, or the error's kind.
pub(crate) fn execution_ended(span: &tracing::Span, outcome: &str) {
    span.record("outcome", outcome);
    if outcome != "ok" {
        span.record("otel.status_code", "ERROR");
    }
}

/// A request's `_meta`, read as the carrier of W3C trace context.
struct MetaCarrier<'a>(&'a RequestMetaObject);

impl Extractor for MetaCarrier<'_> {
    fn get(&self, key: &str) -> Option<&str> {
        self.0.get(key).and_then(serde_json::Value::as_str)
    }

    fn keys(&self) -> Vec<&str> {
        self.0.keys().map(String::as_str).collect()
    }
}
