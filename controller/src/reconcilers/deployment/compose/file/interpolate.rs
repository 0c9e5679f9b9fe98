//! `${VAR}`, `${VAR:-default}`, `${VAR-default}`, `$VAR` and `$$` in the strings of a Compose
//! document, replaced from the resource's configuration as Compose replaces them from its
//! environment.

use std::collections::HashMap;

use serde_yaml::{Mapping, Value};

use super::{Read, error};

/// Replaces `${VAR}`, `${VAR:-default}`, `${VAR-default}` and `$VAR` in every string of the
/// document with `variables`; `$$` is a literal `$`. A variable without a value or default is
/// empty, as Compose makes it.
pub(super) fn interpolate(
    value: Value,
    variables: &HashMap<String, String>,
    path: &str,
) -> Read<Value> {
    Ok(match value {
        Value::String(text) => Value::String(substitute(&text, variables, path)?),
        Value::Sequence(items) => Value::Sequence(
            items
                .into_iter()
                .map(|item| interpolate(item, variables, path))
                .collect::<Read<_>>()?,
        ),
        Value::Mapping(map) => {
            let mut out = Mapping::new();
            for (key, item) in map {
                let child = format!("{path}.{}", key.as_str().unwrap_or("?"));
                out.insert(key, interpolate(item, variables, &child)?);
            }
            Value::Mapping(out)
        }
        other => other,
    })
}

fn substitute(text: &str, variables: &HashMap<String, String>, path: &str) -> Read<String> {
    let mut out = String::new();
    let mut rest = text;
    while let Some(at) = rest.find('$') {
        out.push_str(&rest[..at]);
        let after = &rest[at + 1..];
        if let Some(tail) = after.strip_prefix('$') {
            out.push('$');
            rest = tail;
        } else if let Some(braced) = after.strip_prefix('{') {
            let end = braced
                .find('}')
                .ok_or_else(|| error(path.trim_start_matches('.'), "an unclosed ${"))?;
            let expression = &braced[..end];
            let (name, default) = match expression
                .split_once(":-")
                .or_else(|| expression.split_once('-'))
            {
                Some((name, default)) => (name, Some(default)),
                None => (expression, None),
            };
            let value = variables.get(name).filter(|v| !v.is_empty());
            out.push_str(value.map_or(default.unwrap_or_default(), String::as_str));
            rest = &braced[end + 1..];
        } else {
            let length = after
                .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
                .unwrap_or(after.len());
            if length == 0 {
                out.push('$');
            } else {
                out.push_str(variables.get(&after[..length]).map_or("", String::as_str));
            }
            rest = &after[length..];
        }
    }
    out.push_str(rest);
    Ok(out)
}
