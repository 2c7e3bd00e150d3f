//! `supersession-cycle` (B005).

use std::collections::{BTreeMap, VecDeque};

use foldhash::{HashMap, HashSet};

use crate::bank::Bank;
use crate::declare_rule;
use crate::diagnostic::Diagnostic;
use crate::document::{name_hash, Document};
use crate::lesson::Lesson;
use crate::lint::Check;

declare_rule! {
    /// Lessons supersede each other in a loop.
    ///
    /// ## What it does
    /// Finds cycles in the supersession graph (`a` supersedes `b` supersedes ... `a`) and reports
    /// each group of lessons caught in one once, on the lesson whose slug sorts first, with a
    /// shortest cycle through it: `a -> b -> a`.
    ///
    /// ## Why is this bad?
    /// A superseded lesson is excluded from retrieval. In a cycle every lesson is superseded, so
    /// none of them is ever retrieved, and there is no newest lesson to say which advice holds.
    ///
    /// ## Example
    /// ```text
    /// # file: batch-embeddings.md
    /// supersedes: [retry-on-429]
    /// # file: retry-on-429.md
    /// supersedes: [batch-embeddings]
    /// ```
    pub static RULE = {
        code: "B005",
        name: "supersession-cycle",
        level: Error,
        fixable: false,
        check: Check::Bank(check),
    }
}

/// At most this many slugs are spelled out in a cycle's path.
const PATH_SHOWN: usize = 8;

fn check(bank: &Bank, out: &mut Vec<Diagnostic>) {
    // every lesson on a cycle supersedes another, so only those are nodes: the lessons that
    // win their slug (the first file, as in `Bank::by_slug`) and have `supersedes` entries
    // (each document's keys say whether its lesson supersedes anything, and hash its slug)
    let superseding: HashSet<&str> = bank
        .documents
        .iter()
        .filter(|doc| doc.keys().supersedes)
        .filter_map(|doc| doc.lesson.as_deref())
        .map(|lesson| lesson.slug.value.as_str())
        .collect();
    if superseding.is_empty() {
        return;
    }
    let hashes: HashSet<u64> = superseding.iter().map(|slug| name_hash(slug)).collect();
    let mut winners: BTreeMap<&str, (&Document, &Lesson)> = BTreeMap::new();
    for doc in &bank.documents {
        if !hashes.contains(&doc.keys().slug) {
            continue;
        }
        let Some(lesson) = doc.lesson.as_deref() else {
            continue;
        };
        let slug = lesson.slug.value.as_str();
        if superseding.contains(slug) {
            winners.entry(slug).or_insert((doc, lesson));
        }
    }
    // sorted by slug: a cycle is reported from its smallest slug
    let lessons: Vec<_> = winners
        .into_iter()
        .filter(|(_, (_, lesson))| !lesson.supersedes.is_empty())
        .collect();
    let index: HashMap<&str, usize> = lessons
        .iter()
        .enumerate()
        .map(|(i, (slug, _))| (*slug, i))
        .collect();
    let edges: Vec<Vec<usize>> = lessons
        .iter()
        .enumerate()
        .map(|(i, (_, (_, lesson)))| {
            let mut targets: Vec<usize> = Vec::new();
            for entry in &lesson.supersedes {
                if let Some(&j) = index.get(entry.value.as_str()) {
                    if j != i && !targets.contains(&j) {
                        targets.push(j);
                    }
                }
            }
            targets
        })
        .collect();
    for cycle in cycles(&edges) {
        let (first, next) = (cycle.path[0], cycle.path[1]);
        let (_, (doc, lesson)) = &lessons[first];
        let Some(entry) = lesson
            .supersedes
            .iter()
            .find(|e| e.value == lessons[next].0)
        else {
            continue;
        };
        let slugs: Vec<&str> = cycle.path.iter().map(|&i| lessons[i].0).collect();
        let help = if cycle.members > cycle.path.len() - 1 {
            format!(
                "{} lessons supersede one another in loops, so none of them is retrieved; remove the entries that point the wrong way",
                cycle.members
            )
        } else {
            "every lesson in a cycle is superseded, so none of them is retrieved; remove the entry that points the wrong way".to_string()
        };
        out.push(
            Diagnostic::new(
                &RULE,
                &doc.source,
                entry.span.clone(),
                format!("supersession cycle: {}", path_text(&slugs)),
            )
            .with_help(help),
        );
    }
}

/// `a -> b -> a`; a long path keeps its start and end: `a -> b -> ... -> z -> a`.
fn path_text(slugs: &[&str]) -> String {
    if slugs.len() <= PATH_SHOWN {
        return slugs.join(" -> ");
    }
    let head = &slugs[..PATH_SHOWN - 2];
    let tail = &slugs[slugs.len() - 2..];
    format!(
        "{} -> ... ({} more) -> {}",
        head.join(" -> "),
        slugs.len() - PATH_SHOWN,
        tail.join(" -> ")
    )
}

/// One group of mutually superseding lessons.
#[derive(Debug, PartialEq, Eq)]
struct Cycle {
    /// A shortest cycle through the group's smallest node: `[m, .., m]`.
    path: Vec<usize>,
    /// How many nodes the group (strongly connected component) has.
    members: usize,
}

const NONE: usize = usize::MAX;

/// The cycles of a graph, one per strongly connected component of two or more nodes, in order
/// of their smallest node. Iterative Tarjan, then a breadth-first search inside each component:
/// O(nodes + edges), no recursion.
fn cycles(edges: &[Vec<usize>]) -> Vec<Cycle> {
    let components = components(edges);
    let n = edges.len();
    let mut component_of = vec![NONE; n];
    for (c, members) in components.iter().enumerate() {
        for &v in members {
            component_of[v] = c;
        }
    }
    let mut parent = vec![NONE; n];
    let mut out: Vec<Cycle> = Vec::new();
    for (c, members) in components.iter().enumerate() {
        let Some(&start) = members.iter().min() else {
            continue;
        };
        let Some(path) = shortest_cycle(edges, start, |w| component_of[w] == c, &mut parent) else {
            continue;
        };
        out.push(Cycle {
            path,
            members: members.len(),
        });
    }
    out.sort_by_key(|c| c.path[0]);
    out
}

/// Strongly connected components of two or more nodes.
fn components(edges: &[Vec<usize>]) -> Vec<Vec<usize>> {
    let n = edges.len();
    let mut index = vec![NONE; n];
    let mut low = vec![0; n];
    let mut on_stack = vec![false; n];
    let mut stack: Vec<usize> = Vec::new();
    let mut call: Vec<(usize, usize)> = Vec::new();
    let mut next = 0;
    let mut out = Vec::new();
    for root in 0..n {
        if index[root] != NONE {
            continue;
        }
        index[root] = next;
        low[root] = next;
        next += 1;
        stack.push(root);
        on_stack[root] = true;
        call.push((root, 0));
        while let Some(top) = call.last_mut() {
            let v = top.0;
            let edge = edges[v].get(top.1).copied();
            top.1 += 1;
            match edge {
                Some(w) if w >= n => {}
                Some(w) if index[w] == NONE => {
                    index[w] = next;
                    low[w] = next;
                    next += 1;
                    stack.push(w);
                    on_stack[w] = true;
                    call.push((w, 0));
                }
                Some(w) => {
                    if on_stack[w] {
                        low[v] = low[v].min(index[w]);
                    }
                }
                None => {
                    call.pop();
                    if let Some(&(u, _)) = call.last() {
                        low[u] = low[u].min(low[v]);
                    }
                    if low[v] == index[v] {
                        let mut members = Vec::new();
                        while let Some(w) = stack.pop() {
                            on_stack[w] = false;
                            members.push(w);
                            if w == v {
                                break;
                            }
                        }
                        if members.len() >= 2 {
                            out.push(members);
                        }
                    }
                }
            }
        }
    }
    out
}

/// A shortest path from `start` back to itself through nodes `inside` accepts.
fn shortest_cycle(
    edges: &[Vec<usize>],
    start: usize,
    inside: impl Fn(usize) -> bool,
    parent: &mut [usize],
) -> Option<Vec<usize>> {
    let mut queue = VecDeque::from([start]);
    parent[start] = start;
    let mut last = None;
    'search: while let Some(v) = queue.pop_front() {
        for &w in &edges[v] {
            if w == start {
                last = Some(v);
                break 'search;
            }
            if w < parent.len() && inside(w) && parent[w] == NONE {
                parent[w] = v;
                queue.push_back(w);
            }
        }
    }
    let mut path = vec![start];
    let mut v = last?;
    while v != start {
        path.push(v);
        v = parent[v];
    }
    path[1..].reverse();
    path.push(start);
    Some(path)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn paths(edges: &[Vec<usize>]) -> Vec<(Vec<usize>, usize)> {
        cycles(edges)
            .into_iter()
            .map(|c| (c.path, c.members))
            .collect()
    }

    #[test]
    fn finds_one_cycle_per_component() {
        // 0 -> 1 -> 0; 2 -> 3 -> 4 -> 2 with a chord 3 -> 2; 5 -> 6 (no cycle)
        let edges = vec![
            vec![1],
            vec![0],
            vec![3],
            vec![4, 2],
            vec![2],
            vec![6],
            vec![],
        ];
        assert_eq!(paths(&edges), [(vec![0, 1, 0], 2), (vec![2, 3, 2], 3)]);
    }

    #[test]
    fn no_cycles_in_a_dag_and_self_loops_do_not_count() {
        assert!(paths(&[vec![1, 2], vec![2], vec![]]).is_empty());
        assert!(paths(&[vec![0]]).is_empty());
        assert!(paths(&[]).is_empty());
    }

    #[test]
    fn the_path_starts_at_the_smallest_node() {
        // 2 -> 0 -> 1 -> 2
        let edges = vec![vec![1], vec![2], vec![0]];
        assert_eq!(paths(&edges), [(vec![0, 1, 2, 0], 3)]);
    }

    #[test]
    fn a_long_chain_needs_no_recursion() {
        let n = 200_000;
        let mut edges: Vec<Vec<usize>> = (0..n).map(|i| vec![i + 1]).collect();
        edges[n - 1] = vec![0];
        let found = paths(&edges);
        assert_eq!(found.len(), 1);
        assert_eq!(found[0].0.len(), n + 1);
        edges[n - 1].clear();
        assert!(paths(&edges).is_empty());
    }

    #[test]
    fn long_paths_are_shortened() {
        let slugs: Vec<String> = (0..12).map(|i| format!("s{i}")).collect();
        let refs: Vec<&str> = slugs.iter().map(String::as_str).collect();
        assert_eq!(
            path_text(&refs),
            "s0 -> s1 -> s2 -> s3 -> s4 -> s5 -> ... (4 more) -> s10 -> s11"
        );
        assert_eq!(path_text(&["a", "b", "a"]), "a -> b -> a");
    }
}
