//! What the clients of both wire formats share: one HTTP client (its connection pool) per
//! endpoint, the key, the retry policy, the stream's idle deadline, the tools' JSON shared by
//! clones, the test server's agent header and the reasoning asked for — and the builder
//! methods over them ([`Configure`]).

use crate::body::ToolsJson;
use crate::http::build_client;
use crate::reasoning::Reasoning;
use crate::retry::RetryPolicy;
use crate::{ModelError, DEFAULT_STREAM_IDLE_TIMEOUT};
use std::sync::Arc;
use std::time::Duration;

/// One endpoint as a client calls it.
#[derive(Debug, Clone)]
pub struct Endpoint {
    pub(crate) http: reqwest::Client,
    pub(crate) base_url: String,
    pub(crate) api_key: Option<String>,
    pub(crate) retry: RetryPolicy,
    pub(crate) idle_timeout: Duration,
    /// Shared by the client's clones, like its connection pool.
    pub(crate) tools_json: Arc<ToolsJson>,
    /// Whether calls name their agent in [`crate::AGENT_HEADER`] (only for a test server).
    pub(crate) agent_header: bool,
    /// The extended thinking and effort asked for every call.
    pub(crate) reasoning: Reasoning,
}

/// How long a connection opened ahead of the first request may take (a `HEAD` of the base
/// URL): past it the first request opens its own.
const PRECONNECT_TIMEOUT: Duration = Duration::from_secs(10);

impl Endpoint {
    /// `base_url` (a trailing `/` dropped) with `api_key`, the default retry policy and idle
    /// deadline.
    pub(crate) fn new(
        base_url: impl Into<String>,
        api_key: Option<String>,
    ) -> Result<Endpoint, ModelError> {
        let base_url = base_url.into().trim_end_matches('/').to_owned();
        Ok(Endpoint {
            http: build_client(&base_url)?,
            base_url,
            api_key,
            retry: RetryPolicy::default(),
            idle_timeout: DEFAULT_STREAM_IDLE_TIMEOUT,
            tools_json: Arc::default(),
            agent_header: false,
            reasoning: Reasoning::default(),
        })
    }

    /// Opens a connection to the base URL by asking for its `HEAD`, without a key; whatever the
    /// answer (a 404 is usual), the connection stays in the client's pool for the first
    /// request. Claude Code does the same at start-up. A failure is only logged.
    pub(crate) async fn preconnect(&self) {
        let head = self
            .http
            .head(&self.base_url)
            .timeout(PRECONNECT_TIMEOUT)
            .send();
        if let Err(e) = head.await {
            tracing::debug!(error = %e, url = %self.base_url, "could not connect ahead of the first request");
        }
    }
}

/// The settings every client takes the same way.
pub trait Configure: Sized {
    /// The client's endpoint.
    fn endpoint_mut(&mut self) -> &mut Endpoint;

    /// The same client asking for the extended thinking and effort `reasoning` says (each
    /// wire format sends what it can of it).
    fn with_reasoning(mut self, reasoning: Reasoning) -> Self {
        self.endpoint_mut().reasoning = reasoning;
        self
    }

    /// The same client naming each call's agent in [`crate::AGENT_HEADER`] — for a test server
    /// that routes scripts per agent ([`crate::AGENT_HEADER_VAR`]); never for a real provider.
    fn with_agent_header(mut self, send: bool) -> Self {
        self.endpoint_mut().agent_header = send;
        self
    }

    /// The same client with another retry policy.
    fn with_retry_policy(mut self, retry: RetryPolicy) -> Self {
        self.endpoint_mut().retry = retry;
        self
    }

    /// The same client with another stream idle deadline: an attempt that receives no content
    /// event (pings do not count) for this long is abandoned and retried.
    fn with_stream_idle_timeout(mut self, idle: Duration) -> Self {
        self.endpoint_mut().idle_timeout = idle;
        self
    }
}
