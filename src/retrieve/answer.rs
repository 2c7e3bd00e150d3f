//! The answer to a search as every front end gives it (`lesson search`, the library, MCP): the
//! hits that fit the token budget, best first, with conflicts marked among them, the prompt
//! block that shows them, and the figures that explain an empty or cut answer.

use super::render::{self, Prompt};
use super::{mark_conflicts, Explanation, Hit, Request, RetrieveError, Retriever, Search};

/// A search's answer.
#[derive(Debug, Clone)]
pub struct Answer {
    /// The request, with `k` and `budget` resolved from the bank's `[retrieve]` defaults.
    pub request: Request,
    /// Hits at most (the request's, else `[retrieve] k`).
    pub k: usize,
    /// The prompt block's token budget (the request's, else `[retrieve] budget`).
    pub budget: usize,
    /// The request's tags (given), in normal form.
    pub given_tags: Vec<String>,
    /// Known tags found among the request's words.
    pub inferred_tags: Vec<String>,
    /// The hits the prompt block shows, best first, conflicts marked among them.
    pub hits: Vec<Hit>,
    /// Hits that matched (at most K), before the budget cut.
    pub matched: usize,
    /// The prompt block (`text` is empty when no hit fits).
    pub prompt: Prompt,
    /// Lessons in the bank.
    pub lessons: u64,
    /// Lessons that passed the gates (status, targets, tags).
    pub eligible: u64,
    /// Lessons never served because their own file has error-level findings.
    pub held_back: Vec<super::HeldBack>,
}

impl Answer {
    /// Hits that matched but did not fit the budget.
    pub fn dropped_by_budget(&self) -> usize {
        self.matched - self.hits.len()
    }
}

impl Retriever {
    /// Answer `request`: search, cut to the budget between whole lessons with the bank's prompt
    /// template (`templates/prompt.md.j2`, else the built-in one), and mark conflicts among the
    /// hits shown.
    pub fn answer(&mut self, request: &Request) -> Result<Answer, RetrieveError> {
        let request = self.resolved(request);
        let found = self.search(&request)?;
        self.answer_from(request, found)
    }

    /// [`Retriever::answer`] from the index exactly as it is: `None` where the search would
    /// change it first (a hit's file changed since the last check, the index is damaged, the
    /// bank includes others). What a watcher answers with ([`crate::watch::serve`]): its
    /// index changes in its batches alone.
    pub(crate) fn answer_still(
        &mut self,
        request: &Request,
    ) -> Result<Option<Answer>, RetrieveError> {
        let request = self.resolved(request);
        let Some(found) = self.search_still(&request)? else {
            return Ok(None);
        };
        self.answer_from(request, found).map(Some)
    }

    /// `request` with the bank's `k` and budget where it has none.
    fn resolved(&self, request: &Request) -> Request {
        let defaults = &self.config().retrieve;
        Request {
            k: Some(request.k.unwrap_or(defaults.k)),
            budget: Some(request.budget.unwrap_or(defaults.budget)),
            ..request.clone()
        }
    }

    /// The answer to `request` (resolved) from what its search found.
    fn answer_from(&self, request: Request, found: Search) -> Result<Answer, RetrieveError> {
        let (k, budget) = (
            request.k.unwrap_or_default(),
            request.budget.unwrap_or_default(),
        );
        let template = render::prompt_template(self.root())?;
        let prompt = render::prompt(&template, &found.hits, budget)?;
        let matched = found.hits.len();
        let mut hits = found.hits;
        hits.truncate(prompt.shown);
        mark_conflicts(&mut hits);
        Ok(Answer {
            request,
            k,
            budget,
            given_tags: found.given_tags,
            inferred_tags: found.inferred_tags,
            hits,
            matched,
            prompt,
            lessons: found.lessons,
            eligible: found.eligible,
            held_back: found.held_back,
        })
    }

    /// Log that `answer` was shown for run `run` (`lesson search --log RUN`): one line naming
    /// its hits, appended to the bank's retrieval log (see [`crate::usage`]) at the request's
    /// `now`, recorded by `by`. Nothing is written when it has no hit (`Ok(false)`).
    pub fn log_shown(&self, answer: &Answer, run: &str, by: &str) -> Result<bool, RetrieveError> {
        let slugs: Vec<&str> = answer.hits.iter().map(|h| h.slug.as_str()).collect();
        Ok(crate::usage::log_shown(
            self.root(),
            run,
            &slugs,
            answer.request.now,
            by,
        )?)
    }

    /// Why the lesson `slug` is or is not in the answer to `request`: the gate or threshold
    /// that excludes it, else its rank and score parts (and whether the budget cut it).
    pub fn explain(&mut self, request: &Request, slug: &str) -> Result<Explanation, RetrieveError> {
        let answer = self.answer(request)?;
        if let Some(i) = answer.hits.iter().position(|h| h.slug == slug) {
            let h = &answer.hits[i];
            return Ok(Explanation::Shown {
                rank: i + 1,
                score: h.score,
                kept_as_caution: h.kept_as_caution,
            });
        }
        // the ranking the search gave: hybrid when the semantic side is on
        let cosines = match self.request_vector(&answer.request) {
            Some(query) => self.cosines(&query)?,
            None => None,
        };
        let weight = self.semantic_weight();
        let semantic = cosines
            .as_deref()
            .map(|cosines| super::index::Semantic::new(cosines, weight));
        let mut why =
            self.index()
                .explain_hybrid(&answer.request, self.settings(), slug, semantic)?;
        if !self.layers.is_empty() {
            why = self.explain_layered(&answer.request, slug, why)?;
        }
        Ok(match why {
            Explanation::Shown { rank, score, .. } => Explanation::OverBudget {
                rank,
                budget: answer.budget,
                score,
            },
            other => other,
        })
    }
}
