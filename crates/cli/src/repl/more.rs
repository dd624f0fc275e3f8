//! The REPL commands a Claude Code user reaches for in the first hour: `/init`, `/status`,
//! `/config`, `/doctor`, and `/msg` to talk to one teammate.

use super::Session;
use crate::render::sanitize::{errln, outln};
use troupe_agent::Agent;
use troupe_protocol::{Envelope, MailKind};

/// What `/init` asks the lead to do: write the project's memory file from the repository.
pub(super) const INIT_PROMPT: &str = "\
Look through this repository and write a CLAUDE.md at its root for the coding agents that will \
work here. Cover, briefly: what the project is; the commands to build, lint and test it \
(including how to run a single test); the layout of the code and how its main parts fit \
together; and conventions a newcomer would not guess (style, naming, error handling, where \
tests live). Read the README, the build files and any existing agent or editor rules \
(.cursorrules, .github/copilot-instructions.md, AGENTS.md) first and keep what matters from \
them. If a CLAUDE.md already exists, improve it rather than starting over. Keep it short: \
facts that save time, no generic advice.";

/// What `/review` asks the lead to do: review the current branch's changes.
pub(super) const REVIEW_PROMPT: &str = "\
Review the changes on the current branch as a careful senior reviewer would. Find what changed: \
run `git status`, then `git diff` against the branch this one started from (try `git merge-base \
HEAD origin/HEAD`, else `main` or `master`; with no such branch, the uncommitted changes with \
`git diff HEAD`), and `git log` for the commits in between. Read the changed code in context, \
not only the diff. Then report, most important first: bugs and wrong behaviour, missing error \
handling or edge cases, tests that are missing or do not test what they claim, performance \
problems, and code that is hard to follow or breaks the project's conventions. Name each issue's \
file and line, say why it matters and suggest a fix. End with a short overall verdict. Do not \
change any file: this is a review.";

/// What `/security-review` asks the lead to do: a security review of the pending changes.
pub(super) const SECURITY_REVIEW_PROMPT: &str = "\
Do a security review of the pending changes on this branch. Find them with `git status`, `git \
diff HEAD` (uncommitted work) and `git diff` against the branch this one started from (`git \
merge-base HEAD origin/HEAD`, else `main` or `master`), and read the changed code in context. \
Look for vulnerabilities the changes introduce: injection (SQL, shell commands, paths, \
templates), missing or broken authentication and authorization, secrets or credentials in the \
code, unsafe deserialization, cross-site scripting and request forgery, server-side request \
forgery, path traversal, insecure defaults and cryptography, unvalidated input reaching \
something dangerous, and sensitive data in logs or errors. Report only findings you are \
confident are real and exploitable, each with its file and line, its severity (high, medium, \
low), how it could be exploited and how to fix it; say plainly when you find none. Do not change \
any file.";

/// The prompt a bundled command (`/review`, `/security-review`) on `line` stands for, with
/// what follows the command as a further instruction; `None` when the line is no such
/// command, or the project or the user has a command of that name (theirs wins).
pub(super) fn bundled(session: &Session<'_>, line: &str) -> Option<String> {
    let (name, extra) = line.split_once(' ').unwrap_or((line, ""));
    let prompt = match name {
        "/review" => REVIEW_PROMPT,
        "/security-review" => SECURITY_REVIEW_PROMPT,
        _ => return None,
    };
    let custom = session.custom.commands.lookup(line);
    if !matches!(custom, troupe_catalog::commands::Lookup::Unknown) {
        return None;
    }
    Some(match extra.trim() {
        "" => prompt.to_string(),
        extra => format!("{prompt}\n\nAlso: {extra}"),
    })
}

/// `/status`: the session at a glance.
pub(super) fn status(agent: &Agent, session: &Session<'_>, mode: &str) -> String {
    let config = &session.team.shared().config;
    let mcp = session.mcp.statuses();
    let connected = mcp
        .iter()
        .filter(|s| s.status == troupe_mcp::Status::Connected)
        .count();
    let layers = crate::settings::load(&config.workspace, session.settings_arg.as_deref())
        .map(|l| {
            l.layers
                .iter()
                .map(|layer| layer.origin.clone())
                .collect::<Vec<_>>()
        })
        .unwrap_or_default();
    let mut out = String::new();
    let mut line = |key: &str, value: String| out.push_str(&format!("  {key:<16}{value}\n"));
    line("version", env!("CARGO_PKG_VERSION").to_string());
    line(
        "model",
        format!(
            "{} ({})",
            agent.config().model,
            session.model_config.provider
        ),
    );
    line("workspace", config.workspace.display().to_string());
    let session_id = agent
        .transcript_path()
        .and_then(|p| p.file_stem())
        .map_or_else(|| "-".to_string(), |s| s.to_string_lossy().into_owned());
    line("session", session_id);
    line("team", session.team.name().to_string());
    line("permission mode", mode.to_string());
    line(
        "mcp servers",
        format!("{connected} of {} connected", mcp.len()),
    );
    line(
        "settings",
        match layers.is_empty() {
            true => "(none)".to_string(),
            false => layers.join(", "),
        },
    );
    line("messages", agent.messages().len().to_string());
    format!("Status\n{out}")
}

/// `/msg <teammate> <text>`: the person's message to one teammate, as `troupe team send`
/// sends it; the reply comes back as mail does.
pub(super) async fn msg(session: &Session<'_>, rest: &str) {
    let (name, text) = match rest.trim().split_once(char::is_whitespace) {
        Some((name, text)) if !text.trim().is_empty() => (name, text.trim()),
        _ => {
            outln!("(usage: /msg <teammate> <message>; /team lists the teammates)");
            return;
        }
    };
    let shared = session.team.shared();
    if let Err(why) = crate::commands::team_names::teammate(&*shared.store, name).await {
        errln!("error: {why}");
        return;
    }
    let env = Envelope::new(
        MailKind::Message,
        crate::commands::team::person(),
        name.to_string(),
        text.to_string(),
        troupe_agent::transcript::now_ms(),
    );
    match shared.send(env).await {
        Ok(_) => outln!("(sent to {name}; the reply arrives as mail)"),
        Err(e) => errln!("error: could not send to {name}: {e}"),
    }
}

/// `/doctor` and `/config`: the subcommand's report for this workspace, made on a thread of
/// its own (the checks block, and may start a runtime of their own).
pub(super) async fn report(session: &Session<'_>, which: Report) {
    let workspace = session.team.shared().config.workspace.clone();
    let settings = session.settings_arg.clone();
    let (tx, rx) = tokio::sync::oneshot::channel();
    std::thread::spawn(move || {
        let result = match which {
            Report::Doctor => crate::commands::doctor::run(&crate::args::DoctorArgs {
                json: false,
                cwd: Some(workspace),
                provider: None,
                model: None,
            }),
            Report::Config => crate::commands::config::run(&crate::args::ConfigArgs {
                json: false,
                cwd: Some(workspace),
                settings,
            }),
        };
        let _ = tx.send(result.map_err(|e| format!("{e:#}")));
    });
    match rx.await {
        Ok(Ok(_)) => {}
        Ok(Err(why)) => errln!("error: {why}"),
        Err(_) => errln!("error: the report stopped before it finished"),
    }
}

/// Which subcommand's report.
pub(super) enum Report {
    Doctor,
    Config,
}
