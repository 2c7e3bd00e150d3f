//! The bank files a change touches: one git diff of two trees (or of a tree and the working
//! tree), restricted to the bank's folder, with renames found by `find_similar`.

use std::collections::HashMap;

use crate::git::repo::{BankRepo, GitError};

/// How a file changed between the base and the head.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ChangeKind {
    /// New in the head (also an untracked file of the working tree, or a copy).
    Added,
    /// Gone from the head.
    Deleted,
    /// At the same path in both, with other bytes.
    Modified,
    /// Moved (git's rename detection paired the two paths), perhaps with other bytes.
    Renamed,
}

/// One changed file of the bank. Paths are relative to the bank, `/`-separated.
#[derive(Debug, Clone)]
pub struct Change {
    /// How it changed.
    pub kind: ChangeKind,
    /// Its path in the base (`None` when added).
    pub old: Option<String>,
    /// Its path in the head (`None` when deleted).
    pub new: Option<String>,
    old_id: git2::Oid,
    new_id: git2::Oid,
}

/// A file of a tree: its path relative to the bank, and its bytes.
pub type TreeFile = (String, Vec<u8>);

/// The head a base is compared with.
pub enum Head<'r> {
    /// The working tree (tracked and untracked files, as `git status` sees them).
    WorkTree,
    /// A commit.
    Commit(git2::Commit<'r>),
}

/// Every changed file of the bank between two versions, and their bytes on demand.
pub struct Changes<'r> {
    repo: &'r BankRepo,
    base: git2::Commit<'r>,
    head: Head<'r>,
    /// The changes, in the diff's order (by path).
    pub changes: Vec<Change>,
    by_new: HashMap<String, usize>,
    by_old: HashMap<String, usize>,
}

/// The tree of the bank's folder in a commit's `tree` (`None` when the commit has no such
/// folder: every file is then added or deleted).
fn bank_tree<'r>(
    repo: &'r BankRepo,
    tree: &git2::Tree<'r>,
) -> Result<Option<git2::Tree<'r>>, GitError> {
    if repo.prefix.is_empty() {
        return Ok(Some(tree.clone()));
    }
    match tree.get_path(std::path::Path::new(&repo.prefix)) {
        Ok(entry) => Ok(entry.to_object(&repo.repo)?.into_tree().ok()),
        Err(e) if e.code() == git2::ErrorCode::NotFound => Ok(None),
        Err(e) => Err(e.into()),
    }
}

/// Rename detection compares every added file with every deleted one: past this many, git's
/// own default gives up too (`diff.renameLimit`); archives are exact renames, found first.
const RENAME_LIMIT: usize = 10_000;

impl<'r> Changes<'r> {
    /// The changes from `base` to `head`, in one diff of the two trees (or of the base tree and
    /// the working tree, through the index's stat cache, as `git diff REV` does).
    pub fn between(
        repo: &'r BankRepo,
        base: git2::Commit<'r>,
        head: Head<'r>,
    ) -> Result<Changes<'r>, GitError> {
        let mut opts = git2::DiffOptions::new();
        opts.ignore_submodules(true).skip_binary_check(true);
        let base_tree = base.tree()?;
        // two commits are compared as their bank folders' trees, paths relative to the bank: no
        // pathspec is matched against every entry of the repository's trees
        let mut bank_relative = false;
        let mut diff = match &head {
            Head::Commit(commit) if commit.tree_id() == base_tree.id() => {
                // the same tree: nothing changed, and nothing needs reading
                return Ok(Changes {
                    repo,
                    base,
                    head,
                    changes: Vec::new(),
                    by_new: HashMap::new(),
                    by_old: HashMap::new(),
                });
            }
            Head::Commit(commit) => {
                let tree = commit.tree()?;
                bank_relative = true;
                repo.repo.diff_tree_to_tree(
                    bank_tree(repo, &base_tree)?.as_ref(),
                    bank_tree(repo, &tree)?.as_ref(),
                    Some(&mut opts),
                )?
            }
            Head::WorkTree => {
                if !repo.prefix.is_empty() {
                    opts.pathspec(format!("{}/", repo.prefix));
                }
                opts.include_untracked(true).recurse_untracked_dirs(true);
                repo.repo
                    .diff_tree_to_workdir_with_index(Some(&base_tree), Some(&mut opts))?
            }
        };
        let mut find = git2::DiffFindOptions::new();
        find.renames(true)
            .for_untracked(true)
            .rename_limit(RENAME_LIMIT);
        diff.find_similar(Some(&mut find))?;
        let mut changes = Vec::new();
        for delta in diff.deltas() {
            let path = |f: git2::DiffFile<'_>| {
                f.path()
                    .map(|p| p.to_string_lossy().replace('\\', "/"))
                    .and_then(|p| {
                        if bank_relative {
                            Some(p)
                        } else {
                            repo.bank_path(&p).map(str::to_string)
                        }
                    })
            };
            let (old, new) = (path(delta.old_file()), path(delta.new_file()));
            let (old_id, new_id) = (delta.old_file().id(), delta.new_file().id());
            let change = |kind, old, new| Change {
                kind,
                old,
                new,
                old_id,
                new_id,
            };
            use git2::Delta as D;
            let found = match delta.status() {
                D::Added | D::Untracked | D::Copied => change(ChangeKind::Added, None, new),
                D::Deleted => change(ChangeKind::Deleted, old, None),
                D::Renamed => change(ChangeKind::Renamed, old, new),
                D::Modified | D::Typechange | D::Conflicted => {
                    change(ChangeKind::Modified, old, new)
                }
                D::Unmodified | D::Ignored | D::Unreadable => continue,
            };
            // a file outside the bank (the pathspec is a prefix match) is no change of it
            if found.old.is_none() && found.new.is_none() {
                continue;
            }
            changes.push(found);
        }
        let mut by_new = HashMap::new();
        let mut by_old = HashMap::new();
        for (i, c) in changes.iter().enumerate() {
            if let Some(new) = &c.new {
                by_new.insert(new.clone(), i);
            }
            if let Some(old) = &c.old {
                by_old.insert(old.clone(), i);
            }
        }
        Ok(Changes {
            repo,
            base,
            head,
            changes,
            by_new,
            by_old,
        })
    }

    /// The change whose head path is `rel`.
    pub fn at_new(&self, rel: &str) -> Option<&Change> {
        self.by_new.get(rel).map(|&i| &self.changes[i])
    }

    /// The change whose base path is `rel`.
    pub fn at_old(&self, rel: &str) -> Option<&Change> {
        self.by_old.get(rel).map(|&i| &self.changes[i])
    }

    /// Whether the file at `rel` differs between the base and the head (at that path).
    pub fn touches(&self, rel: &str) -> bool {
        self.by_new.contains_key(rel) || self.by_old.contains_key(rel)
    }

    /// The base version of the file at `rel`, if the base has it.
    pub fn base_bytes(&self, rel: &str) -> Result<Option<Vec<u8>>, GitError> {
        match self.at_old(rel) {
            Some(c) if !c.old_id.is_zero() => self.blob(c.old_id).map(Some),
            _ => self.repo.read_at(&self.base, rel),
        }
    }

    /// The head version of the file at `rel`, if the head has it.
    pub fn head_bytes(&self, rel: &str) -> Result<Option<Vec<u8>>, GitError> {
        match &self.head {
            Head::WorkTree => {
                let path = self.repo.bank.join(rel);
                match std::fs::read(&path) {
                    Ok(bytes) => Ok(Some(bytes)),
                    Err(e)
                        if matches!(
                            e.kind(),
                            std::io::ErrorKind::NotFound | std::io::ErrorKind::NotADirectory
                        ) =>
                    {
                        Ok(None)
                    }
                    Err(source) => Err(GitError::Io { path, source }),
                }
            }
            Head::Commit(commit) => match self.at_new(rel) {
                Some(c) if !c.new_id.is_zero() => self.blob(c.new_id).map(Some),
                _ => self.repo.read_at(commit, rel),
            },
        }
    }

    /// Whether the head is the working tree.
    pub fn head_is_worktree(&self) -> bool {
        matches!(self.head, Head::WorkTree)
    }

    /// Every file of the head's bank (path relative to the bank, bytes) that `keep` accepts,
    /// read from the head commit's tree; `None` for the working tree (read it from disk).
    pub fn head_tree_files(
        &self,
        keep: impl Fn(&str) -> bool,
    ) -> Result<Option<Vec<TreeFile>>, GitError> {
        let Head::Commit(commit) = &self.head else {
            return Ok(None);
        };
        let mut tree = commit.tree()?;
        if !self.repo.prefix.is_empty() {
            match tree.get_path(std::path::Path::new(&self.repo.prefix)) {
                Ok(entry) => tree = entry.to_object(&self.repo.repo)?.peel_to_tree()?,
                Err(e) if e.code() == git2::ErrorCode::NotFound => return Ok(Some(Vec::new())),
                Err(e) => return Err(e.into()),
            }
        }
        let mut wanted = Vec::new();
        tree.walk(git2::TreeWalkMode::PreOrder, |dir, entry| {
            if entry.kind() == Some(git2::ObjectType::Blob) {
                if let Ok(name) = entry.name() {
                    let rel = format!("{dir}{name}");
                    if keep(&rel) {
                        wanted.push((rel, entry.id()));
                    }
                }
            }
            git2::TreeWalkResult::Ok
        })?;
        wanted
            .into_iter()
            .map(|(rel, id)| Ok((rel, self.blob(id)?)))
            .collect::<Result<Vec<_>, GitError>>()
            .map(Some)
    }

    fn blob(&self, id: git2::Oid) -> Result<Vec<u8>, GitError> {
        Ok(self.repo.repo.find_blob(id)?.content().to_vec())
    }
}
