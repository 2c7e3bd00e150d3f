//! Layered banks: the banks a bank includes (`[banks] include` in its `lesson.toml`), read
//! beside its own lessons and never written.
//!
//! The bank a command runs on is the *front* bank; it names other banks (a team's shared bank,
//! say), relative to its own directory, and each of those may include more. The stack is the
//! front bank, then every included bank depth-first in the order written, each once (a bank
//! two others include is read at its first place). Every write goes to the front bank.
//!
//! Resolution refuses, with the position of the entry in its `lesson.toml`: an entry that is
//! not a bank's directory (missing, not a directory, no `lesson.toml`), an include loop (a bank
//! that includes, directly or through others, a bank on the path to it), and a bank nested in
//! the front bank or holding it (its files would be read twice, or written as the front's).
//!
//! A bank that includes nothing resolves to nothing without touching the disk, so the
//! single-bank path does no extra work.

use std::path::{Component, Path, PathBuf};

use crate::config::{Config, ConfigError, CONFIG_FILE};

/// The name the front bank goes by in a layered answer.
pub const FRONT: &str = ".";

/// An included bank.
#[derive(Debug, Clone, PartialEq)]
pub struct Layer {
    /// Its name: its directory relative to the front bank (lexically normalised), or
    /// absolute when it was written so. Hits and rows name their bank by it.
    pub name: String,
    /// Its directory, as the front bank's path joined with the entries that lead to it.
    pub root: PathBuf,
    /// Its configuration.
    pub config: Config,
}

/// The banks the front bank at `root` (whose configuration is `config`) includes, in the
/// order they are read after it. Empty, without reading anything, when it includes none.
pub fn resolve(root: &Path, config: &Config) -> Result<Vec<Layer>, ConfigError> {
    if config.banks.include.is_empty() {
        return Ok(Vec::new());
    }
    let front = real(root, root)?;
    let mut out = Vec::new();
    let mut chain = vec![(front.clone(), FRONT.to_string())];
    visit(root, FRONT, config, &front, &mut chain, &mut out)?;
    Ok(out)
}

/// The included bank called `name` in `layers`.
pub fn find<'a>(layers: &'a [Layer], name: &str) -> Option<&'a Layer> {
    let wanted = normalise(Path::new(name));
    layers.iter().find(|l| l.name == name || l.name == wanted)
}

fn real(path: &Path, shown: &Path) -> Result<PathBuf, ConfigError> {
    path.canonicalize().map_err(|source| ConfigError::Io {
        path: shown.display().to_string(),
        source,
    })
}

fn visit(
    dir: &Path,
    name: &str,
    config: &Config,
    front: &Path,
    chain: &mut Vec<(PathBuf, String)>,
    out: &mut Vec<Layer>,
) -> Result<(), ConfigError> {
    let file = dir.join(CONFIG_FILE);
    let text = std::fs::read_to_string(&file).unwrap_or_default();
    let shown = file.display().to_string();
    let error = |i: usize, message: String| Config::include_error(&text, &shown, i, message);
    for (i, entry) in config.banks.include.iter().enumerate() {
        let path = Path::new(entry);
        let root = dir.join(path);
        let layer_name = if path.is_absolute() {
            normalise(path)
        } else {
            normalise(&Path::new(name).join(path))
        };
        let Ok(real) = root.canonicalize() else {
            return Err(error(
                i,
                format!(
                    "no bank at `{entry}` ({}): the directory does not exist",
                    root.display()
                ),
            ));
        };
        if !real.is_dir() {
            return Err(error(
                i,
                format!("`{entry}` ({}) is not a directory", root.display()),
            ));
        }
        if let Some(at) = chain.iter().position(|(r, _)| *r == real) {
            let mut names: Vec<&str> = chain[at..].iter().map(|(_, n)| n.as_str()).collect();
            names.push(&chain[at].1);
            return Err(error(
                i,
                format!(
                    "`{entry}` is an include loop ({}); a bank cannot include itself, directly or through others",
                    names.join(" -> ")
                ),
            ));
        }
        if real.starts_with(front) || front.starts_with(&real) {
            return Err(error(
                i,
                format!(
                    "`{entry}` ({}) is nested in the front bank or holds it; keep included banks in directories of their own",
                    root.display()
                ),
            ));
        }
        if out
            .iter()
            .any(|l: &Layer| l.root.canonicalize().ok().as_ref() == Some(&real))
        {
            continue;
        }
        if !root.join(CONFIG_FILE).is_file() {
            return Err(error(
                i,
                format!(
                    "`{entry}` ({}) is not a bank: it has no {CONFIG_FILE} (`lesson init` makes one)",
                    root.display()
                ),
            ));
        }
        let included = Config::load(&root)?;
        out.push(Layer {
            name: layer_name.clone(),
            root: root.clone(),
            config: included.clone(),
        });
        chain.push((real, layer_name.clone()));
        visit(&root, &layer_name, &included, front, chain, out)?;
        chain.pop();
    }
    Ok(())
}

/// `path` with `.` dropped and `dir/..` folded, lexically, `/`-separated.
fn normalise(path: &Path) -> String {
    let mut parts: Vec<String> = Vec::new();
    let mut absolute = false;
    for c in path.components() {
        match c {
            Component::RootDir | Component::Prefix(_) => absolute = true,
            Component::CurDir => {}
            Component::ParentDir => {
                if parts.last().is_some_and(|p| p != "..") {
                    parts.pop();
                } else if !absolute {
                    parts.push("..".into());
                }
            }
            Component::Normal(p) => parts.push(p.to_string_lossy().into_owned()),
        }
    }
    let joined = parts.join("/");
    match (absolute, joined.is_empty()) {
        (true, _) => format!("/{joined}"),
        (false, true) => FRONT.to_string(),
        (false, false) => joined,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_normalised() {
        assert_eq!(normalise(Path::new("./../team/lessons")), "../team/lessons");
        assert_eq!(normalise(Path::new("../team/lessons/../../org")), "../org");
        assert_eq!(normalise(Path::new("a/..")), ".");
        assert_eq!(normalise(Path::new("/x/./y/..")), "/x");
    }

    fn bank(dir: &Path, include: &[&str]) {
        std::fs::create_dir_all(dir).unwrap();
        let list: Vec<String> = include.iter().map(|i| format!("{i:?}")).collect();
        std::fs::write(
            dir.join(CONFIG_FILE),
            format!("[banks]\ninclude = [{}]\n", list.join(", ")),
        )
        .unwrap();
    }

    #[test]
    fn stack_is_depth_first_each_once() {
        let tmp = tempfile::tempdir().unwrap();
        let t = tmp.path();
        bank(&t.join("me"), &["../team", "../org"]);
        bank(&t.join("team"), &["../org"]);
        bank(&t.join("org"), &[]);
        let front = t.join("me");
        let config = Config::load(&front).unwrap();
        let names: Vec<String> = resolve(&front, &config)
            .unwrap()
            .into_iter()
            .map(|l| l.name)
            .collect();
        assert_eq!(names, ["../team", "../org"]);
    }

    #[test]
    fn loops_missing_and_nested_banks_are_refused_at_their_entry() {
        let tmp = tempfile::tempdir().unwrap();
        let t = tmp.path();
        bank(&t.join("a"), &["../b"]);
        bank(&t.join("b"), &["../a"]);
        let front = t.join("a");
        let err = resolve(&front, &Config::load(&front).unwrap()).unwrap_err();
        let message = err.to_string();
        assert!(message.contains("b/lesson.toml:2:12:"), "{message}");
        assert!(
            message.contains("include loop (. -> ../b -> .)"),
            "{message}"
        );

        bank(&t.join("c"), &["x", "../nowhere"]);
        let front = t.join("c");
        let err = resolve(&front, &Config::load(&front).unwrap()).unwrap_err();
        assert!(err.to_string().contains("no bank at `x`"), "{err}");

        bank(&t.join("d"), &["inner"]);
        bank(&t.join("d/inner"), &[]);
        let front = t.join("d");
        let err = resolve(&front, &Config::load(&front).unwrap()).unwrap_err();
        assert!(err.to_string().contains("nested"), "{err}");
    }
}
