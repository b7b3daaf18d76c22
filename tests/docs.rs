//! The configuration reference (`docs/configuration.md`) against the configuration types:
//! every key of `Config::default()` has a row, with its default, its environment variable
//! and its flag, and no row names a key the types do not have. A key added to the types
//! without a row here fails this test until it is documented. And ARCHITECTURE.md's
//! codemap names every module at the top of `src/` and every fault point.

use std::collections::BTreeMap;
use std::time::Duration;

use clap::CommandFactory;
use serde_json::Value;

const PAGE: &str = "docs/configuration.md";

/// One row of the page's key table.
#[derive(Debug)]
struct Row {
    default: String,
    env: String,
    flag: String,
}

/// The header of the one table of keys.
const HEADER: &str = "| key | default | environment variable | flag | meaning |";

/// The rows of the table of keys, by key: the lines after its header up to the first
/// line that is not a table row (a row past a blank line would render as text).
fn rows(page: &str) -> BTreeMap<String, Row> {
    let mut lines = page.lines().skip_while(|line| *line != HEADER);
    assert!(
        lines.next().is_some(),
        "{PAGE} has no table headed {HEADER:?}"
    );
    let mut rows = BTreeMap::new();
    for line in lines.skip(1).take_while(|line| line.starts_with('|')) {
        let cells: Vec<&str> = line.split('|').map(str::trim).collect();
        // "| key | default | env | flag | meaning |" splits into 7 cells or more (a
        // meaning may hold an escaped `\|`).
        assert!(
            cells.len() >= 7,
            "{PAGE}: a row of the keys has too few cells: {line}"
        );
        let key = unquote(cells[1])
            .filter(|k| is_key(k))
            .unwrap_or_else(|| panic!("{PAGE}: a row of the keys names no `section.key`: {line}"));
        let row = Row {
            default: cells[2].to_owned(),
            env: cells[3].to_owned(),
            flag: cells[4].to_owned(),
        };
        assert!(
            rows.insert(key.to_owned(), row).is_none(),
            "{PAGE}: `{key}` has two rows"
        );
    }
    rows
}

/// `text` without its surrounding backquotes, when it has them.
fn unquote(text: &str) -> Option<&str> {
    text.strip_prefix('`')?.strip_suffix('`')
}

/// Every `section.key` of the default configuration with its default value. Serialised
/// to JSON, not TOML, so that keys unset by default (`None`) are kept, as `null`.
fn keys() -> BTreeMap<String, Value> {
    let config = serde_json::to_value(socialite::config::Config::default()).unwrap();
    let mut keys = BTreeMap::new();
    for (section, fields) in config.as_object().expect("a table of sections") {
        let fields = fields
            .as_object()
            .unwrap_or_else(|| panic!("[{section}] is not a table"));
        for (key, value) in fields {
            keys.insert(format!("{section}.{key}"), value.clone());
        }
    }
    keys
}

/// Whether the page's default cell says `value`. Durations are compared as durations
/// (`60s` and `1m` agree), unset keys are documented as "unset".
fn same_default(cell: &str, value: &Value) -> bool {
    let Some(shown) = unquote(cell) else {
        return value.is_null() && cell == "unset";
    };
    match value {
        Value::String(text) => {
            shown == text
                || matches!(
                    (humantime::parse_duration(shown), humantime::parse_duration(text)),
                    (Ok(a), Ok(b)) if a == b && a > Duration::ZERO
                )
        }
        Value::Null => false,
        other => serde_json::from_str::<Value>(shown).is_ok_and(|v| v == *other),
    }
}

#[test]
fn every_configuration_key_is_documented_with_its_default_and_variable() {
    let page = std::fs::read_to_string(PAGE).expect(PAGE);
    let rows = rows(&page);
    let keys = keys();
    assert!(keys.len() > 30, "only {} keys found", keys.len());
    for (key, default) in &keys {
        let row = rows.get(key).unwrap_or_else(|| {
            panic!("{PAGE} does not document `{key}` (default {default}): add a row for it")
        });
        assert!(
            same_default(&row.default, default),
            "{PAGE}: `{key}` is documented with default {}, the code's is {default}",
            row.default
        );
        let (section, name) = key.split_once('.').unwrap();
        let env = format!(
            "`SOCIALITE_{}__{}`",
            section.to_uppercase(),
            name.to_uppercase()
        );
        assert_eq!(
            row.env, env,
            "{PAGE}: `{key}` should name its variable {env}"
        );
    }
    for key in rows.keys() {
        assert!(
            keys.contains_key(key),
            "{PAGE} documents `{key}`, which the configuration types do not have"
        );
    }
}

/// `section.key`, both of lower-case letters and underscores.
fn is_key(text: &str) -> bool {
    let word = |w: &str| !w.is_empty() && w.chars().all(|c| c.is_ascii_lowercase() || c == '_');
    text.split_once('.')
        .is_some_and(|(s, k)| word(s) && word(k))
}

/// A flag says which key it sets in its help, as "(section.key)".
#[test]
fn every_configuration_flag_is_documented_on_its_key() {
    let page = std::fs::read_to_string(PAGE).expect(PAGE);
    let rows = rows(&page);
    let command = socialite::cli::Cli::command();
    let mut flags = BTreeMap::new();
    for arg in command.get_arguments() {
        let (Some(long), Some(help)) = (arg.get_long(), arg.get_help()) else {
            continue;
        };
        let help = help.to_string();
        let Some(key) = help
            .rsplit_once('(')
            .and_then(|(_, rest)| rest.strip_suffix(").").or(rest.strip_suffix(')')))
        else {
            continue;
        };
        if is_key(key) {
            flags.insert(key.to_owned(), format!("`--{long}`"));
        }
    }
    assert!(
        flags.len() >= 2,
        "no flag names its key in its help: {flags:?}"
    );
    for (key, flag) in &flags {
        let row = rows
            .get(key)
            .unwrap_or_else(|| panic!("{flag} sets `{key}`, which {PAGE} does not document"));
        assert_eq!(
            &row.flag, flag,
            "{PAGE}: `{key}` should name its flag {flag}"
        );
    }
    for (key, row) in &rows {
        if !row.flag.is_empty() {
            assert_eq!(
                flags.get(key),
                Some(&row.flag),
                "{PAGE}: `{key}` names the flag {}, which does not set it",
                row.flag
            );
        }
    }
}

/// The files under `dir`, recursively.
fn sources(dir: &std::path::Path, out: &mut Vec<std::path::PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            sources(&path, out);
        } else {
            out.push(path);
        }
    }
}

/// ARCHITECTURE.md's codemap names every module at the top of `src/` and every fault
/// point the code has, so neither can be added without its place on the map.
#[test]
fn the_codemap_names_every_module_and_fault_point() {
    let map = std::fs::read_to_string("ARCHITECTURE.md").unwrap();
    let mut missing = Vec::new();
    for entry in std::fs::read_dir("src").unwrap() {
        let name = entry.unwrap().file_name().into_string().unwrap();
        let module = name.trim_end_matches(".rs");
        let named = [format!("`src/{module}/`"), format!("`src/{module}.rs`")];
        if !named.iter().any(|n| map.contains(n.as_str())) {
            missing.push(format!("module src/{name}"));
        }
    }
    let mut files = Vec::new();
    sources(std::path::Path::new("src"), &mut files);
    let point = regex::Regex::new(r#"faults::point\("([a-z_.]+)"\)"#).unwrap();
    for file in files {
        let text = std::fs::read_to_string(&file).unwrap();
        for found in point.captures_iter(&text) {
            if !map.contains(&format!("`{}`", &found[1])) {
                missing.push(format!("fault point {} ({})", &found[1], file.display()));
            }
        }
    }
    missing.sort();
    missing.dedup();
    assert!(
        missing.is_empty(),
        "ARCHITECTURE.md does not name: {missing:#?}"
    );
}
