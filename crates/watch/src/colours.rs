//! Whether the dashboard draws in colour.

use ratatui::style::{Color, Style};

/// Whether the dashboard draws in colour (`NO_COLOR` turns it off).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Colours {
    /// Statuses and event kinds in colour.
    #[default]
    On,
    /// Attributes (bold, reversed) only.
    Off,
}

impl Colours {
    /// `style` with `colour` as its foreground, unless colours are off.
    pub fn fg(self, style: Style, colour: Color) -> Style {
        match self {
            Colours::On => style.fg(colour),
            Colours::Off => style,
        }
    }
}
