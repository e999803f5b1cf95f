//! Generates the shell's Tauri context and the permission of the shell's one command.
//!
//! `tauri.conf.json` lives at the repository root (the layout the product asks for; the shell
//! reads it with `generate_context!("../tauri.conf.json")`, so its relative paths resolve from
//! the root). tauri-build 2.6 — the newest 2.x — has no way to be pointed at another config
//! file: it reads `tauri.conf.json` (and `Cargo.toml`) from the package directory, so
//! `src-tauri/tauri.conf.json` is a committed symlink to the root file. tauri-build itself
//! resolves none of the config's relative paths on Linux (icons and `frontendDist` are the
//! macro's business).

fn main() {
    // Otherwise files that are new in the panel's build output are not re-embedded (the output
    // only: all of `../ui` would make cargo walk node_modules on every build).
    println!("cargo:rerun-if-changed=../ui/dist");
    println!("cargo:rerun-if-changed=../tauri.conf.json");
    let attributes = tauri_build::Attributes::new()
        .app_manifest(tauri_build::AppManifest::new().commands(&["pick_image"]));
    tauri_build::try_build(attributes).expect("tauri-build");
}
