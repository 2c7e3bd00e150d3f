//! `lesson schema` agrees with the official `LESSON.schema.json` (read from
//! `../shared/spec/aip-11/`, never copied into the repo): on the seven official examples and on
//! mutations covering every constraint, both accept or both reject, and each verdict is the
//! expected one. Without the spec directory the official side is skipped and our schema is
//! still held to the expected verdicts.

use std::path::{Path, PathBuf};

use serde_json::{json, Value};

use crate::sandbox::{run_in, Sandbox};

fn spec_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/spec/aip-11")
}

fn read_spec(name: &str) -> Option<String> {
    let path = spec_dir().join(name);
    match std::fs::read_to_string(&path) {
        Ok(text) => Some(text),
        Err(_) => {
            eprintln!("skipped: {} not found", path.display());
            None
        }
    }
}

fn validator(schema: &Value) -> jsonschema::Validator {
    jsonschema::draft202012::options()
        .should_validate_formats(true)
        .build(schema)
        .expect("the schema compiles")
}

fn ours() -> jsonschema::Validator {
    validator(&lesson::schema::json_schema())
}

fn official() -> Option<jsonschema::Validator> {
    let text = read_spec("LESSON.schema.json")?;
    Some(validator(&serde_json::from_str(&text).unwrap()))
}

/// The frontmatter of a LESSON.md as JSON, read by the crate's own YAML reader.
fn frontmatter(file: &str) -> Value {
    let mut lines = file.lines();
    assert_eq!(lines.next(), Some("---"), "{file}");
    let yaml: String = lines
        .take_while(|l| *l != "---")
        .map(|l| format!("{l}\n"))
        .collect();
    let (tree, errors) = lesson::yaml::Yaml::parse(&yaml, 0);
    assert!(errors.is_empty(), "{errors:?}");
    let tree = tree.unwrap();
    tree.to_json(tree.root.unwrap(), &mut 10_000).unwrap()
}

/// The fenced ```md blocks of EXAMPLES.md.
fn examples(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut current: Option<String> = None;
    for line in text.lines() {
        match (&mut current, line.trim_end()) {
            (None, "```md") => current = Some(String::new()),
            (Some(_), "```") => out.push(current.take().unwrap()),
            (Some(block), l) => {
                block.push_str(l);
                block.push('\n');
            }
            (None, _) => {}
        }
    }
    out
}

/// Every official example is valid under both schemas.
#[test]
fn official_examples_are_valid_under_both() {
    let (Some(text), Some(official)) = (read_spec("EXAMPLES.md"), official()) else {
        return;
    };
    let ours = ours();
    let examples = examples(&text);
    assert_eq!(examples.len(), 7);
    for example in &examples {
        let fm = frontmatter(example);
        let errors: Vec<String> = ours.iter_errors(&fm).map(|e| e.to_string()).collect();
        assert!(errors.is_empty(), "{}: {errors:?}", fm["slug"]);
        assert!(official.is_valid(&fm), "{}", fm["slug"]);
    }
}

/// The lesson every mutation starts from: every field set, valid.
fn base() -> Value {
    json!({
        "schema": "learning/v1",
        "slug": "check-the-rate-limit-header",
        "title": "Check the rate-limit header before retrying.",
        "trigger": {
            "description": "An HTTP client retries after a 429 response.",
            "tags": ["http", "rate-limit"],
            "targets": [{"role": "fetcher"}],
            "metadata": {"acme": {"priority": 2}}
        },
        "outcome": "success",
        "evidence": [{"kind": "run", "ref": "r_2026-03-01_a1", "note": "waited 30 s"}],
        "confidence": 0.7,
        "success_count": 3,
        "failure_count": 0,
        "supersedes": ["retry-at-once"],
        "expires_at": "2027-01-01T00:00:00Z",
        "metadata": {"acme": {"owner": "ana"}}
    })
}

type Mutation = (&'static str, bool, fn(&mut Value));

/// (what, valid afterwards, the change): every keyword of the official schema is exercised.
const MUTATIONS: &[Mutation] = &[
    // required, at the top level
    ("no schema", false, |v| {
        drop(v.as_object_mut().unwrap().remove("schema"))
    }),
    ("no slug", false, |v| {
        drop(v.as_object_mut().unwrap().remove("slug"))
    }),
    ("no title", false, |v| {
        drop(v.as_object_mut().unwrap().remove("title"))
    }),
    ("no trigger", false, |v| {
        drop(v.as_object_mut().unwrap().remove("trigger"))
    }),
    ("no outcome", false, |v| {
        drop(v.as_object_mut().unwrap().remove("outcome"))
    }),
    ("no evidence", false, |v| {
        drop(v.as_object_mut().unwrap().remove("evidence"))
    }),
    ("only the required fields", true, |v| {
        let o = v.as_object_mut().unwrap();
        for k in [
            "confidence",
            "success_count",
            "failure_count",
            "supersedes",
            "expires_at",
            "metadata",
        ] {
            o.remove(k);
        }
        let t = o["trigger"].as_object_mut().unwrap();
        for k in ["tags", "targets", "metadata"] {
            t.remove(k);
        }
        o["evidence"][0].as_object_mut().unwrap().remove("note");
    }),
    // additionalProperties: false at the top level
    ("unknown top-level key", false, |v| {
        v["author"] = json!("ana")
    }),
    ("misspelled top-level key", false, |v| {
        v["supercedes"] = json!([])
    }),
    ("not a mapping", false, |v| {
        *v = json!(["schema", "learning/v1"])
    }),
    // schema: const
    ("legacy schema id", false, |v| {
        v["schema"] = json!("agentlesson/v1")
    }),
    ("schema id of another version", false, |v| {
        v["schema"] = json!("learning/v2")
    }),
    // slug: type, pattern, minLength, maxLength
    ("slug is a number", false, |v| v["slug"] = json!(42)),
    ("slug with uppercase", false, |v| {
        v["slug"] = json!("Check-it")
    }),
    ("slug with underscore", false, |v| {
        v["slug"] = json!("check_it")
    }),
    ("slug starting with a digit", false, |v| {
        v["slug"] = json!("1check")
    }),
    ("slug ending with a dash", false, |v| {
        v["slug"] = json!("check-")
    }),
    ("slug of one letter", false, |v| v["slug"] = json!("c")),
    ("slug of two characters", true, |v| v["slug"] = json!("c9")),
    ("slug of 80 characters", true, |v| {
        v["slug"] = json!("a".repeat(80))
    }),
    ("slug of 81 characters", false, |v| {
        v["slug"] = json!("a".repeat(81))
    }),
    // title: type, minLength, maxLength (characters, not bytes)
    ("empty title", false, |v| v["title"] = json!("")),
    ("title of 200 two-byte characters", true, |v| {
        v["title"] = json!("é".repeat(200))
    }),
    ("title of 201 characters", false, |v| {
        v["title"] = json!("t".repeat(201))
    }),
    ("title is a list", false, |v| v["title"] = json!(["a"])),
    // trigger: type, required, additionalProperties
    ("trigger is a string", false, |v| {
        v["trigger"] = json!("when retrying")
    }),
    ("trigger without description", false, |v| {
        drop(v["trigger"].as_object_mut().unwrap().remove("description"))
    }),
    ("unknown trigger key", false, |v| {
        v["trigger"]["tag"] = json!(["x"])
    }),
    ("empty description", false, |v| {
        v["trigger"]["description"] = json!("")
    }),
    ("description of 1000 characters", true, |v| {
        v["trigger"]["description"] = json!("d".repeat(1000))
    }),
    ("description of 1001 characters", false, |v| {
        v["trigger"]["description"] = json!("d".repeat(1001))
    }),
    ("description is null", false, |v| {
        v["trigger"]["description"] = Value::Null
    }),
    // trigger.tags: type, items pattern, maxItems
    ("tags is a string", false, |v| {
        v["trigger"]["tags"] = json!("http")
    }),
    ("tag with uppercase", false, |v| {
        v["trigger"]["tags"] = json!(["Research"])
    }),
    ("tag with underscore", false, |v| {
        v["trigger"]["tags"] = json!(["rate_limit"])
    }),
    ("tag starting with a digit", false, |v| {
        v["trigger"]["tags"] = json!(["3d"])
    }),
    ("tag ending with a dash", true, |v| {
        v["trigger"]["tags"] = json!(["trailing-"])
    }),
    ("tag of one letter", true, |v| {
        v["trigger"]["tags"] = json!(["a"])
    }),
    ("tag is a number", false, |v| {
        v["trigger"]["tags"] = json!([7])
    }),
    ("12 tags", true, |v| {
        v["trigger"]["tags"] = json!((0..12).map(|i| format!("t{i}")).collect::<Vec<_>>())
    }),
    ("13 tags", false, |v| {
        v["trigger"]["tags"] = json!((0..13).map(|i| format!("t{i}")).collect::<Vec<_>>())
    }),
    ("no tags", true, |v| v["trigger"]["tags"] = json!([])),
    // trigger.targets: type, items type, minProperties, additionalProperties, property types
    ("targets is a mapping", false, |v| {
        v["trigger"]["targets"] = json!({"role": "x"})
    }),
    ("empty target", false, |v| {
        v["trigger"]["targets"] = json!([{}])
    }),
    ("target is a string", false, |v| {
        v["trigger"]["targets"] = json!(["fetcher"])
    }),
    ("unknown target key", false, |v| {
        v["trigger"]["targets"] = json!([{"role": "r", "team": "t"}])
    }),
    ("target role is a number", false, |v| {
        v["trigger"]["targets"] = json!([{"role": 3}])
    }),
    ("target operator is a list", false, |v| {
        v["trigger"]["targets"] = json!([{"operator": ["a"]}])
    }),
    ("target skill is null", false, |v| {
        v["trigger"]["targets"] = json!([{"skill": null}])
    }),
    (
        "target with every key",
        true,
        |v| {
            v["trigger"]["targets"] = json!([{"operator": "ana", "role": "res*", "skill": "web-*"}])
        },
    ),
    // trigger.metadata: type, additionalProperties: true
    ("trigger metadata with any keys", true, |v| {
        v["trigger"]["metadata"] = json!({"x": [1, {"y": null}]})
    }),
    ("trigger metadata is a string", false, |v| {
        v["trigger"]["metadata"] = json!("x")
    }),
    // outcome: enum
    ("outcome failure", true, |v| v["outcome"] = json!("failure")),
    ("outcome mixed", true, |v| v["outcome"] = json!("mixed")),
    ("outcome misspelled", false, |v| {
        v["outcome"] = json!("failed")
    }),
    ("outcome in capitals", false, |v| {
        v["outcome"] = json!("Success")
    }),
    ("outcome is a boolean", false, |v| {
        v["outcome"] = json!(true)
    }),
    // evidence: type, minItems, items type, required, additionalProperties
    ("evidence is empty", false, |v| v["evidence"] = json!([])),
    ("evidence is a string", false, |v| {
        v["evidence"] = json!("r_1")
    }),
    ("evidence item is a string", false, |v| {
        v["evidence"] = json!(["r_1"])
    }),
    ("evidence without ref", false, |v| {
        v["evidence"] = json!([{"kind": "run"}])
    }),
    ("evidence without kind", false, |v| {
        v["evidence"] = json!([{"ref": "r_1"}])
    }),
    ("unknown evidence key", false, |v| {
        v["evidence"][0]["notes"] = json!("n")
    }),
    (
        "two evidence items",
        true,
        |v| {
            v["evidence"] = json!([{"kind": "conversation", "ref": "c_1"}, {"kind": "wiki-page", "ref": "wiki/x"}])
        },
    ),
    // evidence kind: enum
    ("evidence kind audit", true, |v| {
        v["evidence"][0]["kind"] = json!("audit")
    }),
    ("evidence kind work-item", true, |v| {
        v["evidence"][0]["kind"] = json!("work-item")
    }),
    ("evidence kind with underscore", false, |v| {
        v["evidence"][0]["kind"] = json!("work_item")
    }),
    ("evidence kind unknown", false, |v| {
        v["evidence"][0]["kind"] = json!("commit")
    }),
    // evidence ref: type, minLength, maxLength
    ("empty ref", false, |v| v["evidence"][0]["ref"] = json!("")),
    ("ref of 256 characters", true, |v| {
        v["evidence"][0]["ref"] = json!("r".repeat(256))
    }),
    ("ref of 257 characters", false, |v| {
        v["evidence"][0]["ref"] = json!("r".repeat(257))
    }),
    ("ref is a number", false, |v| {
        v["evidence"][0]["ref"] = json!(12345)
    }),
    // evidence note: type, maxLength
    ("empty note", true, |v| v["evidence"][0]["note"] = json!("")),
    ("note of 500 characters", true, |v| {
        v["evidence"][0]["note"] = json!("n".repeat(500))
    }),
    ("note of 501 characters", false, |v| {
        v["evidence"][0]["note"] = json!("n".repeat(501))
    }),
    ("note is a mapping", false, |v| {
        v["evidence"][0]["note"] = json!({"a": 1})
    }),
    // confidence: type, minimum, maximum
    ("confidence 0", true, |v| v["confidence"] = json!(0)),
    ("confidence 1", true, |v| v["confidence"] = json!(1.0)),
    ("confidence above 1", false, |v| {
        v["confidence"] = json!(1.5)
    }),
    ("confidence below 0", false, |v| {
        v["confidence"] = json!(-0.1)
    }),
    ("confidence as a percentage", false, |v| {
        v["confidence"] = json!(70)
    }),
    ("confidence is a string", false, |v| {
        v["confidence"] = json!("high")
    }),
    // counts: type integer, minimum 0
    ("success_count 0", true, |v| v["success_count"] = json!(0)),
    ("success_count negative", false, |v| {
        v["success_count"] = json!(-1)
    }),
    ("success_count fractional", false, |v| {
        v["success_count"] = json!(1.5)
    }),
    ("success_count is a string", false, |v| {
        v["success_count"] = json!("3")
    }),
    ("failure_count negative", false, |v| {
        v["failure_count"] = json!(-2)
    }),
    ("failure_count large", true, |v| {
        v["failure_count"] = json!(1_000_000)
    }),
    // supersedes: type, items type and pattern
    ("supersedes is a string", false, |v| {
        v["supersedes"] = json!("retry-at-once")
    }),
    ("supersedes an invalid slug", false, |v| {
        v["supersedes"] = json!(["Retry_at_once"])
    }),
    ("supersedes a one-letter slug", false, |v| {
        v["supersedes"] = json!(["r"])
    }),
    ("supersedes a number", false, |v| {
        v["supersedes"] = json!([3])
    }),
    ("supersedes two slugs", true, |v| {
        v["supersedes"] = json!(["old-one", "old-two"])
    }),
    // expires_at: type, format date-time
    ("expires_at with an offset", true, |v| {
        v["expires_at"] = json!("2027-01-01T02:00:00+02:00")
    }),
    ("expires_at in words", false, |v| {
        v["expires_at"] = json!("next tuesday")
    }),
    ("expires_at is a number", false, |v| {
        v["expires_at"] = json!(20270101)
    }),
    ("expires_at is a bare date", false, |v| {
        v["expires_at"] = json!("2027-01-01")
    }),
    // metadata: type, additionalProperties: true
    ("metadata with any keys", true, |v| {
        v["metadata"] = json!({"x": {"y": [1, 2]}, "z": true})
    }),
    ("metadata is a list", false, |v| {
        v["metadata"] = json!(["x"])
    }),
    ("metadata is a string", false, |v| {
        v["metadata"] = json!("acme")
    }),
];

/// Our schema and the official one give each mutation the expected verdict.
#[test]
fn mutations_get_the_same_verdict_from_both() {
    assert!(MUTATIONS.len() >= 30);
    let ours = ours();
    let official = official();
    assert!(ours.is_valid(&base()));
    if let Some(official) = &official {
        assert!(official.is_valid(&base()));
    }
    let mut wrong = Vec::new();
    for (what, valid, mutate) in MUTATIONS {
        let mut value = base();
        mutate(&mut value);
        if ours.is_valid(&value) != *valid {
            wrong.push(format!("ours: {what}: expected valid = {valid}"));
        }
        if let Some(official) = &official {
            if official.is_valid(&value) != *valid {
                wrong.push(format!("official: {what}: expected valid = {valid}"));
            }
        }
    }
    assert!(wrong.is_empty(), "{wrong:#?}");
}

/// Every mutation of an official example that rejects under one schema rejects under the other:
/// the same mutations, applied to the seven examples instead of our base lesson.
#[test]
fn mutated_official_examples_agree() {
    let (Some(text), Some(official)) = (read_spec("EXAMPLES.md"), official()) else {
        return;
    };
    let ours = ours();
    let mut disagree = Vec::new();
    for example in examples(&text) {
        let fm = frontmatter(&example);
        for (what, _, mutate) in MUTATIONS {
            let mut value = fm.clone();
            // a mutation that indexes a field the example leaves out adds it, which is fine
            mutate(&mut value);
            if ours.is_valid(&value) != official.is_valid(&value) {
                disagree.push(format!("{}: {what}", fm["slug"]));
            }
        }
    }
    assert!(disagree.is_empty(), "{disagree:#?}");
}

/// `lesson schema` prints the library's schema, needing no bank.
#[test]
fn the_command_prints_the_schema() {
    let sandbox = Sandbox::new();
    let run = run_in(sandbox.path(), &["schema"]);
    assert_eq!(run.code, 0, "{run}");
    let printed: Value = serde_json::from_str(&run.stdout).unwrap();
    assert_eq!(printed, lesson::schema::json_schema());
    assert_eq!(
        printed["$schema"],
        "https://json-schema.org/draft/2020-12/schema"
    );
}
