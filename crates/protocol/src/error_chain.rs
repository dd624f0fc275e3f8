//! An error with its chain of sources in one line, for messages a person or the model reads:
//! HTTP clients' own texts are terse ("error sending request") and keep the cause (refused,
//! DNS, TLS) to their sources.

use std::error::Error;

/// `error` and each of its sources, joined with `: `; a source whose text the line already
/// holds (many errors repeat their source's) is left out.
pub fn error_chain(error: &(dyn Error + 'static)) -> String {
    let mut out = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        let text = cause.to_string();
        if !out.contains(&text) {
            out.push_str(": ");
            out.push_str(&text);
        }
        source = cause.source();
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug)]
    struct Layer(&'static str, Option<Box<Layer>>);

    impl std::fmt::Display for Layer {
        fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.write_str(self.0)
        }
    }

    impl Error for Layer {
        fn source(&self) -> Option<&(dyn Error + 'static)> {
            self.1.as_deref().map(|l| l as &(dyn Error + 'static))
        }
    }

    #[test]
    fn causes_follow_in_order_and_repeats_are_left_out() {
        let refused = Layer("connection refused", None);
        let connect = Layer(
            "connect failed: connection refused",
            Some(Box::new(refused)),
        );
        let top = Layer("error sending request", Some(Box::new(connect)));
        assert_eq!(
            error_chain(&top),
            "error sending request: connect failed: connection refused"
        );
        assert_eq!(error_chain(&Layer("alone", None)), "alone");
    }
}
