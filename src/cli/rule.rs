//! `lesson rule [CODE]` / `lesson rule --all`: rule documentation.

use std::process::ExitCode;

use anyhow::bail;
use clap::{Args, ValueEnum};
use lesson::lint::{find_rule, Rule, RULES};
use lesson::report::rules;

/// Flags of `lesson rule`.
#[derive(Debug, Args)]
pub struct RuleArgs {
    /// A rule code (S006) or name (invalid-slug); without one, list the rules
    code: Option<String>,
    /// Print the full documentation of every rule
    #[arg(long, conflicts_with = "code")]
    all: bool,
    /// Output format: text, or JSON (one rule's object, or an array of every rule: code, name,
    /// severity, fixable, summary, docs)
    #[arg(long, value_enum, default_value_t = Format::Text)]
    format: Format,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
enum Format {
    Text,
    Json,
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

fn found(code: &str) -> anyhow::Result<&'static Rule> {
    match find_rule(code) {
        Some(rule) => Ok(rule),
        None => bail!("no rule `{code}`; `lesson rule` lists them"),
    }
}

/// Print one rule's docs, all of them, or a table.
pub fn run(args: RuleArgs) -> anyhow::Result<ExitCode> {
    if args.format == Format::Json {
        let json = match &args.code {
            Some(code) => rules::json(found(code)?),
            None => rules::json_all(RULES.iter().copied()),
        };
        super::print_json(&json)?;
        return Ok(ExitCode::SUCCESS);
    }
    match (&args.code, args.all) {
        (Some(code), _) => println!("{}", docs(found(code)?)),
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
