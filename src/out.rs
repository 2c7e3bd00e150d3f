//! Standard output of the command line. `std`'s `print!` panics when the reader has gone away
//! (`lesson list | head -c 1`); these replacements end the process quietly with status 0
//! instead, as `rg` does (Rust ignores SIGPIPE, so the broken pipe arrives as an error; a C tool
//! would be killed by the signal). Any other write error is reported and exits 2.
//!
//! `print!` and `println!` are defined here, before `mod cli`, so that every command module
//! uses them in place of `std`'s without a change at the call site.

macro_rules! print {
    ($($arg:tt)*) => {
        $crate::out::write(format_args!($($arg)*))
    };
}

macro_rules! println {
    () => {
        $crate::out::write(format_args!("\n"))
    };
    ($($arg:tt)*) => {
        $crate::out::write(format_args!("{}\n", format_args!($($arg)*)))
    };
}

use std::io::{self, Write as _};

/// Write to standard output; a write error ends the process (see the module's docs).
pub fn write(args: std::fmt::Arguments<'_>) {
    if let Err(err) = io::stdout().lock().write_fmt(args) {
        exit_on(&err);
    }
}

/// An error and its causes as one line, `outer: cause: root`, as anyhow's `{:#}` prints them,
/// but without a cause that the message before it already says (a library error whose message
/// quotes its source would otherwise print the source twice).
pub fn error_chain<'a>(
    chain: impl IntoIterator<Item = &'a (dyn std::error::Error + 'static)>,
) -> String {
    let mut line = String::new();
    for err in chain {
        let text = err.to_string();
        if text.is_empty() || line.contains(&text) {
            continue;
        }
        if !line.is_empty() {
            line.push_str(": ");
        }
        line.push_str(&text);
    }
    line
}

/// Whether an error (or any error in its chain) is a write to a reader that has gone away.
pub fn is_broken_pipe(err: &(dyn std::error::Error + 'static)) -> bool {
    let mut next = Some(err);
    while let Some(err) = next {
        if let Some(io) = err.downcast_ref::<io::Error>() {
            if io.kind() == io::ErrorKind::BrokenPipe {
                return true;
            }
        }
        if let Some(json) = err.downcast_ref::<serde_json::Error>() {
            if json.io_error_kind() == Some(io::ErrorKind::BrokenPipe) {
                return true;
            }
        }
        next = err.source();
    }
    false
}

/// End the process after a failed write to standard output: quietly with 0 when the reader has
/// gone away, else with the error and 2.
fn exit_on(err: &io::Error) -> ! {
    if err.kind() == io::ErrorKind::BrokenPipe {
        std::process::exit(0);
    }
    eprintln!("error: cannot write to standard output: {err}");
    std::process::exit(2);
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_cause_the_message_already_says_is_printed_once() {
        #[derive(Debug, thiserror::Error)]
        #[error("{path}: {source}")]
        struct Quoting {
            path: String,
            source: std::io::Error,
        }
        #[derive(Debug, thiserror::Error)]
        #[error("cannot record")]
        struct Outer(#[source] Quoting);
        let err = Outer(Quoting {
            path: "a.md".into(),
            source: std::io::Error::other("disk full"),
        });
        let chain = std::iter::successors(Some(&err as &(dyn std::error::Error + 'static)), |e| {
            e.source()
        });
        assert_eq!(super::error_chain(chain), "cannot record: a.md: disk full");
        // anyhow's context over it: each level once
        let err = anyhow::Error::new(err).context("lesson record flaky-retries");
        assert_eq!(
            super::error_chain(err.chain()),
            "lesson record flaky-retries: cannot record: a.md: disk full"
        );
    }
}
