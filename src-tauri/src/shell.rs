//! The Tauri application: plugins, the one command, start-up and the order of quitting.
//!
//! Start-up: the single-instance plugin runs first, so a second launch hands its arguments to
//! the first instance (which focuses its window) and exits before it starts a router of its
//! own. Then the router starts ([`Embedded::start`]), the window opens on the panel, the tray
//! appears. Quitting — the tray's Quit, closing the window, SIGTERM or SIGINT — ends the event
//! loop; only then is the router shut down, on the same Tokio runtime it ran on, so no
//! supervised child process outlives the app.

use std::sync::{Arc, Mutex, PoisonError};

use anyhow::Context as _;

use crate::Args;
use crate::embedded::Embedded;

/// Runs the desktop app until it quits; returns the exit code.
///
/// # Errors
/// A Tokio runtime that cannot be built, a router or window that cannot be started.
pub fn run(args: Args) -> anyhow::Result<i32> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .thread_name("switchboard")
        .build()
        .context("building the Tokio runtime")?;
    // Tauri's own tasks (commands, plugins) run on the router's runtime: one pool of threads.
    tauri::async_runtime::set(runtime.handle().clone());

    let router: Arc<Mutex<Option<Embedded>>> = Arc::default();
    let slot = router.clone();
    let app = tauri::Builder::default()
        .plugin(tauri_plugin_single_instance::init(|app, argv, _cwd| {
            tracing::info!(?argv, "a second launch: focusing the window of this one");
            crate::window::focus(app);
        }))
        .plugin(tauri_plugin_window_state::Builder::default().build())
        .plugin(tauri_plugin_dialog::init())
        .invoke_handler(tauri::generate_handler![crate::picker::pick_image])
        .setup(move |app| {
            let embedded = tauri::async_runtime::block_on(Embedded::start(&args))?;
            // Like `switchboard serve`: the owner's terminal learns where the panel is.
            eprintln!("panel: {}", embedded.panel_url());
            crate::window::open(app.handle(), &embedded)?;
            crate::tray::install(app.handle(), embedded.registry())?;
            tauri::async_runtime::spawn(quit_on_signal(app.handle().clone()));
            *slot.lock().unwrap_or_else(PoisonError::into_inner) = Some(embedded);
            Ok(())
        })
        .build(tauri::generate_context!("../tauri.conf.json"))
        .context("starting the desktop shell")?;

    let code = app.run_return(|_, _| {});
    let embedded = router.lock().unwrap_or_else(PoisonError::into_inner).take();
    if let Some(embedded) = embedded {
        tracing::info!("quitting: shutting the router down");
        runtime.block_on(embedded.shutdown());
        tracing::info!("router stopped");
    }
    Ok(code)
}

/// SIGTERM (a session ending, `kill`) and SIGINT quit like the tray's Quit.
async fn quit_on_signal(app: tauri::AppHandle) {
    let mut term = match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
        Ok(s) => s,
        Err(e) => {
            tracing::warn!(error = %e, "cannot watch SIGTERM");
            return;
        }
    };
    tokio::select! {
        _ = term.recv() => tracing::info!("SIGTERM: quitting"),
        _ = tokio::signal::ctrl_c() => tracing::info!("SIGINT: quitting"),
    }
    app.exit(0);
}
