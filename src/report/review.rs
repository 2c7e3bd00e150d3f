//! Review findings for people (`lesson review`): one line a finding, then a count by reason.

use crate::curate::review::{Finding, Reason};

/// The findings, one a line (`path: reason: message`), and a closing line.
pub fn text(findings: &[Finding]) -> String {
    let mut out = String::new();
    for f in findings {
        out.push_str(&format!(
            "{}: {}: {}\n",
            f.path,
            f.reason.as_str(),
            f.message
        ));
    }
    if findings.is_empty() {
        out.push_str("nothing to review\n");
        return out;
    }
    let mut lessons: Vec<&str> = findings.iter().map(|f| f.slug.as_str()).collect();
    lessons.sort_unstable();
    lessons.dedup();
    let mut parts = Vec::new();
    for reason in [
        Reason::Quarantined,
        Reason::FailureDominant,
        Reason::Expired,
        Reason::MixedBand,
        Reason::ImportedCounts,
        Reason::NeverApplied,
        Reason::NearDuplicate,
        Reason::ShownNeverFollowed,
        Reason::Unshown,
        Reason::Retention,
    ] {
        let n = findings.iter().filter(|f| f.reason == reason).count();
        if n > 0 {
            parts.push(format!("{n} {}", reason.as_str()));
        }
    }
    out.push_str(&format!(
        "{} lesson{} to review: {}\n",
        lessons.len(),
        if lessons.len() == 1 { "" } else { "s" },
        parts.join(", ")
    ));
    out
}

/// `lesson review --format json` of a layered stack: every bank's findings, each with a
/// `bank` field (`.` for the bank in front), in the stack's order.
pub fn json_with_banks(banks: &[(&str, Vec<Finding>)]) -> serde_json::Result<serde_json::Value> {
    let mut out = Vec::new();
    for (bank, findings) in banks {
        for f in findings {
            let mut value = serde_json::to_value(f)?;
            if let Some(map) = value.as_object_mut() {
                map.insert("bank".into(), (*bank).into());
            }
            out.push(value);
        }
    }
    Ok(serde_json::Value::Array(out))
}
