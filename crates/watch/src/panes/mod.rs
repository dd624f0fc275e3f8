//! The dashboard's panes, one module each: the roster, the traffic, the pending requests, the
//! board, and the detail view (with the input line) that covers them.

pub mod board;
pub mod detail;
pub mod requests;
pub mod roster;
pub mod traffic;

use ratatui::style::{Modifier, Style};
use ratatui::widgets::TableState;

/// The style of a pane's header row.
pub(crate) fn header_style() -> Style {
    Style::default().add_modifier(Modifier::BOLD | Modifier::UNDERLINED)
}

/// The style of the selected row.
pub(crate) fn selected_style() -> Style {
    Style::default().add_modifier(Modifier::REVERSED)
}

/// A table state selecting `index` when the pane has rows (and showing the selection only
/// when it has the focus).
pub(crate) fn table_state(index: usize, rows: usize, focused: bool) -> TableState {
    let mut state = TableState::default();
    if rows > 0 && focused {
        state.select(Some(index.min(rows - 1)));
    }
    state
}
