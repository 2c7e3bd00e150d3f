//! The shape LESSON.schema.json gives a frontmatter, for the schema rules (S*, T*): the mappings
//! with a closed set of keys (top level, `trigger`, each target, each evidence item), field paths
//! for messages, and the small checks several rules share (misspelled keys, the tag pattern,
//! catch-all globs, "did you mean").

use std::ops::Range;

use crate::document::Document;
use crate::lesson::{EVIDENCE_KEYS, REQUIRED_KEYS, TARGET_KEYS, TOP_LEVEL_KEYS, TRIGGER_KEYS};
use crate::lint::FileContext;
use crate::source::Source;
use crate::yaml::{NodeId, Scalar, Yaml};

/// Longest value excerpt quoted in a message, in characters.
const EXCERPT_CHARS: usize = 60;

/// A frontmatter whose root is a mapping.
pub struct FrontmatterView<'a> {
    /// The file.
    pub doc: &'a Document,
    /// Its YAML tree.
    pub yaml: &'a Yaml,
    /// The root mapping.
    pub root: NodeId,
    /// The file's objects, computed once and shared by every rule that runs on it.
    objects: &'a std::cell::OnceCell<Vec<Object>>,
}

/// Which closed mapping of the schema an [`Object`] is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ObjectKind {
    /// The frontmatter itself.
    Top,
    /// `trigger`.
    Trigger,
    /// One item of `trigger.targets`.
    Target,
    /// One item of `evidence`.
    Evidence,
}

impl ObjectKind {
    /// The keys the schema allows (`additionalProperties: false`).
    pub fn keys(self) -> &'static [&'static str] {
        match self {
            ObjectKind::Top => &TOP_LEVEL_KEYS,
            ObjectKind::Trigger => &TRIGGER_KEYS,
            ObjectKind::Target => &TARGET_KEYS,
            ObjectKind::Evidence => &EVIDENCE_KEYS,
        }
    }

    /// Whether the schema allows `key` here (a `match`: this runs for every key of every file).
    pub fn allows(self, key: &str) -> bool {
        match self {
            ObjectKind::Top => matches!(
                key,
                "schema"
                    | "slug"
                    | "title"
                    | "trigger"
                    | "outcome"
                    | "evidence"
                    | "confidence"
                    | "success_count"
                    | "failure_count"
                    | "supersedes"
                    | "expires_at"
                    | "metadata"
            ),
            ObjectKind::Trigger => matches!(key, "description" | "tags" | "targets" | "metadata"),
            ObjectKind::Target => matches!(key, "operator" | "role" | "skill"),
            ObjectKind::Evidence => matches!(key, "kind" | "ref" | "note"),
        }
    }

    /// The keys the schema requires.
    pub fn required(self) -> &'static [&'static str] {
        match self {
            ObjectKind::Top => &REQUIRED_KEYS,
            ObjectKind::Trigger => &["description"],
            ObjectKind::Target => &[],
            ObjectKind::Evidence => &["kind", "ref"],
        }
    }
}

/// A mapping with a closed set of keys, found in the frontmatter.
#[derive(Debug, Clone)]
pub struct Object {
    /// Which one.
    pub kind: ObjectKind,
    /// The mapping node as written (an alias resolves to its anchor).
    pub map: NodeId,
    /// For a target or an evidence item, its index in its list.
    pub index: usize,
    /// Where a finding about the whole mapping points: the opening fence for the top level,
    /// the `trigger` key, or the item.
    pub at: Range<usize>,
}

impl Object {
    /// Its path for messages: "" (top level), `trigger`, `trigger.targets[0]`, `evidence[1]`.
    /// Built on demand: only findings need it.
    pub fn path(&self) -> String {
        match self.kind {
            ObjectKind::Top => String::new(),
            ObjectKind::Trigger => "trigger".into(),
            ObjectKind::Target => format!("trigger.targets[{}]", self.index),
            ObjectKind::Evidence => format!("evidence[{}]", self.index),
        }
    }

    /// The path of one of its fields, for messages.
    pub fn field(&self, key: &str) -> String {
        match self.kind {
            ObjectKind::Top => key.to_string(),
            _ => format!("{}.{key}", self.path()),
        }
    }
}

/// A key an [`Object`] does not allow.
#[derive(Debug, Clone)]
pub struct UnknownKey {
    /// The key node.
    pub key: NodeId,
    /// The key's text, `None` when the key is a collection.
    pub name: Option<String>,
    /// The allowed key it misspells, when that key is not already in the mapping (and no earlier
    /// unknown key claimed it): the S019 case. Everything else is S002.
    pub correction: Option<&'static str>,
    /// The allowed key it resembles even though that key is present.
    pub resembles: Option<&'static str>,
}

impl<'a> FrontmatterView<'a> {
    /// The frontmatter of the file being linted, when it parsed to a mapping.
    pub fn of(ctx: &'a FileContext<'a>) -> Option<Self> {
        let doc = ctx.doc;
        Some(FrontmatterView {
            doc,
            yaml: doc.yaml.as_ref()?,
            root: doc.root_map()?,
            objects: &ctx.objects,
        })
    }

    /// The prologue of a rule on one top-level field: the file's frontmatter and `key`'s
    /// (key, value) nodes, when the frontmatter is a mapping that has `key`.
    pub fn field(ctx: &'a FileContext<'a>, key: &str) -> Option<(Self, NodeId, NodeId)> {
        let fm = FrontmatterView::of(ctx)?;
        let (key, value) = fm.get(fm.root, key)?;
        Some((fm, key, value))
    }

    /// [`FrontmatterView::field`] when the value is a string: also the string.
    pub fn string_field(
        ctx: &'a FileContext<'a>,
        key: &str,
    ) -> Option<(Self, NodeId, NodeId, &'a str)> {
        let (fm, key, value) = FrontmatterView::field(ctx, key)?;
        let text = fm.string(value)?;
        Some((fm, key, value, text))
    }

    /// The file's source, for [`crate::diagnostic::Diagnostic::new`].
    pub fn source(&self) -> &'a Source {
        &self.doc.source
    }

    /// A node's byte range.
    pub fn span(&self, id: NodeId) -> Range<usize> {
        self.yaml.node(id).span.clone()
    }

    /// Where to point at a value: its node, or its key when the value is empty (`title:`).
    pub fn value_span(&self, key: NodeId, value: NodeId) -> Range<usize> {
        let span = self.span(value);
        if span.is_empty() {
            self.span(key)
        } else {
            span
        }
    }

    /// The value of a string scalar (quoted, or plain resolving to a string).
    pub fn string(&self, id: NodeId) -> Option<&'a str> {
        match self.yaml.scalar(id)? {
            Scalar::Str(s) => Some(s),
            _ => None,
        }
    }

    /// `key`'s (key, value) in `map`.
    pub fn get(&self, map: NodeId, key: &str) -> Option<(NodeId, NodeId)> {
        self.yaml.get(map, key)
    }

    /// The scalar's text as written in the file (after alias resolution), shortened.
    pub fn written(&self, id: NodeId) -> String {
        let span = self.span(self.yaml.resolve(id));
        excerpt(self.doc.source.text.get(span).unwrap_or(""))
    }

    /// What a value is, for "found ..." in messages: `integer `123``, `sequence`, `null`.
    pub fn found(&self, id: NodeId) -> String {
        let name = self.yaml.type_name(id);
        match self.yaml.scalar(id) {
            Some(Scalar::Null) | None => name.to_string(),
            Some(_) => format!("{name} `{}`", self.written(id)),
        }
    }

    /// Where `text` stands literally inside a scalar node (inside its quotes, if any); `None` when
    /// the node is an alias or the text is not written as is (escapes, folded lines).
    pub fn literal_range(&self, id: NodeId, text: &str) -> Option<Range<usize>> {
        if self.yaml.resolve(id) != id || text.is_empty() {
            return None;
        }
        let span = self.span(id);
        let at = self.doc.source.text.get(span.clone())?.find(text)?;
        Some(span.start + at..span.start + at + text.len())
    }

    /// `trigger`'s key and value, when the value is a mapping.
    pub fn trigger(&self) -> Option<(NodeId, NodeId)> {
        let (key, value) = self.get(self.root, "trigger")?;
        self.yaml.map(value)?;
        Some((key, value))
    }

    /// The items of the sequence at `key` in `map`, with their index; empty when it is not one.
    pub fn items(&self, map: NodeId, key: &str) -> Vec<(usize, NodeId)> {
        self.get(map, key)
            .and_then(|(_, value)| self.yaml.seq(value))
            .unwrap_or_default()
            .iter()
            .copied()
            .enumerate()
            .collect()
    }

    /// Every closed mapping: top level, `trigger`, the targets and the evidence items that are
    /// mappings. A mapping reached twice through aliases is listed once.
    pub fn objects(&self) -> &'a [Object] {
        self.objects.get_or_init(|| self.find_objects())
    }

    fn find_objects(&self) -> Vec<Object> {
        let mut seen: Vec<NodeId> = Vec::new();
        let mut out = Vec::new();
        let mut push = |kind, map: NodeId, index: usize, at: Range<usize>| {
            let resolved = self.yaml.resolve(map);
            if self.yaml.map(map).is_some() && !seen.contains(&resolved) {
                seen.push(resolved);
                out.push(Object {
                    kind,
                    map,
                    index,
                    at,
                });
            }
        };
        let open = self.doc.fences().map_or(0..0, |f| f.open.clone());
        push(ObjectKind::Top, self.root, 0, open);
        if let Some((key, trigger)) = self.trigger() {
            push(ObjectKind::Trigger, trigger, 0, self.span(key));
            for (i, item) in self.items(trigger, "targets") {
                push(ObjectKind::Target, item, i, self.span(item));
            }
        }
        for (i, item) in self.items(self.root, "evidence") {
            push(ObjectKind::Evidence, item, i, self.span(item));
        }
        out
    }

    /// The keys of `object` its schema does not allow, each classified as a misspelling (S019)
    /// or not (S002).
    pub fn unknown_keys(&self, object: &Object) -> Vec<UnknownKey> {
        let entries = self.yaml.map(object.map).unwrap_or_default();
        // the common case: every key is allowed, nothing to classify
        if entries.iter().all(|&(k, _)| {
            self.yaml
                .str(k)
                .is_some_and(|name| object.kind.allows(name))
        }) {
            return Vec::new();
        }
        let allowed = object.kind.keys();
        // mappings here have a handful of keys: a linear scan beats hashing
        let present: Vec<&str> = entries
            .iter()
            .filter_map(|&(k, _)| self.yaml.str(k))
            .collect();
        let mut claimed: Vec<&str> = Vec::new();
        let mut out = Vec::new();
        for &(key, _) in entries {
            if self.yaml.scalar(key).is_none() {
                out.push(UnknownKey {
                    key,
                    name: None,
                    correction: None,
                    resembles: None,
                });
                continue;
            }
            let name = self.yaml.str(key).unwrap_or_default();
            if allowed.contains(&name) {
                continue;
            }
            let guess = misspelling_of(name, allowed);
            let free = guess.filter(|g| {
                let free = !present.contains(g) && !claimed.contains(g);
                if free {
                    claimed.push(g);
                }
                free
            });
            out.push(UnknownKey {
                key,
                name: Some(name.to_string()),
                correction: free,
                resembles: if free.is_none() { guess } else { None },
            });
        }
        out
    }
}

/// Misspellings too far from their key for the edit distance to find.
const KNOWN_MISSPELLINGS: [(&str, &str); 6] = [
    ("expires", "expires_at"),
    ("expiry", "expires_at"),
    ("expiration", "expires_at"),
    ("desc", "description"),
    ("reference", "ref"),
    ("superseeds", "supersedes"),
];

/// The allowed key that `key` probably misspells: the same key in another case or separator
/// style (`successCount`, `expires-at`), a known misspelling, or the one allowed key within a
/// Damerau-Levenshtein distance of 2 (1 for keys of four letters or fewer). `None` when `key` is
/// allowed or nothing is close enough (or two keys are equally close).
pub fn misspelling_of(key: &str, allowed: &[&'static str]) -> Option<&'static str> {
    if allowed.contains(&key) {
        return None;
    }
    let norm = snake_case(key);
    if let Some(&k) = allowed.iter().find(|&&k| k == norm) {
        return Some(k);
    }
    if let Some(&(_, k)) = KNOWN_MISSPELLINGS
        .iter()
        .find(|&&(wrong, right)| wrong == norm && allowed.contains(&right))
    {
        return Some(k);
    }
    let mut best: Option<(usize, &'static str)> = None;
    let mut tie = false;
    for &k in allowed {
        let distance = strsim::damerau_levenshtein(&norm, k);
        let limit = if k.len() <= 4 { 1 } else { 2 };
        if distance > limit {
            continue;
        }
        match best {
            Some((d, _)) if d < distance => {}
            Some((d, _)) if d == distance => tie = true,
            _ => {
                best = Some((distance, k));
                tie = false;
            }
        }
    }
    if tie {
        None
    } else {
        best.map(|(_, k)| k)
    }
}

/// `successCount`, `Success-Count`, `success count` -> `success_count`.
fn snake_case(key: &str) -> String {
    let mut out = String::with_capacity(key.len() + 2);
    let mut prev_lower = false;
    for c in key.trim().chars() {
        if c.is_uppercase() && prev_lower {
            out.push('_');
        }
        prev_lower = c.is_lowercase() || c.is_ascii_digit();
        match c {
            '-' | ' ' => out.push('_'),
            c => out.extend(c.to_lowercase()),
        }
    }
    out
}

/// The choice `value` was probably meant to be, for a "did you mean" hint: the same word in
/// another case or separator, a choice within edit distance 2, or the one choice sharing its first
/// four letters (`failed` -> `failure`, `wiki` -> `wiki-page`).
pub fn closest<'c>(value: &str, choices: &[&'c str]) -> Option<&'c str> {
    let norm: String = value
        .trim()
        .to_lowercase()
        .chars()
        .map(|c| if c == '_' || c == ' ' { '-' } else { c })
        .collect();
    if let Some(&c) = choices.iter().find(|&&c| c == norm) {
        return Some(c);
    }
    let unique = |found: Vec<&'c str>| (found.len() == 1).then(|| found[0]);
    let near: Vec<&str> = choices
        .iter()
        .copied()
        .filter(|c| strsim::damerau_levenshtein(&norm, c) <= 2)
        .collect();
    if !near.is_empty() {
        return unique(near);
    }
    let prefix: String = norm.chars().take(4).collect();
    if prefix.chars().count() < 4 {
        return None;
    }
    unique(
        choices
            .iter()
            .copied()
            .filter(|c| c.replace('-', "").starts_with(&prefix.replace('-', "")))
            .collect(),
    )
}

/// What a slug should be: what `s` is closest to among valid slugs (lowercased, `_` and spaces
/// as `-`, other characters dropped), when that is one.
pub fn slug_suggestion(s: &str) -> Option<String> {
    let mut out = String::new();
    for c in s.trim().chars() {
        match c.to_ascii_lowercase() {
            c @ ('a'..='z' | '0'..='9') => out.push(c),
            '-' | '_' | ' ' if !out.is_empty() && !out.ends_with('-') => out.push('-'),
            _ => {}
        }
    }
    let out = out.trim_end_matches('-').to_string();
    (out != s && crate::lesson::slug_problem(&out).is_none()).then_some(out)
}

/// The help line for an invalid slug.
pub const SLUG_HELP: &str =
    "a slug is 2 to 80 lowercase letters, digits and `-`, starting with a letter and not ending with `-`";

/// The help for an invalid slug: the rule, and a valid spelling when there is an obvious one.
pub fn slug_help(slug: &str) -> String {
    match slug_suggestion(slug) {
        Some(better) => format!("{SLUG_HELP}, e.g. `{better}`"),
        None => SLUG_HELP.to_string(),
    }
}

/// Why `tag` does not match `^[a-z][a-z0-9-]*$`, or `None` when it does.
pub fn tag_problem(tag: &str) -> Option<String> {
    let Some(first) = tag.chars().next() else {
        return Some("it is empty".into());
    };
    for (i, c) in tag.chars().enumerate() {
        let what = match c {
            'a'..='z' | '0'..='9' | '-' => continue,
            'A'..='Z' => format!("uppercase letter `{c}`"),
            '_' => "underscore".into(),
            ' ' => "space".into(),
            _ => format!("`{}`", c.escape_debug()),
        };
        return Some(format!("{what} at column {}", i + 1));
    }
    if !first.is_ascii_lowercase() {
        let what = if first == '-' { "`-`" } else { "a digit" };
        return Some(format!("starts with {what}, not a letter"));
    }
    None
}

/// Whether a target glob matches every name: it is made only of `*` and `/` (`*`, `**`, `**/*`,
/// `*/**`, ...), so it scopes nothing.
pub fn matches_everything(glob: &str) -> bool {
    let glob = glob.trim();
    glob.contains('*') && glob.chars().all(|c| c == '*' || c == '/')
}

/// The first line of `s`, at most `EXCERPT_CHARS` characters, marked with `…` when cut.
pub fn excerpt(s: &str) -> String {
    let line = s.lines().next().unwrap_or("");
    let mut out: String = line.chars().take(EXCERPT_CHARS).collect();
    if out.len() < s.len() {
        out.push('…');
    }
    out
}

/// `a`, `a` and `b`, `a`, `b` and `c`: backticked names for a message.
pub fn list(names: &[&str]) -> String {
    join(names, "and")
}

/// `a`, `a` or `b`, `a`, `b` or `c`: backticked choices for a message.
pub fn one_of(names: &[&str]) -> String {
    join(names, "or")
}

fn join(names: &[&str], conjunction: &str) -> String {
    let quoted: Vec<String> = names.iter().map(|n| format!("`{n}`")).collect();
    match quoted.as_slice() {
        [] => String::new(),
        [one] => one.clone(),
        [init @ .., last] => format!("{} {conjunction} {last}", init.join(", ")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;

    #[test]
    fn misspellings_are_close_and_unambiguous() {
        assert_eq!(
            misspelling_of("supercedes", &TOP_LEVEL_KEYS),
            Some("supersedes")
        );
        assert_eq!(
            misspelling_of("superseeds", &TOP_LEVEL_KEYS),
            Some("supersedes")
        );
        assert_eq!(
            misspelling_of("expire_at", &TOP_LEVEL_KEYS),
            Some("expires_at")
        );
        assert_eq!(
            misspelling_of("expiresAt", &TOP_LEVEL_KEYS),
            Some("expires_at")
        );
        assert_eq!(
            misspelling_of("expiry", &TOP_LEVEL_KEYS),
            Some("expires_at")
        );
        assert_eq!(
            misspelling_of("sucess_count", &TOP_LEVEL_KEYS),
            Some("success_count")
        );
        assert_eq!(
            misspelling_of("successCount", &TOP_LEVEL_KEYS),
            Some("success_count")
        );
        assert_eq!(misspelling_of("Title", &TOP_LEVEL_KEYS), Some("title"));
        assert_eq!(misspelling_of("tag", &TRIGGER_KEYS), Some("tags"));
        assert_eq!(misspelling_of("target", &TRIGGER_KEYS), Some("targets"));
        assert_eq!(
            misspelling_of("descripton", &TRIGGER_KEYS),
            Some("description")
        );
        assert_eq!(misspelling_of("rule", &TARGET_KEYS), Some("role"));
        assert_eq!(misspelling_of("notes", &EVIDENCE_KEYS), Some("note"));
        // allowed keys, far keys, short keys two edits away
        assert_eq!(misspelling_of("title", &TOP_LEVEL_KEYS), None);
        assert_eq!(misspelling_of("author", &TOP_LEVEL_KEYS), None);
        assert_eq!(misspelling_of("tg", &TRIGGER_KEYS), None);
        assert_eq!(misspelling_of("id", &EVIDENCE_KEYS), None);
        // `count` is as far from success_count as from failure_count: too far for both anyway
        assert_eq!(misspelling_of("count", &TOP_LEVEL_KEYS), None);
    }

    #[test]
    fn closest_choice() {
        let outcomes = ["success", "failure", "mixed"];
        assert_eq!(closest("sucess", &outcomes), Some("success"));
        assert_eq!(closest("Failure", &outcomes), Some("failure"));
        assert_eq!(closest("failed", &outcomes), Some("failure"));
        assert_eq!(closest("partial", &outcomes), None);
        let kinds = ["run", "conversation", "work-item", "audit", "wiki-page"];
        assert_eq!(closest("work_item", &kinds), Some("work-item"));
        assert_eq!(closest("workitem", &kinds), Some("work-item"));
        assert_eq!(closest("wiki", &kinds), Some("wiki-page"));
        assert_eq!(closest("commit", &kinds), None);
    }

    #[test]
    fn catch_all_globs() {
        for glob in ["*", "**", "**/*", "*/**", " * "] {
            assert!(matches_everything(glob), "{glob}");
        }
        for glob in ["researcher", "research*", "*-lead", "/", "", "?"] {
            assert!(!matches_everything(glob), "{glob}");
        }
    }

    #[test]
    fn slug_suggestions() {
        assert_eq!(
            slug_suggestion("Cite_Source URL").as_deref(),
            Some("cite-source-url")
        );
        assert_eq!(slug_suggestion("../x").as_deref(), None);
        assert_eq!(
            slug_suggestion("../etc/passwd").as_deref(),
            Some("etcpasswd")
        );
        assert_eq!(slug_suggestion("ok-slug"), None);
        assert_eq!(slug_suggestion("-"), None);
    }

    #[test]
    fn tag_problems() {
        assert_eq!(tag_problem("ui-automation"), None);
        assert_eq!(tag_problem("a"), None);
        assert_eq!(tag_problem("trailing-"), None);
        assert_eq!(
            tag_problem("Research").as_deref(),
            Some("uppercase letter `R` at column 1")
        );
        assert_eq!(
            tag_problem("rate_limit").as_deref(),
            Some("underscore at column 5")
        );
        assert_eq!(
            tag_problem("3d").as_deref(),
            Some("starts with a digit, not a letter")
        );
        assert_eq!(tag_problem("").as_deref(), Some("it is empty"));
    }

    /// Lint a bank of hostile and mangled frontmatters with every rule: nothing may panic, and
    /// every diagnostic must point inside its file.
    #[test]
    fn schema_rules_never_panic() {
        let valid = "---\nschema: \"agentlesson/v1\"\nslug: ab\ntitle: T é\ntrigger:\n  description: d\n  tags: [x, Y]\n  targets:\n    - {role: \"[x\", skill: '*'}\n    - {}\n  metadata: {acme: {tags: 1}}\noutcome: sucess\nevidence:\n  - &e {kind: run, ref: r1, notes: n}\n  - *e\nconfidence: 2\nsuccess_count: -1\nsupercedes: [A_b]\nexpires_at: '2026-10-01'\nmetadata: {slug: x}\n---\n# T\n";
        let mut files: Vec<String> = vec![
            "---\n---\n".into(),
            "---\n~\n---\n".into(),
            "---\n[a, b]\n---\n".into(),
            "---\n? [a, b]\n: c\n? {x: y}\n: z\n---\n".into(),
            "---\ntrigger: &t {description: *t}\n---\n".into(),
            "---\nschema:\nslug:\ntitle:\ntrigger:\noutcome:\nevidence:\n---\n".into(),
            "---\nevidence: [[], {}, ~, *x]\n---\n".into(),
            "---\nexpires_at: \"2026-10-01\\u0054\"\nschema: 'agent\\learning/v1'\n---\n".into(),
            "---\ntrigger:\n  targets: [{role: [a]}, {role: {a: b}}, ~]\n  tags: [[x], ~]\n---\n"
                .into(),
            format!(
                "---\nslug: {}\ntitle: {}\n---\n",
                "a".repeat(5000),
                "é".repeat(5000)
            ),
        ];
        // every prefix and every one-character deletion of a lesson full of findings
        let cuts: Vec<usize> = valid.char_indices().map(|(i, _)| i).collect();
        for (n, &i) in cuts.iter().enumerate().step_by(3) {
            files.push(valid[..i].to_string());
            let next = cuts.get(n + 1).copied().unwrap_or(valid.len());
            files.push(format!("{}{}", &valid[..i], &valid[next..]));
        }
        let dir = tempfile::tempdir().unwrap();
        for (i, text) in files.iter().enumerate() {
            std::fs::write(dir.path().join(format!("case-{i}.md")), text).unwrap();
        }
        let bank = crate::bank::Bank::load_with(
            dir.path(),
            &crate::bank::Overlay::new(),
            "2026-11-22T12:00:00Z".parse().unwrap(),
        )
        .unwrap();
        let diagnostics = crate::lint::lint(&bank, &crate::lint::Selection::default());
        for d in &diagnostics {
            let doc = bank.documents.iter().find(|doc| doc.source.path == d.path);
            let len = doc.map_or(0, |doc| doc.source.text.len());
            assert!(d.range.start <= d.range.end && d.range.end <= len, "{d:?}");
        }
        let codes: HashSet<&str> = diagnostics.iter().map(|d| d.code).collect();
        for code in [
            "S001", "S003", "S005", "S008", "S009", "S012", "S013", "S017", "S019", "T002",
        ] {
            assert!(codes.contains(code), "no {code} in {codes:?}");
        }
    }

    #[test]
    fn excerpts_and_lists() {
        assert_eq!(excerpt("short"), "short");
        assert_eq!(excerpt("two\nlines"), "two…");
        assert_eq!(excerpt(&"é".repeat(70)).chars().count(), EXCERPT_CHARS + 1);
        assert_eq!(list(&["a"]), "`a`");
        assert_eq!(list(&["a", "b", "c"]), "`a`, `b` and `c`");
        assert_eq!(one_of(&["a", "b"]), "`a` or `b`");
    }
}
