//! `troupe team watch`: the live dashboard (crate `troupe-watch`) on this terminal — raw mode
//! and the alternate screen for as long as it runs, restored however it ends (quit, error,
//! panic, SIGTERM or SIGHUP).

use std::io::IsTerminal;

use anyhow::{bail, Context, Result};
use crossterm::event::EventStream;
use tokio::signal::unix::{signal, SignalKind};
use troupe_watch::{Colours, Options};

use super::team::{person, troupe_dir};
use super::team_status::price;
use crate::args::TeamArgs;

/// Runs the dashboard until the person quits; returns the exit code.
pub fn run(args: &TeamArgs) -> Result<i32> {
    if !std::io::stdout().is_terminal() || !std::io::stdin().is_terminal() {
        bail!("troupe team watch draws a full-screen view and needs a terminal; in scripts use `troupe team status --json` or `troupe team log --follow`");
    }
    troupe_protocol::validate_agent_name(&args.team)
        .map_err(|e| anyhow::anyhow!("--team {}: {e}", args.team))?;
    let dir = troupe_dir(args)?;
    let team = args.team.clone();
    let no_color = std::env::var_os("NO_COLOR").is_some_and(|v| !v.is_empty());
    let options = Options {
        team: team.clone(),
        person: person(),
        pricing: Some(price),
        colours: if no_color { Colours::Off } else { Colours::On },
        waiting_note: format!("There is no team '{team}' in {} yet.", dir.display()),
    };
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("starting the async runtime")?;
    runtime.block_on(async move {
        let mut term = signal(SignalKind::terminate()).context("watching SIGTERM")?;
        let mut hangup = signal(SignalKind::hangup()).context("watching SIGHUP")?;
        let open = async move {
            troupe_store::file::wait_for_team(&dir, &team).await?;
            troupe_store::file::open(&dir, &team)
        };
        // Raw mode, the alternate screen, and a panic hook that restores both.
        let mut terminal = ratatui::try_init().context("setting up the terminal")?;
        let result = tokio::select! {
            r = troupe_watch::run(&mut terminal, EventStream::new(), open, options) => r,
            _ = term.recv() => Ok(()),
            _ = hangup.recv() => Ok(()),
        };
        ratatui::restore();
        result.map(|()| 0).map_err(anyhow::Error::from)
    })
}
