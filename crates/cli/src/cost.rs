//! Approximate cost of the tokens used, from public list prices (USD per million tokens) and the
//! `pricing` setting, and the per-agent breakdown `/cost`, `/team`, `troupe team status` and the
//! json result show.

use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::OnceLock;
use troupe_protocol::{AgentUsage, Roster, Usage, UsageByModel};
use troupe_settings::ModelPrice;

/// The settings' `pricing`, set once per process before any cost is computed.
static PRICING: OnceLock<BTreeMap<String, ModelPrice>> = OnceLock::new();

/// Whether cache entries are written for an hour (priced at 2× input instead of 1.25×).
static HOUR_CACHE: AtomicBool = AtomicBool::new(false);

/// Prices cache writes for entries of this lifetime (the `promptCaching.ttl` setting).
pub fn set_cache_ttl(ttl: troupe_model::CacheTtl) {
    HOUR_CACHE.store(ttl == troupe_model::CacheTtl::OneHour, Ordering::Relaxed);
}

/// Whether cache entries are written for an hour (`promptCaching.ttl`).
pub fn hour_cache() -> bool {
    HOUR_CACHE.load(Ordering::Relaxed)
}

/// Whether the note about a model without a price was printed (once per run).
static UNPRICED_NOTED: AtomicBool = AtomicBool::new(false);

/// Makes the settings' `pricing` extend and override the price table for this process; the
/// first call wins (the lead's settings).
pub fn set_pricing(pricing: &BTreeMap<String, ModelPrice>) {
    if !pricing.is_empty() {
        let _ = PRICING.set(pricing.clone());
    }
}

/// (input, output, cache read, cache write) USD per million tokens: the `pricing` setting's
/// entry for the model, else the table's for its family.
fn prices(model: &str) -> Option<(f64, f64, f64, f64)> {
    if let Some(p) = PRICING.get().and_then(|table| table.get(model)) {
        return Some((
            p.input,
            p.output,
            p.cache_read.unwrap_or(p.input),
            p.cache_write.unwrap_or(p.input),
        ));
    }
    let m = model.to_ascii_lowercase();
    if m.contains("opus") {
        Some((15.0, 75.0, 1.5, 18.75))
    } else if m.contains("sonnet") {
        Some((3.0, 15.0, 0.3, 3.75))
    } else if m.contains("haiku") {
        Some((1.0, 5.0, 0.1, 1.25))
    } else if m.starts_with("gpt-4o-mini") {
        Some((0.15, 0.6, 0.075, 0.0))
    } else if m.starts_with("gpt-4o") {
        Some((2.5, 10.0, 1.25, 0.0))
    } else {
        None
    }
}

/// Cost in USD; 0 for a model without a known price (a local server's), with a one-line note
/// on stderr, once per run, saying how to give it one.
pub fn cost_usd(model: &str, usage: &Usage) -> f64 {
    let Some((input, output, read, mut write)) = prices(model) else {
        if usage.total() > 0 && !UNPRICED_NOTED.swap(true, Ordering::Relaxed) {
            eprintln!("{}", unpriced_note(model));
        }
        return 0.0;
    };
    if HOUR_CACHE.load(Ordering::Relaxed) {
        // One-hour entries cost twice the input price to write.
        write = input * 2.0;
    }
    (usage.input_tokens as f64 * input
        + usage.output_tokens as f64 * output
        + usage.cache_read_input_tokens as f64 * read
        + usage.cache_creation_input_tokens as f64 * write)
        / 1_000_000.0
}

/// The note for a model troupe has no price for.
fn unpriced_note(model: &str) -> String {
    format!(
        "troupe: note: no price known for model `{model}`; its cost counts as $0 (set one in settings: \"pricing\": {{\"{model}\": {{\"input\": 0.1, \"output\": 0.4}}}}, USD per million tokens)"
    )
}

/// Cost in USD when the model's price is known (`None` for local servers and unknown models).
pub fn known_cost_usd(model: &str, usage: &Usage) -> Option<f64> {
    prices(model).map(|_| cost_usd(model, usage))
}

/// What an agent's tokens cost, each call at the model it used (`by_model`); figures of an
/// older version without them are priced at `model`.
pub fn priced_usd(model: &str, usage: &Usage, by_model: &UsageByModel) -> f64 {
    if by_model.is_empty() {
        return cost_usd(model, usage);
    }
    by_model.iter().map(|(m, u)| cost_usd(m, u)).sum()
}

/// The models an agent used, as one cell: `model` alone, or each model it called.
fn models_label(model: &str, by_model: &UsageByModel) -> String {
    let used: Vec<&str> = by_model
        .iter()
        .filter(|(_, u)| u.total() > 0)
        .map(|(m, _)| m)
        .collect();
    match used.as_slice() {
        [] => model.to_string(),
        [one] => one.to_string(),
        several => several.join(" + "),
    }
}

/// One agent's tokens and what they cost.
#[derive(Debug, Clone, PartialEq)]
pub struct AgentCost {
    /// The agent (`lead`, `lead (subagents)`, a teammate).
    pub name: String,
    /// The model its tokens were priced at.
    pub model: String,
    /// Its tokens.
    pub usage: Usage,
    /// Approximate cost in USD.
    pub cost_usd: f64,
}

impl AgentCost {
    /// `usage` of `name` on `model`, priced.
    pub fn new(name: impl Into<String>, model: impl Into<String>, usage: Usage) -> AgentCost {
        let model = model.into();
        AgentCost {
            name: name.into(),
            cost_usd: cost_usd(&model, &usage),
            model,
            usage,
        }
    }

    /// `usage` of `name`, each call priced at the model it used (`by_model`; `model` when
    /// empty).
    pub fn per_model(
        name: impl Into<String>,
        model: &str,
        usage: Usage,
        by_model: &UsageByModel,
    ) -> AgentCost {
        AgentCost {
            name: name.into(),
            cost_usd: priced_usd(model, &usage, by_model),
            model: models_label(model, by_model),
            usage,
        }
    }

    /// As one object of the json result's `agents`.
    pub fn to_json(&self) -> Value {
        json!({
            "name": self.name,
            "model": self.model,
            "usage": self.usage,
            "cache_hit_rate": self.usage.cache_hit_rate(),
            "cost_usd": self.cost_usd,
        })
    }
}

/// Every agent of a run: the lead (and its subagents, when they used any, priced at the
/// lead's model now), then each teammate of `roster`. Every call is priced at the model it
/// used; a teammate that kept no per-model figures at its own model, else the lead's.
pub fn breakdown(lead: &AgentUsage, subagents: Usage, roster: Option<&Roster>) -> Vec<AgentCost> {
    let default_model = if lead.model.is_empty() {
        "unknown model"
    } else {
        lead.model.as_str()
    };
    let mut rows = vec![AgentCost::per_model(
        troupe_team::LEAD,
        default_model,
        lead.usage,
        &lead.by_model,
    )];
    if subagents.total() > 0 {
        rows.push(AgentCost::new("lead (subagents)", default_model, subagents));
    }
    for m in roster.map(|r| r.members.as_slice()).unwrap_or_default() {
        let model = m.model.as_deref().unwrap_or(default_model);
        rows.push(AgentCost::per_model(
            m.name.clone(),
            model,
            m.usage,
            &m.usage_by_model,
        ));
    }
    rows
}

/// The sum of every row's tokens and cost.
pub fn totals(rows: &[AgentCost]) -> (Usage, f64) {
    let mut usage = Usage::default();
    let mut cost = 0.0;
    for row in rows {
        usage.add(&row.usage);
        cost += row.cost_usd;
    }
    (usage, cost)
}

/// The rows as a table with a total line: agent, model, input, output, cache read and write,
/// the share of prompt tokens read from cache, cost.
pub fn table(rows: &[AgentCost]) -> String {
    let line = |name: &str, model: &str, u: &Usage, cost: f64| {
        // `~`: the server counted nothing; these are troupe's estimates.
        let mark = if u.estimated { "~" } else { "" };
        [
            name.to_string(),
            model.to_string(),
            format!("{mark}{}", u.input_tokens),
            format!("{mark}{}", u.output_tokens),
            u.cache_read_input_tokens.to_string(),
            u.cache_creation_input_tokens.to_string(),
            u.cache_hit_rate()
                .map_or_else(|| "-".to_string(), |r| format!("{:.0}%", r * 100.0)),
            format!("${cost:.4}"),
        ]
    };
    let mut out = vec![[
        "AGENT".to_string(),
        "MODEL".into(),
        "IN".into(),
        "OUT".into(),
        "CACHE READ".into(),
        "CACHE WRITE".into(),
        "CACHE".into(),
        "COST".into(),
    ]];
    for row in rows {
        out.push(line(&row.name, &row.model, &row.usage, row.cost_usd));
    }
    if rows.len() > 1 {
        let (usage, cost) = totals(rows);
        out.push(line("total", "", &usage, cost));
    }
    troupe_team::render::columns(&out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_breakdown_prices_each_agent_at_its_model_and_adds_up() {
        let mut roster = Roster::new("t", "lead");
        let mut alice = troupe_protocol::Member::new("alice", "tests", 0, 1);
        alice.usage.input_tokens = 1_000_000;
        alice.model = Some("claude-haiku-4-5".into());
        roster.members.push(alice);
        roster
            .members
            .push(troupe_protocol::Member::new("bob", "docs", 0, 1));
        let lead = AgentUsage {
            model: "claude-sonnet-4-5".into(),
            usage: Usage {
                input_tokens: 1_000_000,
                ..Usage::default()
            },
            by_model: UsageByModel::default(),
        };
        let rows = breakdown(&lead, Usage::default(), Some(&roster));
        let names: Vec<&str> = rows.iter().map(|r| r.name.as_str()).collect();
        assert_eq!(names, ["lead", "alice", "bob"]);
        assert!((rows[0].cost_usd - 3.0).abs() < 1e-9);
        assert!((rows[1].cost_usd - 1.0).abs() < 1e-9);
        let (usage, cost) = totals(&rows);
        assert_eq!(usage.input_tokens, 2_000_000);
        assert!((cost - 4.0).abs() < 1e-9);
        let text = table(&rows);
        assert!(
            text.contains("alice") && text.contains("claude-haiku-4-5"),
            "{text}"
        );
        assert!(
            text.lines().last().unwrap_or("").starts_with("total"),
            "{text}"
        );
        assert_eq!(rows[1].to_json()["usage"]["input_tokens"], 1_000_000);
    }

    #[test]
    fn past_calls_keep_the_price_of_the_model_they_used() {
        let million = Usage {
            input_tokens: 1_000_000,
            ..Usage::default()
        };
        // A million tokens on Sonnet, then `/model claude-opus-4-1` and a million more.
        let mut by_model = UsageByModel::default();
        by_model.add("claude-sonnet-4-5", &million);
        by_model.add("claude-opus-4-1", &million);
        let lead = AgentUsage {
            model: "claude-opus-4-1".into(),
            usage: by_model.total(),
            by_model,
        };
        // A teammate on the team's default that called only Sonnet.
        let mut roster = Roster::new("t", "lead");
        let mut alice = troupe_protocol::Member::new("alice", "tests", 0, 1);
        alice.usage = million;
        alice.usage_by_model.add("claude-sonnet-4-5", &million);
        roster.members.push(alice);
        let rows = breakdown(&lead, Usage::default(), Some(&roster));
        assert!((rows[0].cost_usd - 18.0).abs() < 1e-9, "{rows:?}");
        assert_eq!(rows[0].model, "claude-opus-4-1 + claude-sonnet-4-5");
        assert!((rows[1].cost_usd - 3.0).abs() < 1e-9, "{rows:?}");
        assert_eq!(rows[1].model, "claude-sonnet-4-5");
    }

    #[test]
    fn sonnet_prices_and_unknown_models() {
        let usage = Usage {
            input_tokens: 1_000_000,
            output_tokens: 1_000_000,
            ..Default::default()
        };
        assert!((cost_usd("claude-sonnet-4-5", &usage) - 18.0).abs() < 1e-9);
        assert_eq!(cost_usd("qwen2.5-coder", &usage), 0.0);
    }
}
