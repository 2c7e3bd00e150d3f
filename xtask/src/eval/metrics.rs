//! nDCG@k, Recall@k and MRR@k of one ranking against graded judgments, as trec_eval and BEIR
//! (pytrec_eval) compute them: linear gains (the judgment's grade), a `log2(rank + 1)` discount,
//! the ideal DCG from the judgments' top k grades; a document is relevant when its grade is > 0.

use std::collections::{HashMap, HashSet};

/// The three measures for one query.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Scores {
    /// nDCG@k.
    pub ndcg: f64,
    /// Recall@k.
    pub recall: f64,
    /// Reciprocal rank of the first relevant document within the top k (0 when none).
    pub mrr: f64,
}

/// Score `ranking` (document ids, best first; repeats after the first are ignored) against
/// `judged` (document id to grade; unjudged documents have grade 0), cut at `k`.
pub fn evaluate(ranking: &[String], judged: &HashMap<String, f64>, k: usize) -> Scores {
    let grade = |id: &str| judged.get(id).copied().unwrap_or(0.0).max(0.0);
    let mut seen = HashSet::new();
    let top: Vec<&str> = ranking
        .iter()
        .map(String::as_str)
        .filter(|id| seen.insert(*id))
        .take(k)
        .collect();
    let discount = |i: usize| 1.0 / ((i + 2) as f64).log2();
    let dcg: f64 = top
        .iter()
        .enumerate()
        .map(|(i, id)| grade(id) * discount(i))
        .sum();
    let mut ideal: Vec<f64> = judged.values().map(|&g| g.max(0.0)).collect();
    ideal.sort_by(|a, b| b.total_cmp(a));
    let idcg: f64 = ideal
        .iter()
        .take(k)
        .enumerate()
        .map(|(i, g)| g * discount(i))
        .sum();
    let relevant = judged.values().filter(|&&g| g > 0.0).count();
    let found = top.iter().filter(|id| grade(id) > 0.0).count();
    let first = top.iter().position(|id| grade(id) > 0.0);
    Scores {
        ndcg: if idcg > 0.0 { dcg / idcg } else { 0.0 },
        recall: if relevant > 0 {
            found as f64 / relevant as f64
        } else {
            0.0
        },
        mrr: first.map_or(0.0, |i| 1.0 / (i + 1) as f64),
    }
}

/// The mean of each measure over queries.
pub fn mean(scores: &[Scores]) -> Scores {
    let n = scores.len().max(1) as f64;
    Scores {
        ndcg: scores.iter().map(|s| s.ndcg).sum::<f64>() / n,
        recall: scores.iter().map(|s| s.recall).sum::<f64>() / n,
        mrr: scores.iter().map(|s| s.mrr).sum::<f64>() / n,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ids(v: &[&str]) -> Vec<String> {
        v.iter().map(|s| s.to_string()).collect()
    }

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() < 1e-9
    }

    #[test]
    fn hand_computed_example() {
        // Judgments: a=3, b=2, c=1, d=0 (judged not relevant). Ranking: x, b, a, d, c; k = 3.
        // DCG@3  = 0/log2(2) + 2/log2(3) + 3/log2(4)          = 1.261859507 + 1.5 = 2.761859507
        // IDCG@3 = 3/log2(2) + 2/log2(3) + 1/log2(4) = 3 + 1.261859507 + 0.5   = 4.761859507
        // nDCG@3 = 2.761859507 / 4.761859507 = 0.579996008...
        // Recall@3 = |{b, a}| / |{a, b, c}| = 2/3; MRR@3 = 1/2 (b at rank 2).
        let judged: HashMap<String, f64> = [("a", 3.0), ("b", 2.0), ("c", 1.0), ("d", 0.0)]
            .into_iter()
            .map(|(k, v)| (k.to_string(), v))
            .collect();
        let s = evaluate(&ids(&["x", "b", "a", "d", "c"]), &judged, 3);
        let dcg = 2.0 / 3f64.log2() + 1.5;
        let idcg = 3.0 + 2.0 / 3f64.log2() + 0.5;
        assert!(close(s.ndcg, dcg / idcg), "{s:?}");
        assert!((s.ndcg - 0.579_996_008).abs() < 1e-8, "{s:?}");
        assert!(close(s.recall, 2.0 / 3.0));
        assert!(close(s.mrr, 0.5));

        // At k = 5 c is found too: recall 1, DCG gains c/log2(6).
        let s5 = evaluate(&ids(&["x", "b", "a", "d", "c"]), &judged, 5);
        let dcg5 = dcg + 1.0 / 6f64.log2();
        let idcg5 = idcg; // only three relevant documents
        assert!(close(s5.ndcg, dcg5 / idcg5));
        assert!(close(s5.recall, 1.0));

        // The ideal ranking scores 1; repeats do not count twice; nothing found scores 0.
        let perfect = evaluate(&ids(&["a", "b", "c"]), &judged, 3);
        assert_eq!(
            perfect,
            Scores {
                ndcg: 1.0,
                recall: 1.0,
                mrr: 1.0
            }
        );
        let repeated = evaluate(&ids(&["c", "c", "c"]), &judged, 3);
        assert!(close(repeated.recall, 1.0 / 3.0));
        assert_eq!(evaluate(&ids(&["x", "d"]), &judged, 3), Scores::default());
        assert_eq!(evaluate(&[], &HashMap::new(), 3), Scores::default());

        let m = mean(&[perfect, Scores::default()]);
        assert_eq!(
            m,
            Scores {
                ndcg: 0.5,
                recall: 0.5,
                mrr: 0.5
            }
        );
    }
}
