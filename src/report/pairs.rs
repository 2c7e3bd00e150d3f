//! Near-duplicate pairs for people (`lesson dedup`): one line a pair, then what to do.

use crate::dedup::Pair;

/// The pairs, one a line, and a closing line (also when there is none).
pub fn text(pairs: &[Pair]) -> String {
    let mut out = String::new();
    for pair in pairs {
        out.push_str(&line(pair));
        out.push('\n');
    }
    match pairs.len() {
        0 => out.push_str("no near-duplicates\n"),
        n => out.push_str(&format!(
            "{n} near-duplicate pair{}: merge them (`lesson supersede OLD --by NEW`) or make their triggers distinct\n",
            if n == 1 { "" } else { "s" }
        )),
    }
    out
}

/// One pair: the slugs, the score and its parts, the tags they share.
pub fn line(pair: &Pair) -> String {
    let tags = if pair.shared_tags.is_empty() {
        String::new()
    } else {
        format!(", tags: {}", pair.shared_tags.join(", "))
    };
    let named = |slug: &str, bank: &Option<String>| match bank {
        Some(bank) => format!("{slug} ({bank})"),
        None => slug.to_string(),
    };
    let meaning = match pair.semantic_similarity {
        Some(cosine) => format!(", meaning {cosine:.2}"),
        None => String::new(),
    };
    format!(
        "{} ~ {}  score {:.2} (slug {:.2}, text {:.2}{meaning}{tags})",
        named(&pair.a, &pair.a_bank),
        named(&pair.b, &pair.b_bank),
        pair.score,
        pair.slug_similarity,
        pair.text_similarity
    )
}
