//! `troupe team watch`: the live dashboard (crate `troupe-watch`) on this terminal — raw mode
//! and the alternate screen for as long as it runs, restored however it ends (quit, error,
//! panic, SIGTERM or SIGHUP).

use std::io::{IsTerminal, Stdout, Write};
use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::{bail, Context, Result};
use crossterm::event::EventStream;
use crossterm::terminal::{
    enable_raw_mode, BeginSynchronizedUpdate, EndSynchronizedUpdate, EnterAlternateScreen,
};
use ratatui::backend::CrosstermBackend;
use ratatui::Terminal;
use tokio::signal::unix::{signal, SignalKind};
use troupe_store::{SharedStore, StoreError};
use troupe_watch::{Colours, Options};

use crate::store::StoreChoice;

use super::team::{person, troupe_dir};
use super::team_status::price;
use crate::args::TeamArgs;

/// Runs the dashboard until the person quits; returns the exit code.
pub fn run(args: &TeamArgs) -> Result<i32> {
    if !std::io::stdout().is_terminal() || !std::io::stdin().is_terminal() {
        bail!("troupe team watch draws a full-screen view and needs a terminal; in scripts use `troupe team status --json` or `troupe team log --follow`");
    }
    let dir = troupe_dir(args)?;
    let workspace = dir.parent().map(Path::to_path_buf).unwrap_or_default();
    super::team::load_pricing(&workspace);
    let choice = crate::store::choose_for(args.place.store.as_deref(), &workspace)?;
    // A named team is waited for; otherwise the one running here (or the newest).
    if args.place.team.is_none()
        && matches!(choice, StoreChoice::File)
        && crate::team_pick::teams(&dir).is_empty()
    {
        bail!(
            "{}; `troupe team watch --team NAME` waits for a team of that name",
            crate::team_pick::none_yet(&choice, &dir)
        );
    }
    let team = crate::team_pick::pick(args.place.team.as_deref(), &choice, &dir)?;
    troupe_protocol::validate_agent_name(&team)
        .map_err(|e| anyhow::anyhow!("--team {team}: {e}"))?;
    let no_color = std::env::var_os("NO_COLOR").is_some_and(|v| !v.is_empty());
    let options = Options {
        team: team.clone(),
        person: person(),
        pricing: Some(price),
        colours: if no_color { Colours::Off } else { Colours::On },
        waiting_note: format!("There is no team '{team}' in {} yet.", dir.display()),
    };
    let runtime = super::current_thread_runtime()?;
    runtime.block_on(async move {
        let mut term = signal(SignalKind::terminate()).context("watching SIGTERM")?;
        let mut hangup = signal(SignalKind::hangup()).context("watching SIGHUP")?;
        let open = open_when_created(choice, dir, team);
        let mut terminal = setup().context("setting up the terminal")?;
        let result = tokio::select! {
            r = troupe_watch::run(&mut terminal, EventStream::new(), open, options) => r,
            _ = term.recv() => Ok(()),
            _ = hangup.recv() => Ok(()),
        };
        ratatui::restore();
        result.map(|()| 0).map_err(anyhow::Error::from)
    })
}

/// The team's store once a lead has created it: on the file backend as soon as its directory
/// appears (a file-system watch); on a server, asked again each second until it is there.
async fn open_when_created(
    choice: StoreChoice,
    dir: PathBuf,
    team: String,
) -> Result<SharedStore, StoreError> {
    let url = match choice {
        StoreChoice::File => {
            troupe_store::file::wait_for_team(&dir, &team).await?;
            return troupe_store::file::open(&dir, &team);
        }
        StoreChoice::Nats(_, url) => url,
    };
    loop {
        match crate::nats::open_existing(&url, &dir, &team).await {
            Ok(Some(store)) => return Ok(store),
            Ok(None) => {}
            Err(e) => return Err(e),
        }
        tokio::time::sleep(Duration::from_secs(1)).await;
    }
}

/// Stdout that brackets each frame in a synchronized update (`CSI ? 2026 h` … `l`): the
/// first write after a flush opens it, the flush that ends a frame closes it, so terminals
/// that know the mode show whole frames only (the others ignore it).
struct FrameWriter {
    out: Stdout,
    in_frame: bool,
}

impl Write for FrameWriter {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        if !self.in_frame {
            crossterm::queue!(self.out, BeginSynchronizedUpdate)?;
            self.in_frame = true;
        }
        self.out.write(buf)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        if self.in_frame {
            crossterm::queue!(self.out, EndSynchronizedUpdate)?;
            self.in_frame = false;
        }
        self.out.flush()
    }
}

/// Raw mode and the alternate screen, with a panic hook that restores the terminal before
/// the panic is reported.
fn setup() -> std::io::Result<Terminal<CrosstermBackend<FrameWriter>>> {
    let previous = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        ratatui::restore();
        previous(info);
    }));
    enable_raw_mode()?;
    crossterm::execute!(std::io::stdout(), EnterAlternateScreen)?;
    Terminal::new(CrosstermBackend::new(FrameWriter {
        out: std::io::stdout(),
        in_frame: false,
    }))
}
