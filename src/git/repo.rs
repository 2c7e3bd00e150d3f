//! The repository around a bank: discovery, the bank's folder in it, reading files at a revision,
//! and the system `git` for the network.
//!
//! A bank is any directory of a repository's work tree (the whole repository, or a folder of a
//! bigger one). Paths inside the repository are `/`-separated and relative to the work tree's
//! root; [`BankRepo::prefix`] is the bank's folder in those terms (`""` when the bank is the root).

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use thiserror::Error;

/// What can go wrong finding or using the repository around a bank.
#[derive(Debug, Error)]
pub enum GitError {
    /// The bank is not inside a git work tree.
    #[error("{}: not inside a git repository (run `git init`, or clone the bank's repository)", .0.display())]
    NotARepository(PathBuf),
    /// The repository has no work tree.
    #[error("{}: a bare repository has no work tree to hold a bank", .0.display())]
    Bare(PathBuf),
    /// The bank's directory could not be placed inside the work tree.
    #[error("{}: the bank is not inside the work tree {}", .bank.display(), .workdir.display())]
    Outside {
        /// The bank's directory.
        bank: PathBuf,
        /// The repository's work tree.
        workdir: PathBuf,
    },
    /// A revision that names no commit.
    #[error("`{0}` names no commit in this repository")]
    BadRevision(String),
    /// The system `git` is not installed.
    #[error("`git` was not found on PATH: lesson hands fetch and push to the system git (install git, or put it on PATH)")]
    GitMissing,
    /// The system `git` failed.
    #[error("`git {args}` failed ({status}): {stderr}")]
    Command {
        /// The arguments, space-separated.
        args: String,
        /// How it ended.
        status: String,
        /// What it printed on stderr, trimmed.
        stderr: String,
    },
    /// libgit2 failed.
    #[error(transparent)]
    Git(#[from] git2::Error),
    /// Reading a file failed.
    #[error("{}: {source}", .path.display())]
    Io {
        /// The file.
        path: PathBuf,
        /// The failure.
        source: std::io::Error,
    },
}

/// libgit2's settings for a bank, made once per process before its first repository is opened
/// ([`BankRepo::open`] is the library's one door to libgit2): a bank's folder is one tree of
/// all its lessons (about 7 MB at 100,000 lessons), and libgit2 caches no tree over 4 KiB by
/// default, so every path looked up in it, by us or by libgit2's own merge, read, inflated and
/// hashed the whole tree again (the largest cost of a sync at 100,000 lessons); trees up to
/// 256 MiB are cached, within libgit2's cache of 256 MiB in all.
fn tune_libgit2() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        // SAFETY: this writes libgit2's global cache settings; it runs once, before the first
        // repository of the process is opened through `BankRepo::open`, the only place the
        // library uses libgit2, so no other thread is reading them.
        let _ = unsafe { git2::opts::set_cache_object_limit(git2::ObjectType::Tree, 256 << 20) };
    });
}

/// The commit HEAD names in the plain repository around `bank`, and the bank's folder in its
/// work tree ([`BankRepo::prefix`]), read from the files alone: `.git/HEAD`, then the loose
/// ref it names or its line in `.git/packed-refs`. What a search needs to trust a cache keyed
/// by HEAD, for a small part of what opening the repository with libgit2 costs (its
/// configuration files, ownership and discovery: half a millisecond of a search).
///
/// `None` whenever the layout is not the plain one, and the caller opens the repository as
/// usual: a `.git` file (a worktree, a submodule), a directory on the way up that is itself a
/// git directory, a `.git` owned by another user, a ref that is itself symbolic, a ref
/// storage other than files (reftable), an unborn branch, anything unreadable. Like
/// [`BankRepo::open`], the search goes up from the canonical bank directory.
pub fn plain_head(bank: &Path) -> Option<(String, String)> {
    let bank = bank.canonicalize().ok()?;
    let mut dir = bank.as_path();
    let git = loop {
        let candidate = dir.join(".git");
        match std::fs::symlink_metadata(&candidate) {
            Ok(meta) if meta.is_dir() => {
                #[cfg(unix)]
                {
                    use std::os::unix::fs::MetadataExt;
                    // SAFETY: geteuid has no preconditions
                    if meta.uid() != unsafe { libc::geteuid() } {
                        return None;
                    }
                }
                break candidate;
            }
            Ok(_) => return None,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(_) => return None,
        }
        // a bare repository on the way up: libgit2 would stop there
        if dir.join("HEAD").exists() && dir.join("objects").is_dir() {
            return None;
        }
        dir = dir.parent()?;
    };
    let head = std::fs::read_to_string(git.join("HEAD")).ok()?;
    let head = head.trim_end();
    let oid = match head.strip_prefix("ref: ") {
        None => head.to_string(),
        Some(name) => {
            if !name.starts_with("refs/") || name.split('/').any(|c| c.is_empty() || c == "..") {
                return None;
            }
            match std::fs::read_to_string(git.join(name)) {
                Ok(text) => text.trim_end().to_string(),
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                    let packed = std::fs::read_to_string(git.join("packed-refs")).ok()?;
                    packed
                        .lines()
                        .filter(|l| !l.starts_with('#') && !l.starts_with('^'))
                        .find_map(|l| {
                            let (oid, refname) = l.split_once(' ')?;
                            (refname == name).then(|| oid.to_string())
                        })?
                }
                Err(_) => return None,
            }
        }
    };
    let hex = |s: &str| {
        s.bytes()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
    };
    if !(oid.len() == 40 || oid.len() == 64) || !hex(&oid) {
        return None;
    }
    Some((oid, folder_in(dir, &bank)?))
}

/// `bank`'s folder inside `workdir` (both canonical), `/`-separated, `""` for the work tree's
/// root; `None` when it lies outside.
fn folder_in(workdir: &Path, bank: &Path) -> Option<String> {
    let rel = bank.strip_prefix(workdir).ok()?;
    Some(
        rel.components()
            .map(|c| c.as_os_str().to_string_lossy())
            .collect::<Vec<_>>()
            .join("/"),
    )
}

/// A bank's repository: the libgit2 handle, its work tree and the bank's folder in it.
pub struct BankRepo {
    /// The repository.
    pub repo: git2::Repository,
    /// The work tree's root, canonical.
    pub workdir: PathBuf,
    /// The bank's directory, canonical.
    pub bank: PathBuf,
    /// The bank's folder inside the work tree, `/`-separated, without a trailing `/`; `""` when
    /// the bank is the work tree's root.
    pub prefix: String,
}

impl BankRepo {
    /// The repository whose work tree holds `bank` (searching up from it, as `git` does).
    pub fn open(bank: &Path) -> Result<BankRepo, GitError> {
        tune_libgit2();
        let canonical = bank.canonicalize().map_err(|source| GitError::Io {
            path: bank.to_path_buf(),
            source,
        })?;
        let repo = match git2::Repository::discover(&canonical) {
            Ok(repo) => repo,
            Err(e) if e.code() == git2::ErrorCode::NotFound => {
                return Err(GitError::NotARepository(bank.to_path_buf()))
            }
            Err(e) => return Err(e.into()),
        };
        let Some(workdir) = repo.workdir() else {
            return Err(GitError::Bare(repo.path().to_path_buf()));
        };
        let workdir = workdir.canonicalize().map_err(|source| GitError::Io {
            path: workdir.to_path_buf(),
            source,
        })?;
        let prefix = folder_in(&workdir, &canonical).ok_or_else(|| GitError::Outside {
            bank: canonical.clone(),
            workdir: workdir.clone(),
        })?;
        Ok(BankRepo {
            repo,
            workdir,
            bank: canonical,
            prefix,
        })
    }

    /// A path relative to the bank as a path in the repository (`/`-separated).
    pub fn repo_path(&self, bank_rel: &str) -> String {
        if self.prefix.is_empty() {
            bank_rel.to_string()
        } else {
            format!("{}/{bank_rel}", self.prefix)
        }
    }

    /// A path in the repository as a path relative to the bank; `None` when it lies outside the
    /// bank.
    pub fn bank_path<'a>(&self, repo_path: &'a str) -> Option<&'a str> {
        if self.prefix.is_empty() {
            return Some(repo_path);
        }
        repo_path
            .strip_prefix(self.prefix.as_str())
            .and_then(|rest| rest.strip_prefix('/'))
    }

    /// The commit a revision names (`HEAD`, a branch, a tag, `origin/main`, a hash, `HEAD~2`).
    pub fn commit(&self, rev: &str) -> Result<git2::Commit<'_>, GitError> {
        self.repo
            .revparse_single(rev)
            .and_then(|o| o.peel_to_commit())
            .map_err(|_| GitError::BadRevision(rev.to_string()))
    }

    /// The bytes of a bank file (path relative to the bank) in a commit; `None` when the commit
    /// has no such file.
    pub fn read_at(
        &self,
        commit: &git2::Commit<'_>,
        bank_rel: &str,
    ) -> Result<Option<Vec<u8>>, GitError> {
        let tree = commit.tree()?;
        match tree.get_path(Path::new(&self.repo_path(bank_rel))) {
            Ok(entry) => {
                let blob = entry.to_object(&self.repo)?.peel_to_blob()?;
                Ok(Some(blob.content().to_vec()))
            }
            Err(e) if e.code() == git2::ErrorCode::NotFound => Ok(None),
            Err(e) => Err(e.into()),
        }
    }

    /// Runs the system `git` in the work tree (for the network: fetch, push). Its stdin is
    /// closed, so that a credential prompt fails instead of waiting for a reader that is not
    /// there.
    pub fn git(&self, args: &[&str]) -> Result<Output, GitError> {
        run_git(&self.workdir, args)
    }
}

/// Runs the system `git` with `args` in `dir`; a non-zero exit is [`GitError::Command`].
pub fn run_git(dir: &Path, args: &[&str]) -> Result<Output, GitError> {
    let output = Command::new("git")
        .args(args)
        .current_dir(dir)
        .stdin(std::process::Stdio::null())
        .output()
        .map_err(|e| match e.kind() {
            std::io::ErrorKind::NotFound => GitError::GitMissing,
            _ => GitError::Io {
                path: dir.to_path_buf(),
                source: e,
            },
        })?;
    if output.status.success() {
        Ok(output)
    } else {
        Err(GitError::Command {
            args: args.join(" "),
            status: output.status.to_string(),
            stderr: String::from_utf8_lossy(&output.stderr).trim().to_string(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn git(dir: &Path, args: &[&str]) {
        run_git(dir, args).unwrap();
    }

    #[test]
    fn a_bank_folder_of_a_bigger_repository_has_its_prefix() {
        let tmp = tempfile::tempdir().unwrap();
        git(tmp.path(), &["init", "-q"]);
        let bank = tmp.path().join("docs/lessons");
        std::fs::create_dir_all(&bank).unwrap();
        let repo = BankRepo::open(&bank).unwrap();
        assert_eq!(repo.prefix, "docs/lessons");
        assert_eq!(repo.repo_path("_log/a.jsonl"), "docs/lessons/_log/a.jsonl");
        assert_eq!(repo.bank_path("docs/lessons/a.md"), Some("a.md"));
        assert_eq!(repo.bank_path("docs/lessons-old/a.md"), None);
        assert_eq!(repo.bank_path("README.md"), None);
        let root = BankRepo::open(tmp.path()).unwrap();
        assert_eq!(root.prefix, "");
        assert_eq!(root.bank_path("a.md"), Some("a.md"));
    }

    /// HEAD's commit and the prefix as libgit2 finds them, the oracle of [`plain_head`].
    fn head_by_libgit2(bank: &Path) -> Option<(String, String)> {
        let repo = BankRepo::open(bank).ok()?;
        let head = repo.repo.head().ok()?.target()?.to_string();
        Some((head, repo.prefix))
    }

    #[test]
    fn the_plain_head_is_libgit2s_or_none() {
        let tmp = tempfile::tempdir().unwrap();
        let top = tmp.path().join("repo");
        let bank = top.join("docs/lessons");
        std::fs::create_dir_all(&bank).unwrap();
        git(&top, &["init", "-q", "-b", "main"]);
        // an unborn branch: no commit to name
        assert_eq!(plain_head(&bank), None);
        let commit = |message: &str| {
            std::fs::write(bank.join("a.md"), message).unwrap();
            git(&top, &["add", "."]);
            let id = ["-c", "user.name=t", "-c", "user.email=t@x"];
            git(&top, &[&id[..], &["commit", "-qm", message]].concat());
        };
        commit("one");
        let expected = head_by_libgit2(&bank).unwrap();
        assert_eq!(expected.1, "docs/lessons");
        // a loose ref, from the bank and from the top
        assert_eq!(plain_head(&bank), Some(expected.clone()));
        let top_head = plain_head(&top).unwrap();
        assert_eq!(
            (top_head.0.as_str(), top_head.1.as_str()),
            (expected.0.as_str(), "")
        );
        // packed refs only, then a newer loose ref over a packed one
        git(&top, &["pack-refs", "--all"]);
        assert!(!top.join(".git/refs/heads/main").exists());
        assert_eq!(plain_head(&bank), Some(expected));
        commit("two");
        assert_eq!(plain_head(&bank), head_by_libgit2(&bank));
        // a detached HEAD
        git(&top, &["checkout", "-q", "--detach", "HEAD~1"]);
        assert_eq!(plain_head(&bank), head_by_libgit2(&bank));
        git(&top, &["checkout", "-q", "main"]);
        // a worktree's `.git` is a file: left to libgit2
        let other = tmp.path().join("other");
        git(
            &top,
            &["worktree", "add", "-q", other.to_str().unwrap(), "HEAD~1"],
        );
        assert!(head_by_libgit2(&other.join("docs/lessons")).is_some());
        assert_eq!(plain_head(&other.join("docs/lessons")), None);
        // a bank that is no directory
        assert_eq!(plain_head(&tmp.path().join("missing")), None);
    }

    #[test]
    fn a_directory_outside_any_repository_is_named() {
        let tmp = tempfile::tempdir().unwrap();
        // GIT_CEILING_DIRECTORIES is not read by libgit2's discover; the temp dir lies outside any
        // repository on CI and here.
        match BankRepo::open(tmp.path()) {
            Err(GitError::NotARepository(p)) => assert_eq!(p, tmp.path()),
            Err(e) => panic!("unexpected error {e}"),
            Ok(r) => assert!(
                !r.workdir.starts_with(tmp.path()),
                "found a repository in a fresh temp dir"
            ),
        }
    }

    #[test]
    fn a_file_is_read_at_a_revision() {
        let tmp = tempfile::tempdir().unwrap();
        git(tmp.path(), &["init", "-q"]);
        let bank = tmp.path().join("lessons");
        std::fs::create_dir_all(&bank).unwrap();
        std::fs::write(bank.join("a.md"), "one\n").unwrap();
        git(tmp.path(), &["add", "."]);
        git(
            tmp.path(),
            &[
                "-c",
                "user.name=t",
                "-c",
                "user.email=t@x",
                "commit",
                "-qm",
                "one",
            ],
        );
        std::fs::write(bank.join("a.md"), "two\n").unwrap();
        let repo = BankRepo::open(&bank).unwrap();
        let head = repo.commit("HEAD").unwrap();
        assert_eq!(
            repo.read_at(&head, "a.md").unwrap().as_deref(),
            Some(&b"one\n"[..])
        );
        assert_eq!(repo.read_at(&head, "b.md").unwrap(), None);
        assert!(matches!(
            repo.commit("no-such-branch"),
            Err(GitError::BadRevision(_))
        ));
    }
}
