//! `lesson rule [CODE]` / `lesson rule --all`: rule documentation.

use std::process::ExitCode;

use anyhow::bail;
use clap::Args;
use lesson::lint::{find_rule, Rule, RULES};

/// Flags of `lesson rule`.
#[derive(Debug, Args)]
pub struct RuleArgs {
    /// A rule code (S006) or name (invalid-slug); without one, list the rules
    code: Option<String>,
    /// Print the full documentation of every rule
    #[arg(long, conflicts_with = "code")]
    all: bool,
}

fn docs(rule: &Rule) -> String {
    let fix = if rule.fixable { "yes" } else { "no" };
    format!(
        "# {} ({})\n\nDefault level: {}. Fixable: {fix}.\n\n{}",
        rule.name,
        rule.code,
        rule.default_level.as_str(),
        rule.markdown()
    )
}

/// Print one rule's docs, all of them, or a table.
pub fn run(args: RuleArgs) -> anyhow::Result<ExitCode> {
    match (&args.code, args.all) {
        (Some(code), _) => {
            let Some(rule) = find_rule(code) else {
                bail!("no rule `{code}`; `lesson rule` lists them");
            };
            println!("{}", docs(rule));
        }
        (None, true) => {
            let all: Vec<String> = RULES.iter().map(|r| docs(r)).collect();
            println!("{}", all.join("\n\n"));
        }
        (None, false) => {
            for r in RULES {
                let fix = if r.fixable { "fix" } else { "" };
                println!(
                    "{:<5} {:<28} {:<8} {:<4} {}",
                    r.code,
                    r.name,
                    r.default_level.as_str(),
                    fix,
                    r.summary()
                );
            }
        }
    }
    Ok(ExitCode::SUCCESS)
}
