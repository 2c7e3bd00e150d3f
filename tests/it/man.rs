//! `man/` is what `cargo xtask man` writes from the binary (`lesson __man`): one page per
//! visible command, none stale, none left over. And `lesson completions` prints a script for
//! every shell clap_complete knows.

use std::collections::BTreeSet;
use std::path::Path;

use crate::sandbox::{run_in, Sandbox};

#[test]
fn man_pages_are_current() {
    if cfg!(feature = "semantic") {
        // `lesson model` exists only in a build with the feature
        eprintln!("skipped: man/ is written from the default build, and this one has `semantic`");
        return;
    }
    let sandbox = Sandbox::new();
    let names = run_in(sandbox.path(), &["__man"]);
    assert_eq!(names.code, 0, "{names}");
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("man");
    let mut expected = BTreeSet::new();
    let mut stale = Vec::new();
    for name in names.stdout.lines() {
        let page = run_in(sandbox.path(), &["__man", name]);
        assert_eq!(page.code, 0, "{page}");
        let file = format!("{name}.1");
        if std::fs::read_to_string(dir.join(&file)).ok().as_deref() != Some(&page.stdout) {
            stale.push(file.clone());
        }
        expected.insert(file);
    }
    assert!(expected.contains("lesson.1") && expected.contains("lesson-lint.1"));
    assert!(!expected.iter().any(|f| f.contains("__man")));
    let on_disk: BTreeSet<String> = std::fs::read_dir(&dir)
        .map(|d| {
            d.filter_map(|e| e.ok())
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default();
    let extra: Vec<_> = on_disk.difference(&expected).collect();
    assert!(
        stale.is_empty() && extra.is_empty(),
        "man/ is stale: run `cargo xtask man` (differs: {stale:?}, left over: {extra:?})"
    );
}

#[test]
fn completions_for_every_shell() {
    let sandbox = Sandbox::new();
    for (shell, marker) in [
        ("bash", "complete -F"),
        ("zsh", "#compdef lesson"),
        ("fish", "complete -c lesson"),
        ("powershell", "Register-ArgumentCompleter"),
        ("elvish", "edit:completion:arg-completer[lesson]"),
    ] {
        let run = run_in(sandbox.path(), &["completions", shell]);
        assert_eq!(run.code, 0, "{run}");
        assert!(run.stdout.contains(marker), "{shell}: {}", run.stdout);
        // the subcommands are completed
        assert!(run.stdout.contains("supersede"), "{shell}");
    }
    let run = run_in(sandbox.path(), &["completions", "tcsh"]);
    assert_eq!(run.code, 2, "{run}");
}
