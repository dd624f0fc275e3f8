//! Mail as a person reads it: `✉ bob → lead: first line…` instead of the `<inbox><message …>`
//! markup the model gets.

use crate::sanitize::terminal;

/// One line per message of an injected `<inbox>` block addressed to `to`: team mail and
/// scheduled prompts as `✉ from → to: first line…`, a finished background command as
/// `✉ bg-1 → lead (background): npm run dev — exited with code 1 after 41s`; the harness's own
/// reminders (`<system-reminder>`, the todo list's) are the model's, never shown as mail. Other
/// text is shown by its first line.
pub fn lines(text: &str, to: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut rest = text;
    let mut other = String::new();
    loop {
        let next = ["<message ", "<task_notification>", "<system-reminder>"]
            .iter()
            .filter_map(|tag| rest.find(tag).map(|at| (at, *tag)))
            .min();
        let Some((start, tag)) = next else {
            other.push_str(rest);
            break;
        };
        other.push_str(&rest[..start]);
        let after = &rest[start..];
        rest = match tag {
            "<system-reminder>" => match after.find("</system-reminder>") {
                Some(end) => &after[end + "</system-reminder>".len()..],
                None => "",
            },
            "<task_notification>" => {
                let (block, next) = match after.find("</task_notification>") {
                    Some(end) => (&after[..end], &after[end + "</task_notification>".len()..]),
                    None => (after, ""),
                };
                out.push(background_line(block, to));
                next
            }
            _ => {
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
                let kind = match attribute(head, "request_id") {
                    Some(id) => format!("{kind} {id}"),
                    None => kind.to_string(),
                };
                out.push(line(from, to, &kind, body));
                next.get(1..).unwrap_or("")
            }
        };
    }
    if out.is_empty() {
        let first = other
            .lines()
            .map(str::trim)
            .find(|l| !l.is_empty() && !l.starts_with('<'));
        if let Some(first) = first {
            out.push(format!("✉ → {}: {}", terminal(to), short(first)));
        }
    }
    out
}

/// `✉ bg-1 → lead (background): npm run dev — exited with code 1 after 41s` for a
/// `<task_notification>` block.
fn background_line(block: &str, to: &str) -> String {
    let field = |name: &str| {
        block
            .lines()
            .find_map(|l| l.strip_prefix(&format!("{name}: ")))
            .unwrap_or("?")
            .trim()
    };
    format!(
        "✉ {} → {} (background): {} — {}",
        terminal(field("id")),
        terminal(to),
        short(field("command")),
        short(field("status"))
    )
}

/// `✉ from → to: first line…`, the kind named when it is not plain mail (with its request's
/// id, which answers it: `(plan approval request 01KB…)`).
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
                "✉ alice → lead (plan approval request r): My plan…"
            ]
        );
    }

    /// One snapshot per kind of notice the REPL shows as mail.
    #[test]
    fn every_notice_kind_in_one_line() {
        let mail = "<inbox>\n<message id=\"1\" type=\"message\" from=\"bob\">\nthe parser is done\nand tested\n</message>\n</inbox>";
        let result = "<inbox>\n<message id=\"2\" type=\"task_result\" from=\"alice\">\nAll 12 tests pass.\n</message>\n</inbox>";
        let plan = "<inbox>\n<message id=\"3\" type=\"plan_approval_request\" from=\"carol\" request_id=\"01KB\">\nCreate greeting.txt.\n(Review it and answer with review_plan{request_id, approve, feedback}.)\n</message>\n</inbox>";
        let permission = "<inbox>\n<message id=\"4\" type=\"permission_request\" from=\"dan\" request_id=\"01KC\">\ndan asks permission to run bash: touch x\n</message>\n</inbox>";
        let cron = "<inbox>\n<message id=\"5\" type=\"message\" from=\"cron\">\n[Scheduled] the meeting starts now\n</message>\n</inbox>";
        let background = "<inbox>\n<task_notification>\nid: bg-1\ncommand: npm run dev\nstatus: exited with code 1 after 41s\noutput (last lines not yet read):\nError: listen EADDRINUSE\nlog: /repo/.troupe/sessions/x/background/bg-1.log\n</task_notification>\n</inbox>";
        let reminder = "<inbox>\n<system-reminder>Your todo list has not changed for 5 rounds.\n☒ Read the code\n☐ Fix it\n</system-reminder>\n</inbox>";
        let kinds = [
            ("mail", mail),
            ("task_result", result),
            ("plan_request", plan),
            ("permission_request", permission),
            ("cron", cron),
            ("background", background),
            ("todo_reminder", reminder),
        ];
        for (kind, text) in kinds {
            insta::assert_snapshot!(kind, lines(text, "lead").join("\n"));
        }
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
