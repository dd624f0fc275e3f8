//! What a build without one of the binary's Cargo features says when it is asked for what it
//! lacks (decision 0026): the same sentence for each, naming the feature and the way back.

/// The sentence for a build without `feature`, which brings `what`.
#[cfg(not(all(feature = "nats", feature = "mcp", feature = "telemetry")))]
pub fn missing(what: &str, feature: &str) -> String {
    format!(
        "this troupe was built without {what} (Cargo feature `{feature}`); rebuild with \
         `cargo build --release` (default features)"
    )
}
