//! Seeing the requests: the lead's `list_requests{status?}` tool and the table that
//! `troupe team requests` prints.

use super::sweep::sweep;
use super::Courier;
use crate::render::age;
use crate::shared::TeamShared;
use async_trait::async_trait;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::Value;
use std::sync::Arc;
use troupe_agent::transcript::now_ms;
use troupe_protocol::{Request, RequestStatus};
use troupe_store::RequestFilter;
use troupe_tools::{parse_input, schema_of, Effect, Tool, ToolContext, ToolOutput};

/// Parses a status name as written on the wire (`pending`, `approved`, …).
pub fn parse_status(s: &str) -> Result<RequestStatus, String> {
    serde_json::from_value(Value::String(s.trim().to_ascii_lowercase())).map_err(|_| {
        format!("unknown status '{s}' (use pending, approved, rejected, expired or cancelled)")
    })
}

/// One line of detail about a request: the plan, the tool call, or the shutdown reason.
fn gist(r: &Request) -> String {
    let text = ["summary", "plan", "reason"]
        .iter()
        .find_map(|k| r.payload.get(*k).and_then(Value::as_str))
        .unwrap_or("");
    let mut line = crate::shared::one_line(text);
    if let Some(answer) = r.response.as_ref().and_then(|a| a.reason.as_deref()) {
        line.push_str(&format!(" — answer: {}", crate::shared::one_line(answer)));
    }
    line
}

/// A table of requests: id, kind, from → to, status, age, gist.
pub fn requests_table(requests: &[Request], now: u64) -> String {
    let mut rows = vec![[
        "ID".to_string(),
        "KIND".into(),
        "FROM → TO".into(),
        "STATUS".into(),
        "AGE".into(),
        "DETAIL".into(),
    ]];
    for r in requests {
        rows.push([
            r.id.clone(),
            r.kind.to_string(),
            // The addressee's incarnation matters only for a teammate (the lead has none).
            match r.to.as_str() {
                crate::LEAD => format!("{} → {}", r.from, r.to),
                _ => format!("{} → {} (epoch {})", r.from, r.to, r.to_epoch),
            },
            r.status.to_string(),
            age(now, r.created_at),
            gist(r),
        ]);
    }
    crate::render::columns(&rows)
}

/// Sweeps, then lists the requests with `status` (all when `None`), oldest first.
pub async fn list(
    courier: &dyn Courier,
    status: Option<RequestStatus>,
) -> Result<Vec<Request>, crate::TeamError> {
    sweep(courier, now_ms()).await?;
    let filter = RequestFilter {
        status,
        ..RequestFilter::default()
    };
    Ok(courier.store().list_requests(&filter).await?)
}

/// Input of `list_requests`.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct ListRequestsInput {
    /// Only requests in this status: pending, approved, rejected, expired or cancelled.
    #[serde(default)]
    pub status: Option<String>,
}

/// `list_requests{status?}` (lead): every protocol request and where it stands.
pub struct ListRequests {
    shared: Arc<TeamShared>,
}

impl ListRequests {
    /// The tool bound to a team.
    pub fn new(shared: Arc<TeamShared>) -> ListRequests {
        ListRequests { shared }
    }
}

#[async_trait]
impl Tool for ListRequests {
    fn name(&self) -> &str {
        "list_requests"
    }
    fn description(&self) -> &str {
        "List protocol requests (shutdown, plan, permission) with id, parties, status and age; optionally only those with one status (e.g. pending)."
    }
    fn input_schema(&self) -> Value {
        schema_of::<ListRequestsInput>()
    }

    fn built_schema(&self) -> Option<&'static str> {
        Some(crate::tool_schemas::LIST_REQUESTS)
    }
    fn effect(&self, _input: &Value) -> Effect {
        Effect::ReadOnly
    }
    async fn call(&self, input: Value, _ctx: &ToolContext) -> ToolOutput {
        let input: ListRequestsInput = match parse_input(self.name(), input) {
            Ok(i) => i,
            Err(e) => return e,
        };
        let status = match input.status.as_deref().map(parse_status).transpose() {
            Ok(s) => s,
            Err(e) => return ToolOutput::error(e),
        };
        match list(&*self.shared, status).await {
            Ok(rs) if rs.is_empty() => ToolOutput::ok(match status {
                Some(s) => format!("No {s} requests."),
                None => "No protocol requests yet.".to_string(),
            }),
            Ok(rs) => ToolOutput::ok(requests_table(&rs, now_ms())),
            Err(e) => ToolOutput::error(e.to_string()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use troupe_protocol::RequestKind;

    #[test]
    fn status_names_parse_and_unknown_ones_are_explained() {
        assert_eq!(parse_status("pending"), Ok(RequestStatus::Pending));
        assert_eq!(parse_status(" Approved "), Ok(RequestStatus::Approved));
        let err = parse_status("done").unwrap_err();
        assert!(err.contains("use pending, approved"), "{err}");
    }

    #[test]
    fn table_shows_kind_parties_status_age_and_gist() {
        let mut r = Request::open(
            RequestKind::Plan,
            "bob",
            "lead",
            0,
            json!({"plan": "rewrite auth\nin detail"}),
            1_000,
            None,
        );
        r.respond("lead", 0, false, Some("too risky".into()), 2_000)
            .unwrap_or_else(|e| panic!("{e}"));
        let table = requests_table(&[r.clone()], 61_000);
        let row = table.lines().nth(1).unwrap_or_default();
        assert!(row.starts_with(&r.id), "{table}");
        for part in [
            "plan",
            "bob → lead",
            "rejected",
            "1m",
            "rewrite auth — answer: too risky",
        ] {
            assert!(row.contains(part), "missing {part:?} in {row}");
        }
    }
}
