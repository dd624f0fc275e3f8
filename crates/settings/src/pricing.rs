//! The `pricing` setting: what a model's tokens cost, in USD per million tokens, for a model
//! troupe's price table does not know (a local server's) or prices differently.

use crate::SettingsError;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// One model's prices in USD per million tokens. Cache prices left out cost what input does.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ModelPrice {
    /// Prompt tokens not read from cache.
    pub input: f64,
    /// Generated tokens.
    pub output: f64,
    /// Prompt tokens read from the provider's cache.
    #[serde(default, alias = "cacheRead", skip_serializing_if = "Option::is_none")]
    pub cache_read: Option<f64>,
    /// Prompt tokens written to the provider's cache.
    #[serde(default, alias = "cacheWrite", skip_serializing_if = "Option::is_none")]
    pub cache_write: Option<f64>,
}

/// Checks every price is a finite number of dollars, zero or more.
pub(crate) fn validate(
    pricing: &BTreeMap<String, ModelPrice>,
    origin: &str,
) -> Result<(), SettingsError> {
    for (model, price) in pricing {
        let fields = [
            ("input", Some(price.input)),
            ("output", Some(price.output)),
            ("cache_read", price.cache_read),
            ("cache_write", price.cache_write),
        ];
        for (field, value) in fields {
            if value.is_some_and(|v| !(v.is_finite() && v >= 0.0)) {
                return Err(SettingsError::Invalid {
                    origin: origin.to_string(),
                    key: format!("pricing.{model}.{field}"),
                    message: "must be a price in USD per million tokens, 0 or more".to_string(),
                });
            }
        }
        if model.trim().is_empty() {
            return Err(SettingsError::Invalid {
                origin: origin.to_string(),
                key: "pricing".to_string(),
                message: "a model name is empty".to_string(),
            });
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use crate::Settings;

    #[test]
    fn prices_parse_merge_and_are_checked() {
        let user = Settings::parse(
            r#"{"pricing": {"my-model": {"input": 0.1, "output": 0.4, "cache_read": 0.01, "cache_write": 0.125},
                            "other": {"input": 1, "output": 2}}}"#,
            "user",
        )
        .unwrap_or_else(|e| panic!("{e}"));
        let price = user.pricing["my-model"];
        assert_eq!((price.input, price.output), (0.1, 0.4));
        assert_eq!(
            (price.cache_read, price.cache_write),
            (Some(0.01), Some(0.125))
        );
        let project = Settings::parse(
            r#"{"pricing": {"other": {"input": 3, "output": 4, "cacheRead": 0.3}}}"#,
            "project",
        )
        .unwrap_or_else(|e| panic!("{e}"));
        let mut merged = user.clone();
        merged.merge(&project);
        // Key by key: the later file's model wins, the others stay.
        assert_eq!(merged.pricing["other"].input, 3.0);
        assert_eq!(merged.pricing["other"].cache_read, Some(0.3));
        assert_eq!(merged.pricing["my-model"].output, 0.4);

        let negative = Settings::parse(r#"{"pricing": {"m": {"input": -1, "output": 0}}}"#, "f");
        let text = negative.err().map(|e| e.to_string()).unwrap_or_default();
        assert!(text.contains("pricing.m.input"), "{text}");
        let typo = Settings::parse(r#"{"pricing": {"m": {"input": 1, "ouput": 2}}}"#, "f");
        let text = typo.err().map(|e| e.to_string()).unwrap_or_default();
        assert!(text.contains("line 1"), "{text}");
    }
}
