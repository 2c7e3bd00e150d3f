//! minijinja templates: built into the binary, overridable by a bank's `templates/<name>`.
//!
//! Both generated files (`_index.md`, a new lesson) go through here, so an override behaves
//! the same way for each: same filters, same whitespace rules, same errors.

use std::path::{Path, PathBuf};

use minijinja::value::Value;
use minijinja::{AutoEscape, Environment, Error, ErrorKind, UndefinedBehavior};
use serde::Serialize;

pub use crate::layout::TEMPLATES_DIR;

/// A template could not be read, parsed or rendered.
#[derive(Debug, thiserror::Error)]
pub enum TemplateError {
    /// The bank's override exists but cannot be read.
    #[error("cannot read {path}: {source}")]
    Io {
        /// The override file.
        path: String,
        /// The cause.
        source: std::io::Error,
    },
    /// The template has a syntax error or fails while rendering.
    #[error("{origin}{line}: {message}; {hint}", line = line.map(|l| format!(":{l}")).unwrap_or_default())]
    Invalid {
        /// The override file, or `built-in <name>`.
        origin: String,
        /// 1-based line in the template, when known.
        line: Option<usize>,
        /// What is wrong.
        message: String,
        /// What to do next.
        hint: &'static str,
    },
}

/// A template's text and where it came from.
#[derive(Debug, Clone)]
pub struct Template {
    name: &'static str,
    source: String,
    /// The bank's override file, or `None` for the built-in template.
    pub path: Option<PathBuf>,
}

impl Template {
    /// The bank's `templates/<name>` if it exists, else `builtin`.
    pub fn load(bank: &Path, name: &'static str, builtin: &str) -> Result<Template, TemplateError> {
        let path = bank.join(TEMPLATES_DIR).join(name);
        match std::fs::read_to_string(&path) {
            Ok(source) => Ok(Template {
                name,
                source,
                path: Some(path),
            }),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Template {
                name,
                source: builtin.to_string(),
                path: None,
            }),
            Err(source) => Err(TemplateError::Io {
                path: path.display().to_string(),
                source,
            }),
        }
    }

    /// Whether the template's text is `text`.
    pub fn is_source(&self, text: &str) -> bool {
        self.source == text
    }

    /// Whether the template's text contains `word` anywhere (a variable it may use).
    pub fn mentions(&self, word: &str) -> bool {
        self.source.contains(word)
    }

    /// The built-in template, ignoring any override.
    pub fn builtin(name: &'static str, builtin: &str) -> Template {
        Template {
            name,
            source: builtin.to_string(),
            path: None,
        }
    }

    /// Render with `context`.
    pub fn render(&self, context: impl Serialize) -> Result<String, TemplateError> {
        self.compile()?.render(context)
    }

    /// The template compiled, to render with more than one context: compiling it is about
    /// what a rendering costs, and the prompt block renders a search's K hits up to K + 1
    /// times to fit them in its budget.
    pub fn compile(&self) -> Result<Compiled<'_>, TemplateError> {
        let mut env = environment();
        env.add_template(self.name, &self.source)
            .map_err(|e| self.error(&e))?;
        Ok(Compiled {
            template: self,
            env,
        })
    }

    fn error(&self, err: &Error) -> TemplateError {
        let (origin, hint) = match &self.path {
            Some(p) => (
                p.display().to_string(),
                "fix the template, or delete it to use the built-in one",
            ),
            None => (
                format!("built-in {}", self.name),
                "this is a bug in lesson; please report it",
            ),
        };
        let message = match err.detail() {
            Some(detail) => format!("{}: {detail}", err.kind()),
            None => err.kind().to_string(),
        };
        TemplateError::Invalid {
            origin,
            line: err.line(),
            message,
            hint,
        }
    }
}

/// A [`Template`] compiled ([`Template::compile`]).
#[derive(Debug)]
pub struct Compiled<'a> {
    template: &'a Template,
    env: Environment<'a>,
}

impl Compiled<'_> {
    /// Render with `context`, as [`Template::render`] does.
    pub fn render(&self, context: impl Serialize) -> Result<String, TemplateError> {
        let template = self.template;
        self.env
            .get_template(template.name)
            .and_then(|t| t.render(context))
            .map_err(|e| template.error(&e))
    }
}

fn environment<'a>() -> Environment<'a> {
    let mut env = Environment::new();
    env.set_trim_blocks(true);
    env.set_lstrip_blocks(true);
    env.set_keep_trailing_newline(true);
    env.set_undefined_behavior(UndefinedBehavior::SemiStrict);
    env.set_auto_escape_callback(|_| AutoEscape::None);
    env.add_filter("cell", cell);
    env.add_filter("yaml", yaml);
    env
}

/// Text for a markdown table cell: `|` escaped, line breaks folded into one space.
pub fn table_cell(s: &str) -> String {
    if !needs_cell_escape(s) {
        return s.to_string();
    }
    let mut out = String::with_capacity(s.len());
    let mut pending_space = false;
    for c in s.chars() {
        if matches!(c, '\n' | '\r' | '\u{85}' | '\u{2028}' | '\u{2029}') {
            pending_space = true;
            continue;
        }
        if pending_space {
            if !out.ends_with(' ') && !out.is_empty() && c != ' ' {
                out.push(' ');
            }
            pending_space = false;
        }
        if c == '|' {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

/// Append `s` to `out` made safe for a markdown table cell (what [`table_cell`] makes of it),
/// without a copy when it needs no escaping.
pub fn push_table_cell(out: &mut String, s: &str) {
    if needs_cell_escape(s) {
        out.push_str(&table_cell(s));
    } else {
        out.push_str(s);
    }
}

/// Filter `cell`: a value made safe for a markdown table cell.
fn cell(value: Value) -> Value {
    match value.as_str() {
        // most cells need no escaping: hand the value back without copying it
        Some(s) if !needs_cell_escape(s) => value,
        Some(s) => Value::from(table_cell(s)),
        None => Value::from(table_cell(&value.to_string())),
    }
}

/// Whether [`table_cell`] would change `s`.
fn needs_cell_escape(s: &str) -> bool {
    s.bytes().any(|b| matches!(b, b'|' | b'\n' | b'\r'))
        || (!s.is_ascii()
            && s.chars()
                .any(|c| matches!(c, '\u{85}' | '\u{2028}' | '\u{2029}')))
}

/// Filter `yaml`: a string as a YAML scalar (quoted when needed), a sequence as a flow
/// sequence, numbers and booleans as they are.
fn yaml(value: Value) -> Result<String, Error> {
    if let Some(s) = value.as_str() {
        return Ok(crate::yaml::emit::yaml_scalar(s));
    }
    if value.is_none() || value.is_undefined() {
        return Ok("null".into());
    }
    if matches!(
        value.kind(),
        minijinja::value::ValueKind::Seq | minijinja::value::ValueKind::Iterable
    ) {
        let mut items = Vec::new();
        for item in value.try_iter()? {
            let Some(s) = item.as_str() else {
                return Err(Error::new(
                    ErrorKind::InvalidOperation,
                    "the yaml filter takes a sequence of strings",
                ));
            };
            items.push(crate::yaml::emit::yaml_flow_scalar(s));
        }
        return Ok(format!("[{}]", items.join(", ")));
    }
    match value.kind() {
        minijinja::value::ValueKind::Number | minijinja::value::ValueKind::Bool => {
            Ok(value.to_string())
        }
        kind => Err(Error::new(
            ErrorKind::InvalidOperation,
            format!("the yaml filter cannot write a {kind}"),
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cells_escape_pipes_and_fold_line_breaks() {
        assert_eq!(table_cell("a | b"), "a \\| b");
        assert_eq!(table_cell("one\ntwo"), "one two");
        assert_eq!(table_cell("one \r\n two"), "one  two");
        assert_eq!(table_cell("\nx"), "x");
    }

    #[test]
    fn a_compiled_template_renders_each_context_as_a_fresh_rendering_does() {
        let t = Template::builtin("t.j2", "{% for x in xs %}{{ x }},{% endfor %}\n{{ y.z }}");
        let c = t.compile().unwrap();
        let ctx = |xs: &[u32]| serde_json::json!({"xs": xs, "y": {"z": xs.len()}});
        // (the line break after a block tag is trimmed)
        assert_eq!(c.render(ctx(&[4, 5])).unwrap(), "4,5,2");
        for xs in [&[][..], &[1], &[1, 2, 3], &[]] {
            assert_eq!(c.render(ctx(xs)).unwrap(), t.render(ctx(xs)).unwrap());
        }
        // an error while rendering is the template's, at its line, as a fresh rendering's
        let bad = serde_json::json!({"xs": [1]});
        let err = c.render(&bad).unwrap_err().to_string();
        assert!(err.starts_with("built-in t.j2:2: "), "{err}");
        assert_eq!(err, t.render(&bad).unwrap_err().to_string());
        assert_eq!(c.render(ctx(&[7])).unwrap(), "7,1");
    }

    #[test]
    fn syntax_errors_name_the_file_and_line() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join(TEMPLATES_DIR)).unwrap();
        std::fs::write(
            dir.path().join("templates/_index.md.j2"),
            "# ok\n\n{% for x in y %}\n",
        )
        .unwrap();
        let t = Template::load(dir.path(), "_index.md.j2", "builtin").unwrap();
        let err = t.render(()).unwrap_err().to_string();
        let path = dir.path().join("templates/_index.md.j2");
        assert!(
            err.starts_with(&format!("{}:3: syntax error", path.display())),
            "{err}"
        );
        assert!(err.ends_with("delete it to use the built-in one"), "{err}");
    }

    #[test]
    fn undefined_values_are_errors() {
        let t = Template::builtin("x.j2", "a\n{{ nope.deeper }}\n");
        let err = t.render(()).unwrap_err().to_string();
        assert!(err.starts_with("built-in x.j2:2: undefined value"), "{err}");
    }

    #[test]
    fn yaml_filter_quotes_strings_and_sequences() {
        #[derive(Serialize)]
        struct Ctx {
            title: &'static str,
            tags: Vec<&'static str>,
            n: f64,
        }
        let t = Template::builtin(
            "x.j2",
            "{{ title | yaml }} {{ tags | yaml }} {{ n | yaml }}",
        );
        let out = t
            .render(Ctx {
                title: "a: b",
                tags: vec!["x", "y,z"],
                n: 0.5,
            })
            .unwrap();
        assert_eq!(out, "'a: b' [x, 'y,z'] 0.5");
    }
}
