//! `invalid-length` (S007).

use crate::declare_rule;
use crate::diagnostic::Diagnostic;
use crate::lesson::{Chars, DESCRIPTION_CHARS, NOTE_CHARS, REF_CHARS, TITLE_CHARS};
use crate::lint::schema_walk::FrontmatterView;
use crate::lint::{Check, FileContext};
use crate::yaml::NodeId;

declare_rule! {
    /// A text field is empty or too long.
    ///
    /// ## What it does
    /// Reports `title` outside 1 to 200 characters, `trigger.description` outside 1 to 1000,
    /// an evidence `ref` outside 1 to 256 and an evidence `note` over 500. Lengths count
    /// characters (after YAML folds multi-line values), not bytes.
    ///
    /// ## Why is this bad?
    /// The schema rejects the lesson. The limits also keep the injected prompt short: a title is
    /// one sentence, a note one line.
    ///
    /// ## Example
    /// ```yaml
    /// title: ""     # 1 to 200 characters
    /// ```
    pub static RULE = {
        code: "S007",
        name: "invalid-length",
        level: Error,
        fixable: false,
        check: Check::File(check),
    }
}

/// A length-limited string field; its path is formatted only for a finding.
struct Field {
    /// The path, or the key within `evidence[index]`.
    path: &'static str,
    /// The evidence item's index, for fields of evidence items.
    index: Option<usize>,
    /// The mapping holding the field.
    map: NodeId,
    /// The key.
    name: &'static str,
    /// Least length, in characters.
    min: usize,
    /// Greatest length, in characters.
    max: usize,
}

impl Field {
    fn new(
        path: &'static str,
        index: Option<usize>,
        map: NodeId,
        name: &'static str,
        chars: Chars,
    ) -> Self {
        Field {
            path,
            index,
            map,
            name,
            min: chars.min,
            max: chars.max,
        }
    }
}

fn check(ctx: &FileContext<'_>, out: &mut Vec<Diagnostic>) {
    let Some(fm) = FrontmatterView::of(ctx) else {
        return;
    };
    let mut fields: Vec<Field> = Vec::new();
    fields.push(Field::new("title", None, fm.root, "title", TITLE_CHARS));
    if let Some((_, trigger)) = fm.trigger() {
        fields.push(Field::new(
            "trigger.description",
            None,
            trigger,
            "description",
            DESCRIPTION_CHARS,
        ));
    }
    for (i, item) in fm.items(fm.root, "evidence") {
        fields.push(Field::new("ref", Some(i), item, "ref", REF_CHARS));
        fields.push(Field::new("note", Some(i), item, "note", NOTE_CHARS));
    }
    for Field {
        path,
        index,
        map,
        name,
        min,
        max,
    } in fields
    {
        let Some((key, value)) = fm.get(map, name) else {
            continue;
        };
        let Some(text) = fm.string(value) else {
            continue;
        };
        if let Some(problem) = length_problem(text, min, max) {
            let path = match index {
                Some(i) => format!("evidence[{i}].{path}"),
                None => path.to_string(),
            };
            out.push(Diagnostic::new(
                &RULE,
                fm.source(),
                fm.value_span(key, value),
                format!("`{path}` {problem}"),
            ));
        }
    }
}

/// What is wrong with the length of `text`, in characters, against `min..=max`.
fn length_problem(text: &str, min: usize, max: usize) -> Option<String> {
    let n = text.chars().count();
    if n == 0 && min > 0 {
        Some(format!("is empty, expected 1 to {max} characters"))
    } else if n > max {
        Some(format!("is {n} characters long, at most {max}"))
    } else {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lengths_count_characters_not_bytes() {
        // 200 two-byte characters: 400 bytes, still within a 200-character limit
        assert_eq!(length_problem(&"é".repeat(200), 1, 200), None);
        assert_eq!(
            length_problem(&"é".repeat(201), 1, 200).as_deref(),
            Some("is 201 characters long, at most 200")
        );
        assert_eq!(
            length_problem("", 1, 256).as_deref(),
            Some("is empty, expected 1 to 256 characters")
        );
        assert_eq!(length_problem("", 0, 500), None);
    }
}
