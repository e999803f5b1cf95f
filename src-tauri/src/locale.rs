//! A locale WebKit can name. WebKitGTK takes `navigator.language` from the messages locale;
//! under the C/POSIX locale (CI machines, minimal systems, `LANG=C.UTF-8`) it reports `"C"`,
//! which is no BCP 47 tag: `new Intl.NumberFormat(navigator.language)` throws, and the panel's
//! chart library, which does that when it loads, takes the whole panel down with it (a blank
//! window). So before anything else the shell re-executes itself once with an English
//! messages locale (`LC_MESSAGES`, or `LC_ALL` when that is what pins C); formats, collation
//! and character types stay as they were. Re-executing keeps the process id, and the
//! environment is changed without `unsafe` (`std::env::set_var` is unsafe in edition 2024).

use std::ffi::OsString;
use std::os::unix::process::CommandExt as _;

/// Set on the re-executed process, so it happens once.
const MARKER: &str = "SWITCHBOARD_DESKTOP_LOCALE_FIXED";
/// The messages locale used instead of C.
const FALLBACK: &str = "en_US.UTF-8";

/// Whether a locale name is the C/POSIX locale (or unset).
fn is_c(name: Option<&OsString>) -> bool {
    match name.and_then(|n| n.to_str()) {
        None => true,
        Some(n) => {
            let base = n.split(['.', '@']).next().unwrap_or("");
            base.is_empty() || base == "C" || base == "POSIX"
        }
    }
}

/// The variable to set, if the messages locale is C: `LC_ALL` when it is set, else `LC_MESSAGES`.
fn variable_to_fix(var: impl Fn(&str) -> Option<OsString>) -> Option<&'static str> {
    let set = |k: &str| var(k).filter(|v| !v.is_empty());
    let lc_all = set("LC_ALL");
    let effective = lc_all.clone().or_else(|| set("LC_MESSAGES")).or_else(|| set("LANG"));
    if !is_c(effective.as_ref()) {
        return None;
    }
    Some(if lc_all.is_some() { "LC_ALL" } else { "LC_MESSAGES" })
}

/// Re-executes the shell with a nameable messages locale when it runs under C; returns only
/// when nothing needs to change (or the re-execution failed, which is logged).
pub fn ensure_nameable() {
    if std::env::var_os(MARKER).is_some() {
        return;
    }
    let Some(var) = variable_to_fix(|k| std::env::var_os(k)) else { return };
    let Ok(exe) = std::env::current_exe() else { return };
    let err = std::process::Command::new(exe)
        .args(std::env::args_os().skip(1))
        .env(var, FALLBACK)
        .env(MARKER, "1")
        .exec();
    eprintln!(
        "switchboard-desktop: could not re-execute with {var}={FALLBACK} ({err}); the panel may not load"
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(pairs: &[(&str, &str)]) -> impl Fn(&str) -> Option<OsString> {
        let pairs: Vec<(String, OsString)> =
            pairs.iter().map(|(k, v)| (k.to_string(), (*v).into())).collect();
        move |k| pairs.iter().find(|(n, _)| n == k).map(|(_, v)| v.clone())
    }

    #[test]
    fn c_and_posix_locales_get_an_english_messages_locale() {
        assert_eq!(variable_to_fix(env(&[("LANG", "C.UTF-8")])), Some("LC_MESSAGES"));
        assert_eq!(variable_to_fix(env(&[])), Some("LC_MESSAGES"));
        assert_eq!(variable_to_fix(env(&[("LANG", "de_DE.UTF-8"), ("LC_ALL", "POSIX")])), Some("LC_ALL"));
        assert_eq!(variable_to_fix(env(&[("LANG", "C"), ("LC_MESSAGES", "fr_FR.UTF-8")])), None);
        assert_eq!(variable_to_fix(env(&[("LANG", "en_GB.UTF-8"), ("LC_ALL", "")])), None);
    }
}
