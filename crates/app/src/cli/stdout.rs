//! Command output on stdout that survives a reader going away.
//!
//! `println!` panics when stdout is a pipe whose reader has closed it
//! (`switchboard diagnose IMG --json | head -c 100`): Rust ignores SIGPIPE, so the write
//! fails with `BrokenPipe` and the macro turns that into "failed printing to stdout" and exit
//! status 101. Commands print through [`write`] (the `outln!` and
//! `out!` macros) instead: a closed stdout ends the process quietly with status
//! 0, as `head` expects of the programs it reads from; any other write error is one line on
//! stderr and status 1.

use std::io::Write as _;

/// Writes `args` to stdout and flushes; a closed stdout exits the process quietly.
pub(crate) fn write(args: std::fmt::Arguments<'_>) {
    let mut out = std::io::stdout().lock();
    if let Err(e) = out.write_fmt(args).and_then(|()| out.flush()) {
        exit_on(&e);
    }
}

/// Ends the process for a failed write to stdout: quietly (status 0) when the reader went
/// away, else with one line on stderr (status 1).
pub(crate) fn exit_on(e: &std::io::Error) -> ! {
    if e.kind() == std::io::ErrorKind::BrokenPipe {
        std::process::exit(0);
    }
    eprintln!("switchboard: cannot write to stdout: {e}");
    std::process::exit(1);
}

/// `print!` for command output: see [`write`].
macro_rules! out {
    ($($arg:tt)*) => { $crate::cli::stdout::write(format_args!($($arg)*)) };
}

/// `println!` for command output: see [`write`].
macro_rules! outln {
    () => { $crate::cli::stdout::write(format_args!("\n")) };
    ($($arg:tt)*) => { $crate::cli::stdout::write(format_args!("{}\n", format_args!($($arg)*))) };
}
