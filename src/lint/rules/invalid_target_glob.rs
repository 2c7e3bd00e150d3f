//! `invalid-target-glob` (T002).

use crate::declare_rule;
use crate::diagnostic::Diagnostic;
use crate::lesson::TARGET_KEYS;
use crate::lint::schema_walk::{excerpt, FrontmatterView, ObjectKind};
use crate::lint::{Check, FileContext};

declare_rule! {
    /// A target glob does not compile.
    ///
    /// ## What it does
    /// Reports an `operator`, `role` or `skill` glob in `trigger.targets` that is not a valid
    /// glob (an unclosed `[` class or `{` group, ...), with the glob parser's reason.
    ///
    /// ## Why is this bad?
    /// Retrieval matches targets as globs. One that does not compile either matches nothing,
    /// hiding the lesson from the agents it was meant for, or is compared literally, depending on
    /// the runtime.
    ///
    /// ## Example
    /// ```yaml
    /// trigger:
    ///   description: Drafting an outbound email subject.
    ///   targets:
    ///     - operator: "{marketing,sales-lead"   # unclosed `{`
    /// ```
    pub static RULE = {
        code: "T002",
        name: "invalid-target-glob",
        level: Error,
        fixable: false,
        check: Check::File(check),
    }
}

fn check(ctx: &FileContext<'_>, out: &mut Vec<Diagnostic>) {
    let Some(fm) = FrontmatterView::of(ctx) else {
        return;
    };
    for object in fm.objects() {
        if object.kind != ObjectKind::Target {
            continue;
        }
        for key in TARGET_KEYS {
            let Some((_, value)) = fm.get(object.map, key) else {
                continue;
            };
            let Some(glob) = fm.string(value) else {
                continue;
            };
            if cannot_fail(glob) {
                continue;
            }
            let Err(err) = globset::Glob::new(glob) else {
                continue;
            };
            out.push(Diagnostic::new(
                &RULE,
                fm.source(),
                fm.span(value),
                format!(
                    "invalid glob `{}` in `{}`: {}",
                    excerpt(glob),
                    object.field(key),
                    err.kind()
                ),
            ));
        }
    }
}

/// Whether `glob` has none of the syntax a glob can get wrong (classes, alternates, escapes):
/// it compiles then, and is not parsed just to find that out.
fn cannot_fail(glob: &str) -> bool {
    !glob
        .bytes()
        .any(|b| matches!(b, b'[' | b'{' | b'}' | b'\\'))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every glob of up to five characters from an alphabet of glob syntax that the shortcut
    /// passes does compile; and some it sends to the parser do not.
    #[test]
    fn globs_the_shortcut_passes_compile() {
        let alphabet = [
            'a', '*', '?', '/', ',', ']', '!', '-', '.', '[', '{', '}', '\\',
        ];
        let mut globs = vec![String::new()];
        let mut failing = 0;
        for _ in 0..5 {
            globs = globs
                .iter()
                .flat_map(|g| alphabet.iter().map(move |c| format!("{g}{c}")))
                .collect();
            for glob in &globs {
                let ok = globset::Glob::new(glob).is_ok();
                assert!(ok || !cannot_fail(glob), "{glob:?} fails to compile");
                failing += usize::from(!ok);
            }
        }
        assert!(failing > 1000, "{failing}");
    }
}
