//! Mail as a person reads it: `✉ bob → lead: first line…` instead of the `<inbox><message …>`
//! markup the model gets.

use crate::render::sanitize::terminal;

/// One line per message of an injected `<inbox>` block addressed to `to`; text that is not
/// such a block (a scheduled prompt, a finished background command) is shown by its first line.
pub fn lines(text: &str, to: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut rest = text;
    while let Some(start) = rest.find("<message ") {
        let after = &rest[start..];
        let Some(head_end) = after.find('>') else {
            break;
        };
        let head = &after[..head_end];
        let body_and_rest = &after[head_end + 1..];
        let (body, next) = match body_and_rest.find("\n</message>") {
            Some(end) => (&body_and_rest[..end], &body_and_rest[end..]),
            None => (body_and_rest, ""),
        };
        let from = attribute(head, "from").unwrap_or("?");
        let kind = attribute(head, "type").unwrap_or("message");
        out.push(line(from, to, kind, body));
        rest = next.get(1..).unwrap_or("");
    }
    if out.is_empty() {
        let first = text
            .lines()
            .map(str::trim)
            .find(|l| !l.is_empty() && !l.starts_with('<'))
            .unwrap_or("");
        out.push(format!("✉ → {}: {}", terminal(to), short(first)));
    }
    out
}

/// `✉ from → to: first line…`, the kind named when it is not plain mail.
fn line(from: &str, to: &str, kind: &str, body: &str) -> String {
    let first = body
        .lines()
        .map(str::trim)
        .find(|l| !l.is_empty())
        .unwrap_or("");
    let more = body.lines().filter(|l| !l.trim().is_empty()).count() > 1;
    let kind = match kind {
        "message" => String::new(),
        other => format!(" ({})", other.replace('_', " ")),
    };
    let ellipsis = if more && !first.ends_with('…') {
        "…"
    } else {
        ""
    };
    format!(
        "✉ {} → {}{}: {}{ellipsis}",
        terminal(from),
        terminal(to),
        terminal(&kind),
        short(first)
    )
}

/// At most 100 characters of `text`, sanitised.
fn short(text: &str) -> String {
    let cut: String = text.chars().take(100).collect();
    let cut = if cut.len() < text.len() {
        format!("{cut}…")
    } else {
        cut
    };
    terminal(&cut).into_owned()
}

/// The value of `name="…"` in a message head.
fn attribute<'a>(head: &'a str, name: &str) -> Option<&'a str> {
    let key = format!(" {name}=\"");
    let start = head.find(&key)? + key.len();
    let len = head[start..].find('"')?;
    Some(&head[start..start + len])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_message_becomes_one_line() {
        let text = "<inbox>\n<message id=\"1\" type=\"message\" from=\"bob\">\nfirst line\nsecond\n</message>\n\
                    <message id=\"2\" type=\"plan_approval_request\" from=\"alice\" request_id=\"r\">\nMy plan\n\
                    (Review it and answer with review_plan{request_id, approve, feedback}.)\n</message></inbox>";
        assert_eq!(
            lines(text, "lead"),
            [
                "✉ bob → lead: first line…",
                "✉ alice → lead (plan approval request): My plan…"
            ]
        );
    }

    #[test]
    fn other_text_and_control_characters() {
        assert_eq!(
            lines("run the nightly check", "lead"),
            ["✉ → lead: run the nightly check"]
        );
        let text = "<message id=\"1\" type=\"message\" from=\"b\u{1b}[2Jx\">\nhi\u{7}\n</message>";
        assert_eq!(lines(text, "lead"), ["✉ b\\x1b[2Jx → lead: hi\\x07"]);
    }
}
