//! Architecture invariants, checked by `cargo test` (rust-analyzer's `xtask/src/tidy.rs` is the
//! model): the library's modules import only downward, and the command line only translates.
//! ARCHITECTURE.md explains the layers; a change to them is a change to both files.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

/// The library's top-level modules, bottom layer first. A module may import (`crate::x`) any
/// module of a lower layer, and none of its own layer or above.
const LAYERS: &[&[&str]] = &[
    &["source", "yaml", "layout", "progress", "checksum"],
    &["lesson", "semantic"],
    &["document", "diagnostic", "schema"],
    &["config", "walk", "template"],
    &["edit", "layers"],
    &["ledger", "git"],
    &["bank", "merge", "usage"],
    &["index_md", "listing"],
    &["lint"],
    &["retrieve"],
    &["dedup"],
    &["curate"],
    &["distill", "watch", "pr", "sync"],
    &["report"],
    &["embed"],
];

/// What a file of the command line (`src/cli/`) may not contain: it parses flags, calls the
/// library and prints; writes, locks, ledgers and JSON views are the library's.
const CLI_FORBIDDEN: &[(&str, &str)] = &[
    ("write_atomic", "a file write"),
    ("fs::write", "a file write"),
    ("File::create", "a file write"),
    ("OpenOptions", "a file write"),
    ("fs::rename", "a file write"),
    ("BankLock", "a lock"),
    ("super::lock(", "a lock"),
    ("locked(", "a lock"),
    ("Ledger::", "a ledger call"),
    (".append(", "a ledger call"),
    ("Serialize", "a JSON view type"),
];

fn src() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../src")
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let mut entries: Vec<_> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("cannot read {}: {e}", dir.display()))
        .map(|e| e.unwrap().path())
        .collect();
    entries.sort();
    for path in entries {
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// The lines of a file outside its `#[cfg(test)]` module (tests may reach anywhere), with
/// their numbers, comments left out.
fn code_lines(text: &str) -> impl Iterator<Item = (usize, &str)> {
    text.lines()
        .enumerate()
        .take_while(|(_, line)| line.trim() != "#[cfg(test)]")
        .map(|(i, line)| (i + 1, line))
        .filter(|(_, line)| !line.trim_start().starts_with("//"))
}

/// The top-level modules a line names through `crate::` (`crate::a::b`, `crate::{a, b::c}`).
fn crate_imports(line: &str) -> Vec<String> {
    let mut found = Vec::new();
    let mut rest = line;
    while let Some(i) = rest.find("crate::") {
        rest = &rest[i + "crate::".len()..];
        if let Some(group) = rest.strip_prefix('{') {
            // a group: each item's first segment, at the group's own depth
            let mut depth = 0;
            let mut item = String::new();
            for c in group.chars() {
                match c {
                    '{' => depth += 1,
                    '}' if depth == 0 => break,
                    '}' => depth -= 1,
                    ',' if depth == 0 => {
                        found.push(first_segment(&item));
                        item.clear();
                        continue;
                    }
                    _ => {}
                }
                if depth == 0 || !item.contains("::") {
                    item.push(c);
                }
            }
            found.push(first_segment(&item));
        } else {
            found.push(first_segment(rest));
        }
    }
    found.retain(|m| !m.is_empty() && m != "self");
    found
}

fn first_segment(s: &str) -> String {
    s.trim()
        .chars()
        .take_while(|c| c.is_alphanumeric() || *c == '_')
        .collect()
}

fn layer_of(module: &str) -> Option<usize> {
    LAYERS.iter().position(|layer| layer.contains(&module))
}

/// Every import of the library that goes up a layer or sideways, as `file:line: message`.
fn upward_imports(src: &Path) -> Vec<String> {
    let mut files = Vec::new();
    rust_files(src, &mut files);
    let mut problems = Vec::new();
    for file in files {
        let rel = file.strip_prefix(src).unwrap();
        let first = rel
            .components()
            .next()
            .unwrap()
            .as_os_str()
            .to_string_lossy();
        let module = first.trim_end_matches(".rs").to_string();
        if matches!(module.as_str(), "lib" | "main" | "cli" | "out") {
            continue;
        }
        let Some(layer) = layer_of(&module) else {
            problems.push(format!(
                "src/{}: module `{module}` has no layer in xtask/src/tidy.rs (and ARCHITECTURE.md)",
                rel.display()
            ));
            continue;
        };
        let text = std::fs::read_to_string(&file).unwrap();
        for (n, line) in code_lines(&text) {
            for target in crate_imports(line) {
                if target == module {
                    continue;
                }
                match layer_of(&target) {
                    Some(l) if l < layer => {}
                    Some(l) => problems.push(format!(
                        "src/{}:{n}: `{module}` (layer {layer}) imports `{target}` (layer {l}): \
                         a module imports only from the layers below it",
                        rel.display()
                    )),
                    None => {}
                }
            }
        }
    }
    problems
}

/// Every line of `src/cli/` that does the library's work.
fn cli_work(src: &Path) -> Vec<String> {
    let mut files = Vec::new();
    rust_files(&src.join("cli"), &mut files);
    let mut problems = Vec::new();
    for file in files {
        let rel = file.strip_prefix(src).unwrap();
        let text = std::fs::read_to_string(&file).unwrap();
        for (n, line) in code_lines(&text) {
            for (needle, what) in CLI_FORBIDDEN {
                if line.contains(needle) {
                    problems.push(format!(
                        "src/{}:{n}: {what} (`{needle}`) in the command line: move it into the \
                         library, which the CLI and MCP both call",
                        rel.display()
                    ));
                }
            }
        }
    }
    problems
}

fn fail_on(problems: Vec<String>) {
    if !problems.is_empty() {
        let mut msg = String::new();
        for p in &problems {
            writeln!(msg, "{p}").unwrap();
        }
        panic!("\n{msg}");
    }
}

#[test]
fn library_modules_import_only_downward() {
    fail_on(upward_imports(&src()));
}

#[test]
fn the_command_line_only_translates() {
    fail_on(cli_work(&src()));
}

#[test]
fn every_layered_module_exists() {
    for module in LAYERS.iter().flat_map(|l| l.iter()) {
        let src = src();
        assert!(
            src.join(format!("{module}.rs")).is_file() || src.join(module).join("mod.rs").is_file(),
            "LAYERS names `{module}`, which is not a module of src/"
        );
    }
}

/// The checks themselves: an upward import and a write in the CLI are found, with file and line.
#[test]
fn the_checks_find_what_they_look_for() {
    assert_eq!(crate_imports("use crate::bank::{Bank, Status};"), ["bank"]);
    assert_eq!(
        crate_imports("use crate::{bank::Bank, lint::{self, Rule}, source};"),
        ["bank", "lint", "source"]
    );
    assert_eq!(
        crate_imports("let x = crate::retrieve::walk(crate::walk::f());"),
        ["retrieve", "walk"]
    );
    let dir = tempdir();
    std::fs::create_dir_all(dir.join("cli")).unwrap();
    std::fs::write(
        dir.join("source.rs"),
        "use crate::yaml;\nuse crate::bank::Bank;\n#[cfg(test)]\nuse crate::lint;\n",
    )
    .unwrap();
    std::fs::write(dir.join("yaml.rs"), "").unwrap();
    std::fs::write(
        dir.join("cli/new.rs"),
        "// write_atomic in a comment is fine\nfn f() { lesson::edit::write_atomic(); }\n",
    )
    .unwrap();
    let up = upward_imports(&dir);
    assert_eq!(up.len(), 2, "{up:?}");
    assert!(up[0].starts_with("src/source.rs:1: `source` (layer 0) imports `yaml` (layer 0)"));
    assert!(up[1].starts_with("src/source.rs:2: `source` (layer 0) imports `bank`"));
    let cli = cli_work(&dir);
    assert_eq!(cli.len(), 1, "{cli:?}");
    assert!(cli[0].starts_with("src/cli/new.rs:2: a file write (`write_atomic`)"));
    std::fs::remove_dir_all(&dir).unwrap();
}

fn tempdir() -> PathBuf {
    let dir = std::env::temp_dir().join(format!("lesson-tidy-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}
