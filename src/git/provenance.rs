//! Provenance: when each lesson was created and last changed, by which commit and author, read
//! from history in one pass for the whole bank.
//!
//! One walk from HEAD back through the commits (newest first) follows every lesson of HEAD's
//! tree at once: each non-merge commit whose bank folder differs from its parent's is compared
//! with that parent (the bank's folder only, and inside it only lesson files: top-level and
//! subfolder `*.md` and `_archive/*.md`), deletions and additions of one commit are paired into
//! renames (exact by blob, else by line similarity of at least one half, as git's default
//! rename detection), and each lesson is followed under the name it had in that commit. A
//! lesson's newest touching commit is its **changed** stamp, the commit that added it (or the
//! oldest touching one) its **created** stamp. A rename and a move to `_archive/` are changes
//! of the lesson, never a new lesson.
//!
//! The result is cached in `.lesson/provenance`, keyed by HEAD and the bank's folder in the
//! repository. When HEAD moved forward (the cached HEAD is its ancestor), only the new commits
//! are walked and the lessons still followed at the old HEAD take their cached stamps.
//!
//! Merge commits are not compared (their changes are the branches' commits); on history with
//! branches, a change made on one branch under a name the other branch renamed may be missed,
//! as `git log --follow` misses it.

use std::collections::HashMap;
use std::path::Path;

use git2::{ObjectType, Oid, Repository, Sort, Tree};

use super::repo::{BankRepo, GitError};
use crate::layout::{self, ARCHIVE_DIR};

/// The format line the cache starts with.
const CACHE_MAGIC: &str = "lesson-provenance 1";
/// More deletion × addition pairs than this in one commit are paired by blob only.
const MAX_SIMILARITY_PAIRS: usize = 10_000;
/// Files larger than this are paired by blob only (lessons are small).
const MAX_SIMILARITY_BYTES: usize = 256 * 1024;

/// A commit as provenance shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Stamp {
    /// The commit's full hash.
    pub commit: String,
    /// The author's name.
    pub author: String,
    /// The author's email.
    pub email: String,
    /// When it was authored.
    pub time: jiff::Timestamp,
}

impl Stamp {
    /// A commit's hash, author and author time.
    pub fn of(commit: &git2::Commit<'_>) -> Stamp {
        let author = commit.author();
        Stamp {
            commit: commit.id().to_string(),
            author: author.name().unwrap_or("").to_string(),
            email: author.email().unwrap_or("").to_string(),
            time: jiff::Timestamp::from_second(author.when().seconds())
                .unwrap_or(jiff::Timestamp::UNIX_EPOCH),
        }
    }
}

/// One lesson's provenance.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LessonStamps<'a> {
    /// The commit that added the lesson (under whatever name it had then).
    pub created: &'a Stamp,
    /// The newest commit that changed, renamed or moved it.
    pub changed: &'a Stamp,
}

/// The provenance of every committed lesson of a bank, as of one HEAD.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Provenance {
    /// The commit it was read at.
    pub head: String,
    /// The bank's folder in the repository (`""` at the root).
    pub prefix: String,
    stamps: Vec<Stamp>,
    /// Path relative to the bank → (created, changed), indexes into `stamps`.
    lessons: HashMap<String, (u32, u32)>,
}

/// How much work [`Provenance::of_bank`] did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Walked {
    /// Commits visited.
    pub commits: usize,
    /// Commits whose bank folder was compared with their parent's.
    pub compared: usize,
    /// Whether the walk continued a cached result (or the cache was current: `commits == 0`).
    pub from_cache: bool,
}

impl Provenance {
    /// The provenance of a lesson by its path relative to the bank (`a.md`, `_archive/a.md`).
    pub fn get(&self, bank_rel: &str) -> Option<LessonStamps<'_>> {
        let &(c, x) = self.lessons.get(bank_rel)?;
        Some(LessonStamps {
            created: &self.stamps[c as usize],
            changed: &self.stamps[x as usize],
        })
    }

    /// Lessons with a provenance.
    pub fn len(&self) -> usize {
        self.lessons.len()
    }

    /// Whether no lesson has one.
    pub fn is_empty(&self) -> bool {
        self.lessons.is_empty()
    }

    /// Every lesson's path relative to the bank and its stamps, in path order.
    pub fn iter(&self) -> impl Iterator<Item = (&str, LessonStamps<'_>)> {
        let mut paths: Vec<&String> = self.lessons.keys().collect();
        paths.sort();
        paths
            .into_iter()
            .map(|p| (p.as_str(), self.get(p).expect("listed path")))
    }

    /// The provenance of the bank at `root`, read from `.lesson/provenance` when it is current,
    /// else from history (only the commits since the cached HEAD when that is an ancestor) and
    /// then kept there. `None` when the bank is not in a git work tree or HEAD has no commit
    /// yet: such a bank has no provenance.
    pub fn of_bank(root: &Path) -> Result<Option<Provenance>, GitError> {
        Ok(Provenance::of_bank_walked(root)?.map(|(p, _)| p))
    }

    /// [`Provenance::of_bank`], with how much of history it walked.
    pub fn of_bank_walked(root: &Path) -> Result<Option<(Provenance, Walked)>, GitError> {
        Provenance::of_bank_cached(root, true)
    }

    /// [`Provenance::of_bank`] without writing the cache: for a bank that is only read (an
    /// included bank of a layered search).
    pub fn of_bank_unwritten(root: &Path) -> Result<Option<Provenance>, GitError> {
        Ok(Provenance::of_bank_cached(root, false)?.map(|(p, _)| p))
    }

    fn of_bank_cached(root: &Path, write: bool) -> Result<Option<(Provenance, Walked)>, GitError> {
        let cache_path = layout::state_path(root, layout::PROVENANCE_FILE);
        // the cache of this very HEAD, seen from the repository's files alone
        if let Some((head, prefix)) = super::repo::plain_head(root) {
            let cached = std::fs::read_to_string(&cache_path)
                .ok()
                .and_then(|text| Provenance::parse_cache(&text))
                .filter(|c| c.prefix == prefix && c.head == head);
            if let Some(cached) = cached {
                let walked = Walked {
                    from_cache: true,
                    ..Walked::default()
                };
                return Ok(Some((cached, walked)));
            }
        }
        let repo = match BankRepo::open(root) {
            Ok(repo) => repo,
            Err(GitError::NotARepository(_) | GitError::Bare(_) | GitError::Outside { .. }) => {
                return Ok(None)
            }
            Err(e) => return Err(e),
        };
        let head = match repo.repo.head().ok().and_then(|h| h.target()) {
            Some(oid) => oid,
            None => return Ok(None),
        };
        let cached = std::fs::read_to_string(&cache_path)
            .ok()
            .and_then(|text| Provenance::parse_cache(&text))
            .filter(|c| c.prefix == repo.prefix);
        if let Some(c) = &cached {
            if c.head == head.to_string() {
                let walked = Walked {
                    from_cache: true,
                    ..Walked::default()
                };
                return Ok(Some((cached.expect("checked"), walked)));
            }
        }
        let base = cached.filter(|c| {
            Oid::from_str(&c.head)
                .ok()
                .is_some_and(|old| repo.repo.graph_descendant_of(head, old).unwrap_or(false))
        });
        let (provenance, walked) = walk(&repo.repo, &repo.prefix, head, base)?;
        // a cache: keyed by its content (HEAD and prefix), any complete version is right, and
        // the rename is atomic; a bank that cannot be written is read all the same
        if write {
            let _ = write_cache(root, &provenance);
        }
        Ok(Some((provenance, walked)))
    }

    /// The cache's text: a header, the commits the lessons name, one line per lesson.
    pub fn to_cache(&self) -> String {
        let mut out = String::with_capacity(64 + self.lessons.len() * 48);
        out.push_str(CACHE_MAGIC);
        out.push('\n');
        out.push_str(&format!("head\t{}\n", self.head));
        out.push_str(&format!("prefix\t{}\n", self.prefix));
        out.push_str(&format!("commits\t{}\n", self.stamps.len()));
        for s in &self.stamps {
            out.push_str(&format!(
                "{}\t{}\t{}\t{}\n",
                s.commit,
                s.time.as_second(),
                clean(&s.author),
                clean(&s.email)
            ));
        }
        out.push_str(&format!("lessons\t{}\n", self.lessons.len()));
        let mut paths: Vec<(&String, &(u32, u32))> = self.lessons.iter().collect();
        paths.sort();
        for (path, (c, x)) in paths {
            out.push_str(&format!("{c}\t{x}\t{path}\n"));
        }
        out.push_str("end\n");
        out
    }

    /// The cache's text read back; `None` when it is not one (another version, torn).
    pub fn parse_cache(text: &str) -> Option<Provenance> {
        let mut lines = text.lines();
        if lines.next()? != CACHE_MAGIC {
            return None;
        }
        let head = lines.next()?.strip_prefix("head\t")?.to_string();
        let prefix = lines.next()?.strip_prefix("prefix\t")?.to_string();
        let n: usize = lines.next()?.strip_prefix("commits\t")?.parse().ok()?;
        let mut stamps = Vec::with_capacity(n);
        for _ in 0..n {
            let mut f = lines.next()?.splitn(4, '\t');
            let commit = f.next()?.to_string();
            let time = jiff::Timestamp::from_second(f.next()?.parse().ok()?).ok()?;
            let author = f.next()?.to_string();
            let email = f.next()?.to_string();
            stamps.push(Stamp {
                commit,
                author,
                email,
                time,
            });
        }
        let m: usize = lines.next()?.strip_prefix("lessons\t")?.parse().ok()?;
        let mut lessons = HashMap::with_capacity(m);
        for _ in 0..m {
            let mut f = lines.next()?.splitn(3, '\t');
            let c: u32 = f.next()?.parse().ok()?;
            let x: u32 = f.next()?.parse().ok()?;
            if c as usize >= n || x as usize >= n {
                return None;
            }
            lessons.insert(f.next()?.to_string(), (c, x));
        }
        if lines.next()? != "end" || lines.next().is_some() {
            return None;
        }
        Some(Provenance {
            head,
            prefix,
            stamps,
            lessons,
        })
    }
}

/// Tabs and line breaks in a name would break the cache's lines.
fn clean(s: &str) -> String {
    s.replace(['\t', '\n', '\r'], " ")
}

fn write_cache(root: &Path, provenance: &Provenance) -> Result<(), crate::edit::EditError> {
    let dir = root.join(layout::STATE_DIR);
    if !dir.is_dir() {
        std::fs::create_dir_all(&dir).map_err(|source| crate::edit::EditError::Io {
            path: dir.display().to_string(),
            source,
        })?;
    }
    // the cache ignores itself, in banks that `lesson init` did not set up too
    let ignore = dir.join(layout::GITIGNORE);
    if !ignore.exists() {
        crate::edit::write_atomic(root, &ignore, b"*\n")?;
    }
    crate::edit::write_atomic(
        root,
        &layout::state_path(root, layout::PROVENANCE_FILE),
        provenance.to_cache().as_bytes(),
    )
}

/// Whether a path relative to the bank is a lesson provenance follows: a lesson file of the
/// live set (as the walker finds them) or one moved to `_archive/`.
pub fn is_followed(bank_rel: &str) -> bool {
    let empty = globset::GlobSet::empty();
    crate::walk::is_lesson_path(bank_rel, &empty)
        || bank_rel
            .strip_prefix(ARCHIVE_DIR)
            .and_then(|r| r.strip_prefix('/'))
            .is_some_and(|r| !r.contains('/') && crate::walk::is_lesson_path(r, &empty))
}

/// Whether a folder of the bank can hold followed lessons.
fn folder_followed(bank_rel: &str) -> bool {
    let top = !bank_rel.contains('/');
    if top && bank_rel == ARCHIVE_DIR {
        return true;
    }
    if top && bank_rel == layout::TEMPLATES_DIR {
        return false;
    }
    bank_rel
        .split('/')
        .all(|p| !p.is_empty() && !p.starts_with('.') && !p.starts_with('_'))
        && !bank_rel.starts_with("_archive/")
}

/// What one commit did to the bank's lessons, paths relative to the bank.
#[derive(Debug, Default, PartialEq)]
pub(super) struct Changes {
    pub(super) added: Vec<(String, Oid)>,
    pub(super) deleted: Vec<(String, Oid)>,
    pub(super) modified: Vec<String>,
}

/// A lesson being followed back through history.
struct Followed {
    /// Its path at HEAD, relative to the bank.
    path: String,
    changed: Option<u32>,
    created: Option<u32>,
}

/// The bank's subtree in a commit's tree (`None` when the commit has no such folder).
fn bank_tree<'r>(
    repo: &'r Repository,
    commit: &git2::Commit<'r>,
    prefix: &str,
) -> Option<Tree<'r>> {
    let tree = commit.tree().ok()?;
    if prefix.is_empty() {
        return Some(tree);
    }
    let entry = tree.get_path(Path::new(prefix)).ok()?;
    if entry.kind() != Some(ObjectType::Tree) {
        return None;
    }
    repo.find_tree(entry.id()).ok()
}

/// Git's tree order: names compare bytewise, a folder's as if it ended in `/`.
fn tree_order(a: &[u8], a_dir: bool, b: &[u8], b_dir: bool) -> std::cmp::Ordering {
    let n = a.len().min(b.len());
    match a[..n].cmp(&b[..n]) {
        std::cmp::Ordering::Equal => {}
        o => return o,
    }
    let next = |s: &[u8], dir: bool| s.get(n).copied().or(if dir { Some(b'/') } else { None });
    next(a, a_dir).cmp(&next(b, b_dir))
}

fn is_tree(e: &git2::TreeEntry<'_>) -> bool {
    e.kind() == Some(ObjectType::Tree)
}

fn join(dir: &str, name: &str) -> String {
    if dir.is_empty() {
        name.to_string()
    } else {
        format!("{dir}/{name}")
    }
}

/// Every followed lesson file of a tree (the bank's folder), with its blob.
fn list_tree(repo: &Repository, tree: &Tree<'_>, dir: &str, out: &mut Vec<(String, Oid)>) {
    for e in tree.iter() {
        let Ok(name) = std::str::from_utf8(e.name_bytes()) else {
            continue;
        };
        let path = join(dir, name);
        if is_tree(&e) {
            if folder_followed(&path) {
                if let Ok(sub) = repo.find_tree(e.id()) {
                    list_tree(repo, &sub, &path, out);
                }
            }
        } else if is_followed(&path) {
            out.push((path, e.id()));
        }
    }
}

/// The lesson files that differ between two trees of the bank's folder: a merge of the two
/// sorted entry lists, descending only into folders whose trees differ.
fn diff_trees(
    repo: &Repository,
    old: Option<&Tree<'_>>,
    new: Option<&Tree<'_>>,
    dir: &str,
    out: &mut Changes,
) {
    let (old_len, new_len) = (old.map_or(0, |t| t.len()), new.map_or(0, |t| t.len()));
    let (mut i, mut j) = (0, 0);
    while i < old_len || j < new_len {
        let a = old.and_then(|t| t.get(i)).filter(|_| i < old_len);
        let b = new.and_then(|t| t.get(j)).filter(|_| j < new_len);
        let order = match (&a, &b) {
            (Some(a), Some(b)) => {
                tree_order(a.name_bytes(), is_tree(a), b.name_bytes(), is_tree(b))
            }
            (Some(_), None) => std::cmp::Ordering::Less,
            (None, _) => std::cmp::Ordering::Greater,
        };
        match order {
            std::cmp::Ordering::Less => {
                let a = a.expect("old entry");
                gone_or_new(repo, &a, dir, out, true);
                i += 1;
            }
            std::cmp::Ordering::Greater => {
                let b = b.expect("new entry");
                gone_or_new(repo, &b, dir, out, false);
                j += 1;
            }
            std::cmp::Ordering::Equal => {
                let (a, b) = (a.expect("old entry"), b.expect("new entry"));
                i += 1;
                j += 1;
                if a.id() == b.id() {
                    continue;
                }
                let Ok(name) = std::str::from_utf8(b.name_bytes()) else {
                    continue;
                };
                let path = join(dir, name);
                match (is_tree(&a), is_tree(&b)) {
                    (true, true) => {
                        if folder_followed(&path) {
                            let (ot, nt) =
                                (repo.find_tree(a.id()).ok(), repo.find_tree(b.id()).ok());
                            diff_trees(repo, ot.as_ref(), nt.as_ref(), &path, out);
                        }
                    }
                    (false, false) => {
                        if is_followed(&path) {
                            out.modified.push(path);
                        }
                    }
                    _ => {
                        gone_or_new(repo, &a, dir, out, true);
                        gone_or_new(repo, &b, dir, out, false);
                    }
                }
            }
        }
    }
}

/// An entry only one side has: its lesson files deleted (`gone`) or added.
fn gone_or_new(
    repo: &Repository,
    e: &git2::TreeEntry<'_>,
    dir: &str,
    out: &mut Changes,
    gone: bool,
) {
    let Ok(name) = std::str::from_utf8(e.name_bytes()) else {
        return;
    };
    let path = join(dir, name);
    let mut files = Vec::new();
    if is_tree(e) {
        if folder_followed(&path) {
            if let Ok(sub) = repo.find_tree(e.id()) {
                list_tree(repo, &sub, &path, &mut files);
            }
        }
    } else if is_followed(&path) {
        files.push((path, e.id()));
    }
    if gone {
        out.deleted.extend(files);
    } else {
        out.added.extend(files);
    }
}

/// Pairs a commit's deletions with its additions: the same blob first, then the most similar
/// pair of at least one half of their lines. Returns (old path, new path) pairs and leaves the
/// rest in `changes`.
fn renames(repo: &Repository, changes: &mut Changes) -> Vec<(String, String)> {
    let mut pairs = Vec::new();
    if changes.added.is_empty() || changes.deleted.is_empty() {
        return pairs;
    }
    // exact: the same blob
    let mut by_blob: HashMap<Oid, Vec<usize>> = HashMap::new();
    for (i, (_, oid)) in changes.deleted.iter().enumerate() {
        by_blob.entry(*oid).or_default().push(i);
    }
    let mut used_old = vec![false; changes.deleted.len()];
    let mut used_new = vec![false; changes.added.len()];
    for (j, (_, oid)) in changes.added.iter().enumerate() {
        if let Some(list) = by_blob.get_mut(oid) {
            if let Some(i) = list.pop() {
                used_old[i] = true;
                used_new[j] = true;
                pairs.push((changes.deleted[i].0.clone(), changes.added[j].0.clone()));
            }
        }
    }
    let olds: Vec<usize> = (0..used_old.len()).filter(|&i| !used_old[i]).collect();
    let news: Vec<usize> = (0..used_new.len()).filter(|&j| !used_new[j]).collect();
    if !olds.is_empty() && !news.is_empty() && olds.len() * news.len() <= MAX_SIMILARITY_PAIRS {
        let lines = |oid: Oid| -> Option<HashMap<Vec<u8>, u32>> {
            let blob = repo.find_blob(oid).ok()?;
            if blob.size() > MAX_SIMILARITY_BYTES {
                return None;
            }
            let mut m = HashMap::new();
            for l in blob.content().split(|&c| c == b'\n') {
                *m.entry(l.to_vec()).or_insert(0) += 1;
            }
            Some(m)
        };
        let old_lines: Vec<_> = olds.iter().map(|&i| lines(changes.deleted[i].1)).collect();
        let new_lines: Vec<_> = news.iter().map(|&j| lines(changes.added[j].1)).collect();
        let mut scored = Vec::new();
        for (a, ol) in old_lines.iter().enumerate() {
            let Some(ol) = ol else { continue };
            let ol_n: u32 = ol.values().sum();
            for (b, nl) in new_lines.iter().enumerate() {
                let Some(nl) = nl else { continue };
                let nl_n: u32 = nl.values().sum();
                let common: u32 = ol
                    .iter()
                    .map(|(l, &c)| c.min(nl.get(l).copied().unwrap_or(0)))
                    .sum();
                let score = f64::from(common) / f64::from(ol_n.max(nl_n).max(1));
                if score >= 0.5 {
                    scored.push((score, a, b));
                }
            }
        }
        // best pairs first; ties by position, so the result is deterministic
        scored.sort_by(|x, y| y.0.total_cmp(&x.0).then((x.1, x.2).cmp(&(y.1, y.2))));
        for (_, a, b) in scored {
            let (i, j) = (olds[a], news[b]);
            if used_old[i] || used_new[j] {
                continue;
            }
            used_old[i] = true;
            used_new[j] = true;
            pairs.push((changes.deleted[i].0.clone(), changes.added[j].0.clone()));
        }
    }
    let mut j = 0;
    changes.added.retain(|_| {
        j += 1;
        !used_new[j - 1]
    });
    let mut i = 0;
    changes.deleted.retain(|_| {
        i += 1;
        !used_old[i - 1]
    });
    pairs
}

/// (old path, new path) pairs of one commit.
pub(super) type Renames = Vec<(String, String)>;

/// What one non-merge commit did to the bank's lessons (renames paired), paths relative to the
/// bank; `None` when its bank folder equals its parent's.
pub(super) fn commit_changes<'r>(
    repo: &'r Repository,
    commit: &git2::Commit<'_>,
    prefix: &str,
    trees: &mut TreeCache<'r>,
) -> Result<Option<(Changes, Renames)>, GitError> {
    let new_id = trees.bank_tree_id(commit, prefix);
    let parent = match commit.parent_count() {
        0 => None,
        _ => Some(commit.parent(0)?),
    };
    let old_id = parent.as_ref().and_then(|p| trees.bank_tree_id(p, prefix));
    if new_id == old_id {
        return Ok(None);
    }
    let new = new_id.and_then(|id| trees.tree(repo, id));
    let old = old_id.and_then(|id| repo.find_tree(id).ok());
    let mut changes = Changes::default();
    diff_trees(repo, old.as_ref(), new.as_ref(), "", &mut changes);
    let pairs = renames(repo, &mut changes);
    // walking back, the parent's folder is usually the next commit's: it is not read twice
    trees.last = old;
    Ok(Some((changes, pairs)))
}

/// Bank-folder tree ids by commit (each commit's is looked up once, as a child and as a
/// parent), and the last parent's folder tree.
#[derive(Default)]
pub(super) struct TreeCache<'r> {
    ids: HashMap<Oid, Option<Oid>>,
    last: Option<Tree<'r>>,
}

impl<'r> TreeCache<'r> {
    /// The tree `id`, from the last one read when it is that one.
    fn tree(&mut self, repo: &'r Repository, id: Oid) -> Option<Tree<'r>> {
        match self.last.take() {
            Some(t) if t.id() == id => Some(t),
            _ => repo.find_tree(id).ok(),
        }
    }

    fn bank_tree_id(&mut self, commit: &git2::Commit<'_>, prefix: &str) -> Option<Oid> {
        if let Some(id) = self.ids.get(&commit.id()) {
            return *id;
        }
        let id = if prefix.is_empty() {
            Some(commit.tree_id())
        } else {
            commit
                .tree()
                .ok()
                .and_then(|t| t.get_path(Path::new(prefix)).ok())
                .filter(|e| e.kind() == Some(ObjectType::Tree))
                .map(|e| e.id())
        };
        self.ids.insert(commit.id(), id);
        id
    }
}

/// Walks history from `head` back (to the root, or to `base`'s HEAD), following every lesson
/// of HEAD's bank folder.
fn walk(
    repo: &Repository,
    prefix: &str,
    head: Oid,
    base: Option<Provenance>,
) -> Result<(Provenance, Walked), GitError> {
    let head_commit = repo.find_commit(head)?;
    let mut files = Vec::new();
    if let Some(tree) = bank_tree(repo, &head_commit, prefix) {
        list_tree(repo, &tree, "", &mut files);
    }
    let mut followed: Vec<Followed> = files
        .iter()
        .map(|(p, _)| Followed {
            path: p.clone(),
            changed: None,
            created: None,
        })
        .collect();
    // the name each followed lesson has at the commit being looked at
    let mut names: HashMap<String, usize> = files
        .into_iter()
        .enumerate()
        .map(|(i, (p, _))| (p, i))
        .collect();
    let mut stamps: Vec<Stamp> = Vec::new();
    let mut interned: HashMap<Oid, u32> = HashMap::new();
    let mut walked = Walked {
        from_cache: base.is_some(),
        ..Walked::default()
    };

    let mut revwalk = repo.revwalk()?;
    revwalk.set_sorting(Sort::TOPOLOGICAL | Sort::TIME)?;
    revwalk.push(head)?;
    if let Some(b) = &base {
        revwalk.hide(Oid::from_str(&b.head).map_err(GitError::Git)?)?;
    }
    let mut trees = TreeCache::default();
    for oid in revwalk {
        if names.is_empty() {
            break;
        }
        let oid = oid?;
        walked.commits += 1;
        let commit = repo.find_commit(oid)?;
        if commit.parent_count() > 1 {
            continue;
        }
        let Some((changes, pairs)) = commit_changes(repo, &commit, prefix, &mut trees)? else {
            continue;
        };
        walked.compared += 1;
        let mut stamp = || -> u32 {
            *interned.entry(oid).or_insert_with(|| {
                stamps.push(Stamp::of(&commit));
                (stamps.len() - 1) as u32
            })
        };
        let touch = |f: &mut Followed, s: u32| {
            f.changed.get_or_insert(s);
            f.created = Some(s);
        };
        for path in &changes.modified {
            if let Some(&i) = names.get(path) {
                touch(&mut followed[i], stamp());
            }
        }
        for (path, _) in &changes.added {
            if let Some(i) = names.remove(path) {
                // born here: nothing older is this lesson
                touch(&mut followed[i], stamp());
            }
        }
        // renames: first take every new name out, then put the old names in, so that a
        // swap (a → b, b → a) in one commit follows both
        let moved: Vec<(String, usize)> = pairs
            .into_iter()
            .filter_map(|(old, new)| names.remove(&new).map(|i| (old, i)))
            .collect();
        for (old, i) in moved {
            touch(&mut followed[i], stamp());
            names.insert(old, i);
        }
    }

    // lessons still followed at the end: the cached HEAD's stamps (or the oldest touch)
    let mut lessons = HashMap::with_capacity(followed.len());
    let base_index = |b: &Provenance, at: &str| b.lessons.get(at).copied();
    let mut from_base: HashMap<usize, (u32, u32)> = HashMap::new();
    if let Some(b) = &base {
        let mut remap: HashMap<u32, u32> = HashMap::new();
        let mut intern_base = |k: u32, stamps: &mut Vec<Stamp>| -> u32 {
            *remap.entry(k).or_insert_with(|| {
                stamps.push(b.stamps[k as usize].clone());
                (stamps.len() - 1) as u32
            })
        };
        for (name, &i) in &names {
            if let Some((c, x)) = base_index(b, name) {
                let c = intern_base(c, &mut stamps);
                let x = intern_base(x, &mut stamps);
                from_base.insert(i, (c, x));
            }
        }
    }
    for (i, f) in followed.into_iter().enumerate() {
        let old = from_base.get(&i).copied();
        let created = old.map(|(c, _)| c).or(f.created);
        let changed = f.changed.or(old.map(|(_, x)| x));
        if let (Some(c), Some(x)) = (created, changed) {
            lessons.insert(f.path, (c, x));
        }
    }
    // keep only the commits a lesson names, in first-use order
    let mut keep: Vec<Option<u32>> = vec![None; stamps.len()];
    let mut kept = Vec::new();
    let mut paths: Vec<&String> = lessons.keys().collect();
    paths.sort();
    let mut order = Vec::new();
    for p in paths {
        let (c, x) = lessons[p];
        order.push((p.clone(), c, x));
    }
    for (p, c, x) in order {
        let mut map = |k: u32| -> u32 {
            *keep[k as usize].get_or_insert_with(|| {
                kept.push(stamps[k as usize].clone());
                (kept.len() - 1) as u32
            })
        };
        let (c, x) = (map(c), map(x));
        lessons.insert(p, (c, x));
    }
    Ok((
        Provenance {
            head: head.to_string(),
            prefix: prefix.to_string(),
            stamps: kept,
            lessons,
        },
        walked,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::git::repo::run_git;

    fn git(dir: &Path, args: &[&str]) {
        let mut all = vec!["-c", "user.name=Ann", "-c", "user.email=ann@x"];
        all.extend_from_slice(args);
        run_git(dir, &all).unwrap();
    }

    fn commit(dir: &Path, msg: &str, date: &str) {
        git(dir, &["add", "-A"]);
        let out = std::process::Command::new("git")
            .args([
                "-c",
                "user.name=Ann",
                "-c",
                "user.email=ann@x",
                "-c",
                "commit.gpgsign=false",
            ])
            .args(["commit", "-qm", msg])
            .env("GIT_AUTHOR_DATE", date)
            .env("GIT_COMMITTER_DATE", date)
            .current_dir(dir)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }

    fn lesson(slug: &str, extra: &str) -> String {
        format!("---\nslug: {slug}\ntitle: A lesson about {slug}\ntrigger:\n  description: when {slug}\noutcome: success\n---\n\n# {slug}\n\nline one\nline two\nline three\n{extra}")
    }

    #[test]
    fn tree_order_puts_a_folder_after_a_file_of_its_name_with_a_dot() {
        use std::cmp::Ordering::*;
        assert_eq!(tree_order(b"a.md", false, b"a", true), Less, "'.' < '/'");
        assert_eq!(tree_order(b"a", true, b"a0", false), Less, "'/' < '0'");
        assert_eq!(tree_order(b"ab", false, b"ab", false), Equal);
        assert_eq!(tree_order(b"a", false, b"a.md", false), Less);
    }

    #[test]
    fn followed_paths_are_lessons_and_archived_lessons() {
        assert!(is_followed("a.md"));
        assert!(is_followed("sub/a.md"));
        assert!(is_followed("_archive/a.md"));
        assert!(!is_followed("_index.md"));
        assert!(!is_followed("_log/a.jsonl"));
        assert!(!is_followed("templates/x.md"));
        assert!(!is_followed(".lesson/x.md"));
        assert!(!is_followed("_archive/sub/a.md"));
    }

    #[test]
    fn one_walk_follows_edits_renames_and_archive_moves() {
        let tmp = tempfile::tempdir().unwrap();
        let top = tmp.path();
        git(top, &["init", "-q"]);
        let bank = top.join("lessons");
        std::fs::create_dir_all(&bank).unwrap();
        std::fs::write(top.join("README"), "x").unwrap();
        std::fs::write(bank.join("a.md"), lesson("a", "")).unwrap();
        std::fs::write(bank.join("b.md"), lesson("b", "")).unwrap();
        commit(top, "add a b", "2024-01-01T00:00:00Z");
        std::fs::write(top.join("README"), "y").unwrap();
        commit(top, "outside the bank", "2024-01-05T00:00:00Z");
        std::fs::write(bank.join("a.md"), lesson("a", "more\n")).unwrap();
        commit(top, "edit a", "2024-02-01T00:00:00Z");
        std::fs::remove_file(bank.join("a.md")).unwrap();
        std::fs::write(bank.join("a2.md"), lesson("a2", "more\n")).unwrap();
        commit(top, "rename a", "2024-03-01T00:00:00Z");
        std::fs::create_dir_all(bank.join("_archive")).unwrap();
        std::fs::rename(bank.join("b.md"), bank.join("_archive/b.md")).unwrap();
        commit(top, "archive b", "2024-04-01T00:00:00Z");
        std::fs::write(bank.join("c.md"), lesson("c", "")).unwrap();
        commit(top, "add c", "2024-05-01T00:00:00Z");

        let (p, walked) = Provenance::of_bank_walked(&bank).unwrap().unwrap();
        assert!(!walked.from_cache);
        assert_eq!(walked.commits, 6);
        assert_eq!(p.prefix, "lessons");
        assert_eq!(p.len(), 3);
        let a2 = p.get("a2.md").unwrap();
        assert_eq!(a2.created.time.to_string(), "2024-01-01T00:00:00Z");
        assert_eq!(a2.changed.time.to_string(), "2024-03-01T00:00:00Z");
        assert_eq!(a2.created.author, "Ann");
        let b = p.get("_archive/b.md").unwrap();
        assert_eq!(b.created.time.to_string(), "2024-01-01T00:00:00Z");
        assert_eq!(b.changed.time.to_string(), "2024-04-01T00:00:00Z");
        assert_eq!(b.created.commit, a2.created.commit);
        let c = p.get("c.md").unwrap();
        assert_eq!(c.created, c.changed);
        assert!(p.get("a.md").is_none());

        // the cache answers for the same HEAD
        let (again, walked) = Provenance::of_bank_walked(&bank).unwrap().unwrap();
        assert_eq!((walked.from_cache, walked.commits), (true, 0));
        assert_eq!(again, p);

        // one new commit: only it is walked, and the result is what a full walk gives
        std::fs::write(bank.join("c.md"), lesson("c", "edited\n")).unwrap();
        std::fs::rename(bank.join("a2.md"), bank.join("a3.md")).unwrap();
        commit(top, "edit c, rename a2", "2024-06-01T00:00:00Z");
        let (inc, walked) = Provenance::of_bank_walked(&bank).unwrap().unwrap();
        assert_eq!((walked.from_cache, walked.commits), (true, 1));
        assert_eq!(
            inc.get("c.md").unwrap().changed.time.to_string(),
            "2024-06-01T00:00:00Z"
        );
        assert_eq!(
            inc.get("c.md").unwrap().created.time.to_string(),
            "2024-05-01T00:00:00Z"
        );
        assert_eq!(
            inc.get("a3.md").unwrap().created.time.to_string(),
            "2024-01-01T00:00:00Z"
        );
        std::fs::remove_file(layout::state_path(&bank, layout::PROVENANCE_FILE)).unwrap();
        let (full, walked) = Provenance::of_bank_walked(&bank).unwrap().unwrap();
        assert!(!walked.from_cache);
        assert_eq!(full.to_cache(), inc.to_cache());
    }

    #[test]
    fn a_bank_outside_git_or_without_commits_has_none() {
        let tmp = tempfile::tempdir().unwrap();
        if BankRepo::open(tmp.path()).is_err() {
            assert_eq!(Provenance::of_bank(tmp.path()).unwrap(), None);
        }
        git(tmp.path(), &["init", "-q"]);
        assert_eq!(Provenance::of_bank(tmp.path()).unwrap(), None);
    }

    #[test]
    fn the_cache_round_trips_and_refuses_torn_text() {
        let p = Provenance {
            head: "ab".into(),
            prefix: "x".into(),
            stamps: vec![Stamp {
                commit: "cd".into(),
                author: "A\tB".into(),
                email: "a@b".into(),
                time: jiff::Timestamp::from_second(5).unwrap(),
            }],
            lessons: [("a.md".to_string(), (0, 0))].into_iter().collect(),
        };
        let text = p.to_cache();
        let back = Provenance::parse_cache(&text).unwrap();
        assert_eq!(back.get("a.md").unwrap().created.author, "A B");
        assert_eq!(back.head, "ab");
        assert!(Provenance::parse_cache(&text[..text.len() - 3]).is_none());
        assert!(Provenance::parse_cache("lesson-provenance 0\n").is_none());
    }
}
