//! Approximate cost of the tokens used, from public list prices (USD per million tokens).

use troupe_protocol::Usage;

/// (input, output, cache read, cache write) USD per million tokens for a model family.
fn prices(model: &str) -> Option<(f64, f64, f64, f64)> {
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

/// Cost in USD; 0 for models without a known price (local servers).
pub fn cost_usd(model: &str, usage: &Usage) -> f64 {
    let Some((input, output, read, write)) = prices(model) else {
        return 0.0;
    };
    (usage.input_tokens as f64 * input
        + usage.output_tokens as f64 * output
        + usage.cache_read_input_tokens as f64 * read
        + usage.cache_creation_input_tokens as f64 * write)
        / 1_000_000.0
}

/// Cost in USD when the model's price is known (`None` for local servers and unknown models).
pub fn known_cost_usd(model: &str, usage: &Usage) -> Option<f64> {
    prices(model).map(|_| cost_usd(model, usage))
}

#[cfg(test)]
mod tests {
    use super::*;

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
