//! The harness of every test that runs the binary: a temp directory holding a bank
//! (`lessons/`), the `lesson` binary run in it with a fixed clock and recorder, what it printed
//! and its exit code, and the bank's bytes before and after.

#![allow(dead_code)]

use std::collections::BTreeMap;
use std::fmt;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// The clock of every run (`LESSON_NOW`).
pub const NOW: &str = "2026-11-22T12:00:00Z";
/// The binary under test.
pub const BIN: &str = env!("CARGO_BIN_EXE_lesson");

/// `lesson` with the fixed clock and no `LESSON_DIR` from the environment of the test run.
pub fn lesson() -> Command {
    let mut cmd = Command::new(BIN);
    cmd.env("LESSON_NOW", NOW).env_remove("LESSON_DIR");
    cmd
}

/// What one run of the binary did.
#[derive(Debug)]
pub struct Run {
    pub code: i32,
    pub stdout: String,
    pub stderr: String,
}

impl fmt::Display for Run {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "exit: {}\n--- stdout\n{}--- stderr\n{}",
            self.code, self.stdout, self.stderr
        )
    }
}

/// Run `lesson ARGS` in `cwd`, as it is (no recorder, no redaction).
pub fn run_in(cwd: &Path, args: &[&str]) -> Run {
    let out = lesson().args(args).current_dir(cwd).output().unwrap();
    Run {
        code: out.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

/// Every file of a bank but its `.lesson/` directory, with its bytes.
pub type Tree = BTreeMap<PathBuf, Vec<u8>>;

pub struct Sandbox {
    pub tmp: tempfile::TempDir,
}

impl Sandbox {
    /// An empty temp directory (no `lessons/` yet).
    pub fn new() -> Sandbox {
        Sandbox {
            tmp: tempfile::tempdir().unwrap(),
        }
    }

    /// A sandbox whose `lessons/` is a copy of `fixture`.
    pub fn with_bank(fixture: &str) -> Sandbox {
        let sandbox = Sandbox::new();
        copy_dir(Path::new(fixture), &sandbox.bank());
        sandbox
    }

    /// A sandbox whose `lessons/` is a copy of `fixture`, with a current `_index.md`.
    pub fn with_indexed_bank(fixture: &str) -> Sandbox {
        let sandbox = Sandbox::with_bank(fixture);
        let index = sandbox.run(&["index"]);
        assert_eq!(index.code, 0, "{index}");
        sandbox
    }

    /// The temp directory (the bank's parent).
    pub fn path(&self) -> &Path {
        self.tmp.path()
    }

    pub fn bank(&self) -> PathBuf {
        self.tmp.path().join("lessons")
    }

    /// Write a file beside the bank (a candidate, a run).
    pub fn write(&self, name: &str, text: &str) {
        std::fs::write(self.tmp.path().join(name), text).unwrap();
    }

    /// Run `lesson ARGS` in the sandbox.
    pub fn run(&self, args: &[&str]) -> Run {
        self.run_inner(args, None, &[])
    }

    /// Run `lesson ARGS` in the sandbox with more environment variables.
    pub fn run_with_env(&self, args: &[&str], env: &[(&str, &str)]) -> Run {
        self.run_inner(args, None, env)
    }

    /// Run `lesson ARGS` in the sandbox with `stdin` piped in.
    pub fn run_with_stdin(&self, args: &[&str], stdin: &[u8]) -> Run {
        self.run_inner(args, Some(stdin), &[])
    }

    fn run_inner(&self, args: &[&str], stdin: Option<&[u8]>, env: &[(&str, &str)]) -> Run {
        let judge = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/judge/fake_judge.py");
        let mut child = lesson()
            .args(args)
            .current_dir(self.tmp.path())
            .env("LESSON_BY", "tester")
            .env("JUDGE", judge)
            .env("LESSON_BIN", BIN)
            .env("FAKE_JUDGE_LOG", self.tmp.path().join("judge.log"))
            .env_remove("NO_COLOR")
            .envs(env.iter().copied())
            .stdin(if stdin.is_some() {
                Stdio::piped()
            } else {
                Stdio::null()
            })
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        if let Some(input) = stdin {
            child.stdin.take().unwrap().write_all(input).unwrap();
        }
        let out = child.wait_with_output().unwrap();
        let redact = |b: &[u8]| {
            String::from_utf8_lossy(b).replace(&self.tmp.path().display().to_string(), "[TMP]")
        };
        Run {
            code: out.status.code().unwrap_or(-1),
            stdout: redact(&out.stdout),
            stderr: redact(&out.stderr),
        }
    }

    /// `$ lesson ARGS` and what the run did.
    pub fn shown(&self, args: &[&str]) -> String {
        format!("$ lesson {}\n{}", args.join(" "), self.run(args))
    }

    /// Runs, each with the command line that produced it and a blank line after it.
    pub fn transcript(&self, commands: &[&[&str]]) -> String {
        let mut out = String::new();
        for args in commands {
            out.push_str(&self.shown(args));
            out.push('\n');
        }
        out
    }

    /// The bank's files (without `.lesson/`), relative to the sandbox.
    pub fn tree(&self) -> Tree {
        let mut tree = Tree::new();
        for entry in walkdir::WalkDir::new(self.bank())
            .into_iter()
            .filter_entry(|e| e.file_name() != ".lesson")
            .filter_map(Result::ok)
            .filter(|e| e.file_type().is_file())
        {
            let rel = entry.path().strip_prefix(self.tmp.path()).unwrap();
            tree.insert(rel.to_path_buf(), std::fs::read(entry.path()).unwrap());
        }
        tree
    }

    /// Every file of the bank (without `.lesson/`) with its content, as text: `=== PATH` and
    /// the file, in path order.
    pub fn listing(&self) -> String {
        let mut out = String::new();
        for (path, bytes) in self.tree() {
            out.push_str(&format!("=== {}\n", path.display()));
            out.push_str(std::str::from_utf8(&bytes).unwrap());
        }
        out
    }

    /// The named files of the bank (relative to `lessons/`), each with its content, or a
    /// directory's listing.
    pub fn files(&self, names: &[&str]) -> String {
        let mut out = String::new();
        for name in names {
            let path = self.bank().join(name);
            if path.is_dir() {
                let mut entries: Vec<String> = std::fs::read_dir(&path)
                    .unwrap()
                    .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
                    .collect();
                entries.sort();
                out.push_str(&format!("=== lessons/{name}/\n{}\n", entries.join("\n")));
            } else {
                let text = std::fs::read_to_string(&path).unwrap_or_else(|_| "(missing)\n".into());
                out.push_str(&format!("=== lessons/{name}\n{text}"));
            }
        }
        out
    }

    /// The requests the fake judge was sent, one per call.
    pub fn judge_calls(&self) -> Vec<serde_json::Value> {
        std::fs::read_to_string(self.tmp.path().join("judge.log"))
            .unwrap_or_default()
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect()
    }
}

/// Unified diffs (one line of context, CR shown as `␍`) of every file that changed between two
/// trees; a new file is a diff from nothing.
pub fn diff(before: &Tree, after: &Tree) -> String {
    let mut paths: Vec<&PathBuf> = before.keys().chain(after.keys()).collect();
    paths.sort();
    paths.dedup();
    let mut out = String::new();
    for path in paths {
        let text = |t: &Tree| {
            t.get(path)
                .map(|b| String::from_utf8_lossy(b).into_owned())
                .unwrap_or_default()
        };
        let (old, new) = (text(before), text(after));
        if old == new {
            continue;
        }
        let name = path.display().to_string();
        let diff = similar::TextDiff::from_lines(&old, &new)
            .unified_diff()
            .context_radius(1)
            .header(&format!("a/{name}"), &format!("b/{name}"))
            .to_string()
            .replace('\r', "␍");
        out.push_str(&diff);
    }
    if out.is_empty() {
        out.push_str("(no file changed)\n");
    }
    out
}

/// Copy the directory `from` to `to` (created), but any `.lesson/` (a bank's index and lock:
/// never part of a fixture). Returns the files copied.
pub fn copy_dir(from: &Path, to: &Path) -> Vec<PathBuf> {
    let mut copied = Vec::new();
    for entry in walkdir::WalkDir::new(from)
        .into_iter()
        .filter_entry(|e| e.file_name() != ".lesson")
    {
        let entry = entry.unwrap();
        let target = to.join(entry.path().strip_prefix(from).unwrap());
        if entry.file_type().is_dir() {
            std::fs::create_dir_all(&target).unwrap();
        } else {
            std::fs::copy(entry.path(), &target).unwrap();
            copied.push(target);
        }
    }
    copied
}
