//! The shapes a Compose value takes: a string, a list of strings, a command, `KEY=value`
//! pairs, a duration.

use std::time::Duration;

use serde_yaml::Value;

use super::{Read, error, key_text};

pub(super) fn scalar(value: &Value) -> Option<String> {
    match value {
        Value::String(s) => Some(s.clone()),
        Value::Number(n) => Some(n.to_string()),
        Value::Bool(b) => Some(b.to_string()),
        _ => None,
    }
}

pub(super) fn text(path: &str, value: &Value) -> Read<String> {
    scalar(value).ok_or_else(|| error(path, "a string"))
}

pub(super) fn list(path: &str, value: &Value) -> Read<Vec<String>> {
    match value {
        Value::Sequence(items) => items.iter().map(|item| text(path, item)).collect(),
        other => Ok(vec![text(path, other)?]),
    }
}

/// A command: a list of words, or a string run as Compose runs it (split as a shell would
/// split words without expanding them).
pub(super) fn words(path: &str, value: &Value) -> Read<Vec<String>> {
    match value {
        Value::Sequence(_) => list(path, value),
        Value::String(line) => shell_words(line).ok_or_else(|| error(path, "unbalanced quotes")),
        _ => Err(error(path, "a string or a list of strings")),
    }
}

fn shell_words(line: &str) -> Option<Vec<String>> {
    let (mut words, mut word, mut quote, mut started) = (Vec::new(), String::new(), None, false);
    let mut chars = line.chars();
    while let Some(c) = chars.next() {
        match (quote, c) {
            (None, ' ' | '\t' | '\n') => {
                if started {
                    words.push(std::mem::take(&mut word));
                    started = false;
                }
            }
            (None, '\'' | '"') => {
                quote = Some(c);
                started = true;
            }
            (Some(q), c) if c == q => quote = None,
            (Some('"') | None, '\\') => {
                word.push(chars.next()?);
                started = true;
            }
            (_, c) => {
                word.push(c);
                started = true;
            }
        }
    }
    if quote.is_some() {
        return None;
    }
    if started {
        words.push(word);
    }
    Some(words)
}

/// `KEY: value` mappings or `KEY=value` lists (a bare `KEY` in a list is left out: Compose
/// would take it from the shell that runs it, which here is none).
pub(super) fn pairs(path: &str, value: &Value) -> Read<Vec<(String, String)>> {
    match value {
        Value::Mapping(map) => map
            .iter()
            .map(|(k, v)| {
                let key = key_text(k, path)?;
                let value = if v.is_null() {
                    String::new()
                } else {
                    text(&format!("{path}.{key}"), v)?
                };
                Ok((key, value))
            })
            .collect(),
        Value::Sequence(items) => Ok(items
            .iter()
            .map(|item| text(path, item))
            .collect::<Read<Vec<_>>>()?
            .into_iter()
            .filter_map(|entry| {
                entry
                    .split_once('=')
                    .map(|(k, v)| (k.to_string(), v.to_string()))
            })
            .collect()),
        _ => Err(error(path, "a mapping or a list of KEY=value")),
    }
}

/// A Compose duration: `1m30s`, `10s`, `500ms`, `2h` (or a plain number of seconds).
pub(super) fn duration(path: &str, value: &Value) -> Read<Duration> {
    let text = text(path, value)?;
    if let Ok(seconds) = text.parse::<u64>() {
        return Ok(Duration::from_secs(seconds));
    }
    let mut total = Duration::ZERO;
    let mut digits = String::new();
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        if c.is_ascii_digit() || c == '.' {
            digits.push(c);
            continue;
        }
        let mut unit = c.to_string();
        if c == 'm' && chars.peek() == Some(&'s') {
            unit.push(chars.next().unwrap_or('s'));
        }
        let amount: f64 = digits
            .parse()
            .map_err(|_| error(path, "a duration such as 10s, 1m30s or 500ms"))?;
        digits.clear();
        let seconds = match unit.as_str() {
            "h" => amount * 3600.0,
            "m" => amount * 60.0,
            "s" => amount,
            "ms" => amount / 1000.0,
            _ => return Err(error(path, "a duration such as 10s, 1m30s or 500ms")),
        };
        total += Duration::from_secs_f64(seconds);
    }
    if !digits.is_empty() {
        return Err(error(path, "a duration needs a unit: 10s, 1m30s, 500ms"));
    }
    Ok(total)
}
