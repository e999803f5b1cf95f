//! The tray icon: the router's status (servers ready / degraded / unavailable) as the first,
//! disabled menu entry and as the tooltip, with Open and Quit.
//!
//! The status follows the registry live without subscribing to the event bus: a subscriber
//! would make the data plane build every frame event for nobody. Instead a task reads the
//! registry's version (one atomic load, bumped on every state or catalog change) twice a
//! second and rebuilds the text only when it moved.

use std::fmt;
use std::time::Duration;

use switchboard_router::{Registry, ServerState, ServerView};
use tauri::menu::{Menu, MenuItem, PredefinedMenuItem};
use tauri::tray::TrayIconBuilder;
use tauri::{AppHandle, Wry};

/// How often the registry's version is read.
const POLL: Duration = Duration::from_millis(500);

/// Servers counted by state.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Summary {
    /// Routable.
    pub ready: usize,
    /// Restarting, reconnecting or failing probes.
    pub degraded: usize,
    /// Not routable until they recover.
    pub unavailable: usize,
    /// Not connected yet.
    pub starting: usize,
}

impl Summary {
    /// Counts `servers` by state.
    pub fn of(servers: &[ServerView]) -> Summary {
        let mut s = Summary::default();
        for v in servers {
            match v.state {
                ServerState::Ready => s.ready += 1,
                ServerState::Degraded => s.degraded += 1,
                ServerState::Unavailable => s.unavailable += 1,
                ServerState::Pending => s.starting += 1,
            }
        }
        s
    }
}

impl fmt::Display for Summary {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} ready · {} degraded · {} unavailable", self.ready, self.degraded, self.unavailable)?;
        if self.starting > 0 {
            write!(f, " · {} starting", self.starting)?;
        }
        Ok(())
    }
}

/// Puts the icon in the tray and starts following the registry.
///
/// # Errors
/// A menu or tray icon the platform refuses.
pub fn install(app: &AppHandle, registry: Registry) -> tauri::Result<()> {
    let status = MenuItem::with_id(app, "status", "Servers: starting…", false, None::<&str>)?;
    let open = MenuItem::with_id(app, "open", "Open Switchboard", true, None::<&str>)?;
    let quit = MenuItem::with_id(app, "quit", "Quit", true, None::<&str>)?;
    let menu = Menu::with_items(app, &[&status, &PredefinedMenuItem::separator(app)?, &open, &quit])?;
    let mut tray = TrayIconBuilder::with_id("main")
        .tooltip("Switchboard")
        .menu(&menu)
        .show_menu_on_left_click(true)
        .on_menu_event(|app, event| match event.id().as_ref() {
            "open" => crate::window::focus(app),
            "quit" => {
                tracing::info!("tray: Quit");
                app.exit(0);
            }
            _ => {}
        });
    if let Some(icon) = app.default_window_icon() {
        tray = tray.icon(icon.clone());
    }
    let tray = tray.build(app)?;
    tauri::async_runtime::spawn(async move {
        let mut seen = None;
        let mut shown = None;
        loop {
            let version = registry.version();
            if seen != Some(version) {
                seen = Some(version);
                let summary = Summary::of(&registry.servers());
                if shown != Some(summary) {
                    shown = Some(summary);
                    show(&status, &tray, summary);
                }
            }
            tokio::time::sleep(POLL).await;
        }
    });
    Ok(())
}

fn show(status: &MenuItem<Wry>, tray: &tauri::tray::TrayIcon<Wry>, summary: Summary) {
    tracing::info!("tray status: {summary}");
    let _ = status.set_text(format!("Servers: {summary}"));
    let _ = tray.set_tooltip(Some(format!("Switchboard — {summary}")));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_status_line_names_every_state_and_starting_only_when_there_is_any() {
        let s = Summary { ready: 3, degraded: 1, unavailable: 0, starting: 0 };
        assert_eq!(s.to_string(), "3 ready · 1 degraded · 0 unavailable");
        let s = Summary { starting: 2, ..s };
        assert_eq!(s.to_string(), "3 ready · 1 degraded · 0 unavailable · 2 starting");
    }
}
