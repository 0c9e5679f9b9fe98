//! The env-file parser behind `variables/import`: pure, so every edge case is a unit test.
//!
//! Rules: blank lines and `#` comment lines are skipped; an `export ` prefix is dropped; the
//! first `=` splits key from value; one pair of matching quotes around the value is stripped
//! (the text inside is kept as it is, escapes included); an unquoted value ends at ` #`;
//! a repeated key keeps its last value. Anything else is a malformed line.

use crate::domain::variables::is_valid_key;

/// One `KEY=value` pair and the 1-based line it came from (the last one, for repeats).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParsedEntry {
    pub key: String,
    pub value: String,
    pub line: usize,
}

/// A key given more than once: the first and the winning (last) line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Duplicate {
    pub key: String,
    pub first_line: usize,
    pub last_line: usize,
}

/// What an env file holds.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct ParsedFile {
    /// In order of first appearance, each with its winning value.
    pub entries: Vec<ParsedEntry>,
    pub duplicates: Vec<Duplicate>,
}

/// A line that is not `KEY=value`. It carries the line number and a reason, never the text,
/// which may hold a secret.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Malformed {
    pub line: usize,
    pub reason: &'static str,
}

/// Parses env-file text; the first malformed line fails the whole file.
pub fn parse(content: &str) -> Result<ParsedFile, Malformed> {
    let content = content.strip_prefix('\u{feff}').unwrap_or(content);
    let mut file = ParsedFile::default();
    for (index, raw) in content.split('\n').enumerate() {
        let line = index + 1;
        let Some((key, value)) = parse_line(raw).map_err(|reason| Malformed { line, reason })?
        else {
            continue;
        };
        match file.entries.iter_mut().find(|e| e.key == key) {
            Some(existing) => {
                match file.duplicates.iter_mut().find(|d| d.key == key) {
                    Some(duplicate) => duplicate.last_line = line,
                    None => file.duplicates.push(Duplicate {
                        key: key.clone(),
                        first_line: existing.line,
                        last_line: line,
                    }),
                }
                existing.value = value;
                existing.line = line;
            }
            None => file.entries.push(ParsedEntry { key, value, line }),
        }
    }
    Ok(file)
}

/// `Ok(None)` for a blank or comment line.
fn parse_line(raw: &str) -> Result<Option<(String, String)>, &'static str> {
    let text = raw.strip_suffix('\r').unwrap_or(raw).trim();
    if text.is_empty() || text.starts_with('#') {
        return Ok(None);
    }
    let text = match text.strip_prefix("export") {
        Some(rest) if rest.starts_with([' ', '\t']) => rest.trim_start(),
        _ => text,
    };
    let (key, value) = text
        .split_once('=')
        .ok_or("expected KEY=value (no = found)")?;
    let key = key.trim_end();
    if key.is_empty() {
        return Err("the key is empty");
    }
    if !is_valid_key(key) {
        return Err("the key must start with a letter or _ and hold only letters, digits, _ . -");
    }
    Ok(Some((key.to_string(), parse_value(value.trim())?)))
}

fn parse_value(value: &str) -> Result<String, &'static str> {
    let Some(quote) = value.chars().next().filter(|c| matches!(c, '"' | '\'')) else {
        // Unquoted: a ` #` starts a trailing comment.
        let end = value.find(" #").or_else(|| value.find("\t#"));
        return Ok(end
            .map_or(value, |end| &value[..end])
            .trim_end()
            .to_string());
    };
    let inner = &value[1..];
    let close = inner.find(quote).ok_or("a quoted value is not closed")?;
    let rest = inner[close + 1..].trim_start();
    if !rest.is_empty() && !rest.starts_with('#') {
        return Err("text follows the closing quote");
    }
    Ok(inner[..close].to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// (file, expected pairs) for files that parse.
    const GOOD: &[(&str, &[(&str, &str)])] = &[
        ("A=1", &[("A", "1")]),
        ("A=1\nB=2\n", &[("A", "1"), ("B", "2")]),
        (
            "\n\n# comment\n  # indented comment\nA=1\n\n",
            &[("A", "1")],
        ),
        ("export A=1", &[("A", "1")]),
        ("export\tA=1", &[("A", "1")]),
        ("exportA=1", &[("exportA", "1")]),
        ("export=1", &[("export", "1")]),
        ("A=\"quoted value\"", &[("A", "quoted value")]),
        ("A='single'", &[("A", "single")]),
        ("A=\"'inner'\"", &[("A", "'inner'")]),
        ("A=\"\"", &[("A", "")]),
        ("A=", &[("A", "")]),
        ("A = spaced ", &[("A", "spaced")]),
        ("A=x=y=z", &[("A", "x=y=z")]),
        ("A=a#b", &[("A", "a#b")]),
        ("A=value # trailing", &[("A", "value")]),
        ("A=\"va # lue\" # trailing", &[("A", "va # lue")]),
        ("A=\"a\\nb\"", &[("A", "a\\nb")]),
        ("A=unbalanced\"", &[("A", "unbalanced\"")]),
        ("A=1\r\nB=2\r\n", &[("A", "1"), ("B", "2")]),
        ("\u{feff}A=1", &[("A", "1")]),
        ("A=1\nA=2\nB=3\nA=4", &[("A", "4"), ("B", "3")]),
        ("a.b-c_D=1", &[("a.b-c_D", "1")]),
        ("# only a comment", &[]),
        ("", &[]),
    ];

    /// (file, malformed line) for files that do not.
    const BAD: &[(&str, usize)] = &[
        ("A=1\nNOEQUALS\n", 2),
        ("=value", 1),
        ("MY KEY=1", 1),
        ("1A=1", 1),
        ("A=\"open", 1),
        ("A='mismatched\"", 1),
        ("A=\"x\" y", 1),
        ("A=1\n\n\nexport\n", 4),
        ("A=1\nB-é=2", 2),
    ];

    #[test]
    fn good_files_parse() {
        for (file, expected) in GOOD {
            let parsed = parse(file).unwrap_or_else(|e| panic!("{file:?}: {e:?}"));
            let pairs: Vec<(&str, &str)> = parsed
                .entries
                .iter()
                .map(|e| (e.key.as_str(), e.value.as_str()))
                .collect();
            assert_eq!(&pairs, expected, "{file:?}");
            assert!(parsed.entries.iter().all(|e| e.line >= 1));
        }
    }

    #[test]
    fn bad_files_name_the_line() {
        for (file, line) in BAD {
            let error = parse(file).expect_err(file);
            assert_eq!(error.line, *line, "{file:?}");
        }
    }

    #[test]
    fn repeats_keep_the_last_value_and_report_both_lines() {
        let parsed = parse("A=1\n# c\nA=2\nB=1\nA=3").unwrap();
        assert_eq!(parsed.entries[0].value, "3");
        assert_eq!(parsed.entries[0].line, 5);
        assert_eq!(
            parsed.duplicates,
            vec![Duplicate {
                key: "A".into(),
                first_line: 1,
                last_line: 5
            }]
        );
    }

    #[test]
    fn errors_never_hold_the_line_text() {
        let error = parse("SECRET hunter2").unwrap_err();
        assert!(!error.reason.contains("hunter2"));
    }
}
