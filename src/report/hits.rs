//! Search answers for people and programs: the table of `lesson search --format text` and the
//! JSON of `--format json` (every hit with its score parts and the gates it passed). The prompt
//! block itself is rendered by [`crate::retrieve::render`], from the bank's template.

use std::path::Path;

use serde::Serialize;

use crate::retrieve::{Answer, HeldBack, Hit};

/// `lesson search --format json`: the request as resolved, the hits shown, and the figures.
#[derive(Debug, Serialize)]
struct AnswerJson<'a> {
    request: RequestJson<'a>,
    hits: Vec<Hit>,
    matched: usize,
    dropped_by_budget: usize,
    prompt_tokens: usize,
    lessons: u64,
    eligible: u64,
    /// Lessons never served because their own file has error-level findings.
    #[serde(skip_serializing_if = "<[_]>::is_empty")]
    held_back: &'a [HeldBack],
}

#[derive(Debug, Serialize)]
struct RequestJson<'a> {
    text: &'a str,
    tags: &'a [String],
    inferred_tags: &'a [String],
    operator: Option<&'a str>,
    role: Option<&'a str>,
    skill: Option<&'a str>,
    k: usize,
    budget: usize,
    include_expired: bool,
    now: String,
}

/// The answer as pretty JSON, paths under `root` (as the other commands show paths), scores
/// to 6 decimals.
pub fn json(answer: &Answer, root: &Path) -> serde_json::Result<String> {
    let request = &answer.request;
    let report = AnswerJson {
        request: RequestJson {
            text: &request.text,
            tags: &answer.given_tags,
            inferred_tags: &answer.inferred_tags,
            operator: request.operator.as_deref(),
            role: request.role.as_deref(),
            skill: request.skill.as_deref(),
            k: answer.k,
            budget: answer.budget,
            include_expired: request.include_expired,
            now: request.now.to_string(),
        },
        hits: answer
            .hits
            .iter()
            .map(|h| for_json(root, h.clone()))
            .collect(),
        matched: answer.matched,
        dropped_by_budget: answer.dropped_by_budget(),
        prompt_tokens: answer.prompt.tokens,
        lessons: answer.lessons,
        eligible: answer.eligible,
        held_back: &answer.held_back,
    };
    serde_json::to_string_pretty(&report)
}

/// Why an answer whose hits all matched shows none: they did not fit the budget.
pub fn over_budget(answer: &Answer) -> String {
    let n = answer.matched;
    format!(
        "{n} lesson{} matched, but not even the best fits the budget of {} tokens (raise --budget)",
        if n == 1 { "" } else { "s" },
        answer.budget
    )
}

/// A hit as JSON shows it: the path as the other commands show paths, scores to 6 decimals.
fn for_json(root: &Path, mut h: Hit) -> Hit {
    h.path = root.join(&h.path).display().to_string();
    let round = |v: f64| (v * 1e6).round() / 1e6;
    let s = &mut h.score;
    s.similarity = round(s.similarity);
    s.confidence = round(s.confidence);
    s.count_factor = round(s.count_factor);
    s.recency = round(s.recency);
    s.score = round(s.score);
    h
}

/// `lesson search --format text`: the table of hits, the request's tags, and a summary line
/// that says why the answer is empty or cut.
pub fn text(answer: &Answer) -> String {
    let mut out = table(&answer.hits);
    let mut tags: Vec<String> = answer
        .given_tags
        .iter()
        .map(|t| format!("{t} (given)"))
        .collect();
    tags.extend(
        answer
            .inferred_tags
            .iter()
            .map(|t| format!("{t} (in the request)")),
    );
    if !tags.is_empty() {
        out.push_str(&format!("request tags: {}\n", tags.join(", ")));
    }
    let passed = format!(
        "{} of {} lessons pass the gates",
        answer.eligible, answer.lessons
    );
    if answer.hits.is_empty() && answer.matched > 0 {
        out.push_str(&format!("no lesson shown: {}\n", over_budget(answer)));
    } else if answer.hits.is_empty() {
        let why = if answer.eligible == 0 {
            "status, targets and tags"
        } else {
            "none is similar enough to the request"
        };
        out.push_str(&format!("no lesson applies: {passed} ({why})\n"));
    } else {
        let cut = match answer.dropped_by_budget() {
            0 => String::new(),
            cut => format!(", {cut} more did not fit the budget"),
        };
        out.push_str(&format!(
            "{} shown{cut}; {passed}; the prompt block takes {} of {} tokens\n",
            answer.hits.len(),
            answer.prompt.tokens,
            answer.budget
        ));
    }
    out
}

/// An aligned table of hits for people: rank, score and its factors, slug, marks and title.
fn table(hits: &[Hit]) -> String {
    if hits.is_empty() {
        return String::new();
    }
    let header = [
        "#", "SCORE", "SIM", "CONF", "COUNT", "RECENCY", "OUTCOME", "SLUG", "TITLE",
    ]
    .map(String::from);
    let rows: Vec<[String; 9]> = hits
        .iter()
        .enumerate()
        .map(|(i, h)| {
            let mut title = h.title.split_whitespace().collect::<Vec<_>>().join(" ");
            if h.caution {
                title.push_str(" [caution]");
            }
            if !h.conflicts_with.is_empty() {
                title.push_str(&format!(
                    " [conflicts with {}]",
                    h.conflicts_with.join(", ")
                ));
            }
            if h.gates.status != "active" {
                title.push_str(&format!(" [{}]", h.gates.status));
            }
            [
                (i + 1).to_string(),
                format!("{:.3}", h.score.score),
                format!("{:.3}", h.score.similarity),
                format!("{:.2}", h.score.confidence),
                format!("{:.2}", h.score.count_factor),
                format!("{:.2}", h.score.recency),
                h.outcome.as_str().to_string(),
                h.slug.clone(),
                title,
            ]
        })
        .collect();
    super::aligned(&header, &rows)
}
