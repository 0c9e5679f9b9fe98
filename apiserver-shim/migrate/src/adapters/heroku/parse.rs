//! Heroku's text formats: the Procfile, `heroku config --shell` (and its default `===`
//! listing), with the CLI's quoting rules (heroku/cli `src/lib/config/quote.ts`).

use berth_api::validate::FieldError;

use crate::adapters::draft::file_error;

/// The characters that make `heroku config --shell` quote a value (besides whitespace).
const SPECIAL: &str = "\"#!$&'()*,:;<=>?@[\\]^`{|}";

/// A value as `heroku config --shell` prints it.
pub fn shell_quote(value: &str) -> String {
    if !value
        .chars()
        .any(|c| c.is_whitespace() || SPECIAL.contains(c))
    {
        return value.to_string();
    }
    if value.contains('\'') || value.contains('\n') {
        let mut quoted = String::from("\"");
        for c in value.chars() {
            match c {
                '"' | '\\' | '$' | '`' | '!' => {
                    quoted.push('\\');
                    quoted.push(c);
                }
                '\n' => quoted.push_str("\\n"),
                _ => quoted.push(c),
            }
        }
        quoted + "\""
    } else {
        let mut quoted = String::from("'");
        for c in value.chars() {
            if c == '\'' || c == '\\' {
                quoted.push('\\');
            }
            quoted.push(c);
        }
        quoted + "'"
    }
}

/// The value of one `KEY=value` line; `None` when the quoting is broken.
pub fn shell_unquote(raw: &str) -> Option<String> {
    let mut chars = raw.chars();
    let quote = match raw.chars().next() {
        Some(q @ ('\'' | '"')) => q,
        _ => return Some(raw.trim_end().to_string()),
    };
    chars.next();
    let mut value = String::new();
    while let Some(c) = chars.next() {
        if c == quote {
            return chars.as_str().trim().is_empty().then_some(value);
        }
        if c != '\\' {
            value.push(c);
            continue;
        }
        match (quote, chars.next()?) {
            ('\'', e @ ('\'' | '\\')) => value.push(e),
            ('"', e @ ('"' | '\\' | '$' | '`' | '!')) => value.push(e),
            ('"', 'n') => value.push('\n'),
            (_, other) => {
                value.push('\\');
                value.push(other);
            }
        }
    }
    None
}

/// `KEY=value` lines (`--shell`) or the default `=== APP Config Vars` listing.
pub fn config_lines(file: &str, content: &str) -> Result<Vec<(String, String)>, FieldError> {
    let listing = content.trim_start().starts_with("=== ");
    let mut vars = Vec::new();
    for (index, line) in content.lines().enumerate() {
        let trimmed = line.trim();
        if trimmed.is_empty() || trimmed.starts_with("=== ") || trimmed.starts_with('#') {
            continue;
        }
        let split = if listing {
            line.split_once(':')
        } else {
            line.split_once('=')
        };
        let parsed = split
            .filter(|(key, _)| is_env_key(key.trim()))
            .and_then(|(key, raw)| {
                let value = if listing {
                    Some(raw.trim().to_string())
                } else {
                    shell_unquote(raw)
                };
                value.map(|value| (key.trim().to_string(), value))
            });
        match parsed {
            Some(pair) => vars.push(pair),
            None => {
                return Err(file_error(
                    file,
                    format!(
                        "line {} of {file} is not KEY=value as `heroku config --shell` prints it",
                        index + 1
                    ),
                ));
            }
        }
    }
    Ok(vars)
}

/// Whether every meaningful line is `KEY=…` (or the file is the default `===` listing).
pub fn looks_like_config(content: &str) -> bool {
    if content.trim_start().starts_with("=== ") {
        return true;
    }
    let mut lines = meaningful(content).peekable();
    lines.peek().is_some()
        && lines.all(|line| line.split_once('=').is_some_and(|(key, _)| is_env_key(key)))
}

/// Procfile lines `type: command`; comments `#` and `//`.
pub fn procfile(file: &str, content: &str) -> Result<Vec<(String, String)>, FieldError> {
    let mut processes = Vec::new();
    for (index, line) in content.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') || line.starts_with("//") {
            continue;
        }
        match procfile_line(line) {
            Some(pair) => processes.push(pair),
            None => {
                return Err(file_error(
                    file,
                    format!(
                        "line {} of {file} is not `<process type>: <command>`",
                        index + 1
                    ),
                ));
            }
        }
    }
    Ok(processes)
}

pub fn looks_like_procfile(content: &str) -> bool {
    let mut lines = meaningful(content).peekable();
    lines.peek().is_some() && lines.all(|line| procfile_line(line).is_some())
}

fn procfile_line(line: &str) -> Option<(String, String)> {
    let (kind, command) = line.split_once(':')?;
    let valid = !kind.is_empty()
        && kind.len() <= 63
        && kind
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
    let command = command.trim();
    (valid && !command.is_empty()).then(|| (kind.to_string(), command.to_string()))
}

fn meaningful(content: &str) -> impl Iterator<Item = &str> {
    content
        .lines()
        .map(str::trim)
        .filter(|line| !line.is_empty() && !line.starts_with('#') && !line.starts_with("//"))
}

/// `^[A-Za-z_][A-Za-z0-9_]*$`: a config var name.
pub fn is_env_key(key: &str) -> bool {
    key.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_')
        && key.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
}
