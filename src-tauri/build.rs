//! Generates the shell's Tauri context from `tauri.conf.json` at the repository root (the
//! layout the product asks for) and the permission of the shell's one command.

fn main() {
    // Otherwise files that are new in the panel's build output are not re-embedded.
    println!("cargo:rerun-if-changed=../ui/dist");
    println!("cargo:rerun-if-changed=../tauri.conf.json");
    println!("cargo:rerun-if-changed=capabilities");
    let attributes = tauri_build::Attributes::new()
        .config_path("../tauri.conf.json")
        .app_manifest(tauri_build::AppManifest::new().commands(&["pick_image"]));
    tauri_build::try_build(attributes).expect("tauri-build");
}
