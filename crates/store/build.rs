//! Rebuilds the crate when a migration is added: `sqlx::migrate!` embeds the files it sees at compile time,
//! and cargo only notices edits to files it already embedded, not new ones.

fn main() {
    println!("cargo:rerun-if-changed=migrations");
}
