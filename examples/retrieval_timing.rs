//! Time what `lesson search` does on a bank: the walk, opening the persisted index (load and
//! check against the files), a refresh that finds nothing changed, and warm queries in one
//! process. Prints wall-clock times; run it on a quiet machine.
//!
//! ```sh
//! cargo run --release --example retrieval_timing -- BANK [REQUEST]...
//! ```

use std::time::{Duration, Instant};

use lesson::retrieve::{Request, Retriever};
use lesson::walk;

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let Some(bank) = args.first().map(std::path::PathBuf::from) else {
        eprintln!("usage: retrieval_timing BANK [REQUEST]...");
        std::process::exit(2);
    };
    let requests: Vec<String> = if args.len() > 1 {
        args[1..].to_vec()
    } else {
        [
            "retry the payment webhook when the token expires",
            "clippy warnings fail the CI build",
            "cache",
            "how do I bake a chocolate cake",
        ]
        .map(String::from)
        .to_vec()
    };

    let config = lesson::config::Config::load(&bank).expect("lesson.toml");
    let mut exclude = globset::GlobSetBuilder::new();
    for glob in &config.lint.exclude {
        exclude.add(globset::Glob::new(glob).expect("an exclude glob"));
    }
    let exclude = exclude.build().expect("exclude globs");
    let t = Instant::now();
    let files = walk::lesson_files(&bank, &exclude);
    println!(
        "walk and stat: {:>8.1?}  ({} files)",
        t.elapsed(),
        files.len()
    );

    let t = Instant::now();
    let mut retriever = Retriever::open(&bank).expect("open");
    println!(
        "open:          {:>8.1?}  {:?}",
        t.elapsed(),
        retriever.last_refresh()
    );
    let t = Instant::now();
    retriever.refresh().expect("refresh");
    println!("refresh:       {:>8.1?}", t.elapsed());

    for text in &requests {
        let request = Request::new(text.clone());
        let runs = 20;
        let mut total = Duration::ZERO;
        let mut found = None;
        for _ in 0..runs {
            let t = Instant::now();
            found = Some(retriever.search(&request).expect("search"));
            total += t.elapsed();
        }
        let found = found.expect("ran");
        println!(
            "query:         {:>8.2?}  {} hits, {} eligible, {} postings read  {text:?}",
            total / runs,
            found.hits.len(),
            found.eligible,
            found.postings
        );
    }
}
