//! A team notice as one line for people.

/// One line for a team notice.
pub fn notice_line(notice: &troupe_team::Notice) -> String {
    use troupe_team::Notice;
    match notice {
        Notice::Status {
            name,
            status,
            detail,
        } if detail.is_empty() => format!("[{name}] {}", status.as_str()),
        Notice::Status {
            name,
            status,
            detail,
        } => format!("[{name}] {}: {detail}", status.as_str()),
        Notice::Tool {
            agent,
            tool,
            summary,
        } => format!("[{agent}] ⏺ {tool}({summary})"),
        Notice::Mail {
            from,
            to,
            kind,
            content,
        } => {
            let kind = match kind.as_str() {
                "message" => String::new(),
                other => format!(" ({})", other.replace('_', " ")),
            };
            format!(
                "✉ {from} → {to}{kind}: {}",
                troupe_team::runtime::one_line(content)
            )
        }
    }
}
