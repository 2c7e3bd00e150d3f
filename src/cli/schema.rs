//! `lesson schema`: the JSON Schema of the frontmatter, built from the model.

use std::process::ExitCode;

/// Print the schema (`lesson schema > lesson.schema.json`).
pub fn run() -> anyhow::Result<ExitCode> {
    print!("{}", lesson::schema::render());
    Ok(ExitCode::SUCCESS)
}
