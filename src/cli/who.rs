//! Who records ledger events, read at the edge (the library takes it as an argument): `--by`,
//! else `$LESSON_BY`, else `$USER@hostname`, else the git author's email when the bank is in a
//! git repository, else `uid<N>@hostname`. Never `unknown`: containers and CI often have no
//! `$USER`.

use std::path::Path;
use std::process::{Command, Stdio};

/// The environment variable that says who records events.
pub const BY_ENV: &str = "LESSON_BY";

/// Who records events for the bank at `root` when `--by` is not given.
pub fn recorder(root: &Path) -> String {
    let non_empty = |name: &str| std::env::var(name).ok().filter(|v| !v.trim().is_empty());
    if let Some(by) = non_empty(BY_ENV) {
        return by;
    }
    let host = hostname().unwrap_or_else(|| "localhost".into());
    let user = non_empty("USER")
        .or_else(|| non_empty("USERNAME"))
        .or_else(|| non_empty("LOGNAME"));
    if let Some(user) = user {
        return format!("{user}@{host}");
    }
    if let Some(author) = git_author(root) {
        return author;
    }
    format!("uid{}@{host}", uid())
}

/// The email (else the name) of the git author configured for the repository holding `root`,
/// if it is in one and `git` can say.
fn git_author(root: &Path) -> Option<String> {
    let abs = std::path::absolute(root).ok()?;
    if !abs.ancestors().any(|dir| dir.join(".git").exists()) {
        return None;
    }
    let out = Command::new("git")
        .arg("-C")
        .arg(root)
        .args(["var", "GIT_AUTHOR_IDENT"])
        .stdin(Stdio::null())
        .stderr(Stdio::null())
        .output()
        .ok()?;
    if !out.status.success() {
        return None;
    }
    // `Name <email> 1700000000 +0000`
    let ident = String::from_utf8(out.stdout).ok()?;
    let email = ident
        .split_once('<')
        .and_then(|(_, rest)| rest.split_once('>'))
        .map(|(email, _)| email.trim())
        .filter(|e| !e.is_empty());
    let name = ident.split_once('<').map(|(name, _)| name.trim());
    email
        .or(name)
        .filter(|id| !id.is_empty() && !id.contains(['\n', '\r']))
        .map(str::to_string)
}

fn hostname() -> Option<String> {
    let from_file = |p: &str| std::fs::read_to_string(p).ok();
    std::env::var("HOSTNAME")
        .ok()
        .or_else(|| std::env::var("COMPUTERNAME").ok())
        .or_else(|| from_file("/proc/sys/kernel/hostname"))
        .or_else(|| from_file("/etc/hostname"))
        .map(|h| h.trim().to_string())
        .filter(|h| !h.is_empty())
}

#[cfg(unix)]
fn uid() -> u32 {
    rustix::process::getuid().as_raw()
}

#[cfg(not(unix))]
fn uid() -> u32 {
    0
}
