//! Search answers for people and programs: the table of `lesson search --format text` and the
//! JSON of `--format json` (every hit with its score parts and the gates it passed). The prompt
//! block itself is rendered by [`crate::retrieve::render`], from the bank's template.

use std::path::Path;

use serde::Serialize;

use crate::retrieve::{Answer, Explanation, HeldBack, Hit, Retriever, ScoreParts};
pub use crate::watch::serve::{Printed, Shape};

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

/// Print `answer`, found by `retriever`, as `shape` (JSON paths under `root`).
pub fn print(
    retriever: &Retriever,
    answer: &Answer,
    shape: Shape,
    root: &Path,
) -> serde_json::Result<Printed> {
    let mut printed = Printed::default();
    if let Some(problem) = retriever.semantic_problem() {
        printed.warnings.push(format!(
            "[retrieve] model: {problem}; the search is lexical"
        ));
    }
    if shape != Shape::Json {
        let n = answer
            .held_back
            .iter()
            .filter(|h| !h.codes.is_empty())
            .count();
        if n > 0 {
            let lessons = if n == 1 { "lesson" } else { "lessons" };
            printed.notes.push(format!(
                "{n} {lessons} with errors were not served (lesson lint lists them)"
            ));
        }
        let n = answer.held_back.len() - n;
        if n > 0 {
            let lessons = if n == 1 { "lesson was" } else { "lessons were" };
            printed.notes.push(format!(
                "{n} quarantined {lessons} not served (lesson review lists them)"
            ));
        }
    }
    match shape {
        Shape::Prompt => {
            printed.stdout = answer.prompt.text.clone();
            if answer.hits.is_empty() && answer.matched > 0 {
                printed.notes.push(over_budget(answer));
            }
        }
        Shape::Text => printed.stdout = text(answer),
        Shape::Json => {
            printed.stdout = json(answer, root)?;
            printed.stdout.push('\n');
        }
    }
    Ok(printed)
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
    let bank = h.bank.as_deref().filter(|b| *b != crate::layers::FRONT);
    h.path = match bank {
        Some(bank) => root.join(bank).join(&h.path),
        None => root.join(&h.path),
    }
    .display()
    .to_string();
    let round = |v: f64| (v * 1e6).round() / 1e6;
    let s = &mut h.score;
    s.similarity = round(s.similarity);
    s.confidence = round(s.confidence);
    s.count_factor = round(s.count_factor);
    s.recency = round(s.recency);
    s.tag_boost = round(s.tag_boost);
    s.usage = s.usage.map(round);
    s.score = round(s.score);
    h
}

/// `lesson search --explain SLUG --format json`: the slug and the explanation, scores to 6
/// decimals.
pub fn explanation_json(slug: &str, why: &Explanation) -> serde_json::Result<String> {
    let mut value = serde_json::to_value(why)?;
    let round = |v: &mut serde_json::Value| {
        if let Some(x) = v.as_f64() {
            *v = serde_json::json!((x * 1e6).round() / 1e6);
        }
    };
    if let Some(map) = value.as_object_mut() {
        if let Some(score) = map.get_mut("score").and_then(|s| s.as_object_mut()) {
            score.values_mut().for_each(round);
        }
        map.get_mut("similarity").map(round);
        map.insert("slug".into(), slug.into());
    }
    serde_json::to_string_pretty(&value)
}

/// `lesson search --explain SLUG`: one line saying which gate or threshold excludes the
/// lesson, else where it ranks and how its score is made.
pub fn explanation_text(slug: &str, why: &Explanation) -> String {
    let list = |v: &[String]| {
        if v.is_empty() {
            "none".to_string()
        } else {
            v.join(", ")
        }
    };
    let line = match why {
        Explanation::Unknown => {
            "no live lesson has this slug (archived, or not in this bank)".to_string()
        }
        Explanation::HeldBack { codes } => format!(
            "held back: its own file has errors ({}); `lesson lint` says why",
            codes.join(", ")
        ),
        Explanation::Quarantined { rules } => format!(
            "quarantined ({}): `lesson review` lists it; `lesson review --approve {slug}` releases it",
            list(rules)
        ),
        Explanation::Superseded { by } => format!("superseded by {}", list(by)),
        Explanation::Expired { expires_at } => {
            format!("expired at {expires_at} (--include-expired serves it)")
        }
        Explanation::Targets { targets } => {
            let targets: Vec<String> = targets
                .iter()
                .map(|t| {
                    let keys: Vec<String> = [
                        ("operator", &t.operator),
                        ("role", &t.role),
                        ("skill", &t.skill),
                    ]
                    .into_iter()
                    .filter_map(|(k, v)| v.as_ref().map(|v| format!("{k}={v}")))
                    .collect();
                    keys.join(" ")
                })
                .collect();
            format!(
                "excluded by the targets gate: no target matches the caller (--operator, --role, --skill); its targets: {}",
                targets.join("; ")
            )
        }
        Explanation::Tags { request, lesson } => format!(
            "excluded by the tags gate: the request's tags ({}) and the lesson's ({}) share none",
            list(request),
            list(lesson)
        ),
        Explanation::NoMatch => "no term of the request occurs in it".to_string(),
        Explanation::BelowMinSimilarity {
            similarity,
            min_similarity,
        } => format!(
            "excluded by min-similarity: its similarity {similarity:.3} is below {min_similarity}"
        ),
        Explanation::BelowTopK {
            rank,
            matching,
            k,
            score,
        } => format!(
            "matches, but ranks {rank} of {matching}, below the top {k}: {}",
            parts(score)
        ),
        Explanation::OverBudget {
            rank,
            budget,
            score,
        } => format!(
            "ranks {rank}, but the prompt block's budget of {budget} tokens cut it: {}",
            parts(score)
        ),
        Explanation::Shown {
            rank,
            score,
            kept_as_caution,
        } => format!(
            "shown, rank {rank}{}: {}",
            if *kept_as_caution {
                ", kept as a caution"
            } else {
                ""
            },
            parts(score)
        ),
    };
    format!("{slug}: {line}\n")
}

/// A score as the product of its parts.
fn parts(s: &ScoreParts) -> String {
    let usage = s
        .usage
        .map(|u| format!(" × usage {u:.2}"))
        .unwrap_or_default();
    format!(
        "score {:.3} = similarity {:.3} × confidence {:.2} × count factor {:.2} × recency {:.2} × tag boost {:.2}{usage}",
        s.score, s.similarity, s.confidence, s.count_factor, s.recency, s.tag_boost
    )
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
            if h.score.tag_boost != 1.0 {
                title.push_str(&format!(
                    " [tag boost {}]",
                    crate::retrieve::render::decimal(h.score.tag_boost)
                ));
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
            if let Some(bank) = h.bank.as_deref().filter(|b| *b != crate::layers::FRONT) {
                title.push_str(&format!(" [bank {bank}]"));
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
