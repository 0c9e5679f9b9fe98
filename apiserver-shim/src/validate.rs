//! The one check every string from a caller passes before a handler sees it: request bodies,
//! query parameters and path segments. Control characters are refused (NUL everywhere, line
//! breaks and tabs outside the few free-text fields), and so are strings too long to be
//! anything but a mistake, each with a 422 naming the field.

use serde_json::Value;

use crate::error::ApiError;

/// Fields whose values are free text that may span lines: env-file `content`, PEM keys and
/// certificates (a mail server's `smtpCa`), variable `value`s, descriptions and reasons.
const MULTI_LINE_FIELDS: &[&str] = &[
    "content",
    "privateKey",
    "smtpCa",
    "value",
    "description",
    "reason",
];

/// Objects holding caller-chosen keys and arbitrary values (spec §2.1 `details`,
/// `attributes`; source `metadata`; a migration source's uploaded `files`, name → content):
/// any string inside may span lines.
const FREE_FORM_OBJECTS: &[&str] = &["details", "attributes", "metadata", "files"];

/// Longest single-line string accepted anywhere (names, ids, hosts, locators, URLs…);
/// per-field limits of spec §8 are tighter and checked by the handlers.
pub const MAX_SINGLE_LINE: usize = berth_crds::limits::TEXT_MAX;

/// Whether a string may hold line breaks and tabs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Lines {
    Single,
    Multi,
}

/// Checks one string: no control characters (line breaks and tabs only in `Lines::Multi`), and
/// a single-line string at most [`MAX_SINGLE_LINE`] characters.
pub fn text(field: &str, value: &str, lines: Lines) -> Result<(), ApiError> {
    if let Some((position, c)) = value.chars().enumerate().find(|(_, c)| !allowed(*c, lines)) {
        let allowed = match lines {
            Lines::Single => "no control characters (line breaks and tabs included)",
            Lines::Multi => "no control characters other than line breaks and tabs",
        };
        return Err(ApiError::validation(
            field,
            format!(
                "{field} holds the control character U+{:04X} at position {position}; it allows {allowed}",
                c as u32
            ),
        ));
    }
    if lines == Lines::Single && value.chars().count() > MAX_SINGLE_LINE {
        return Err(ApiError::validation(
            field,
            format!("{field} must be at most {MAX_SINGLE_LINE} characters"),
        )
        .with_detail("max", MAX_SINGLE_LINE));
    }
    Ok(())
}

fn allowed(c: char, lines: Lines) -> bool {
    !c.is_control() || (lines == Lines::Multi && matches!(c, '\n' | '\r' | '\t'))
}

/// Checks every string of a JSON body, object keys included; the error names the field by
/// its JSON path (`variables[2].key`).
pub fn json_strings(value: &Value) -> Result<(), ApiError> {
    walk(value, &mut Vec::new(), false)
}

fn walk(value: &Value, path: &mut Vec<String>, free_form: bool) -> Result<(), ApiError> {
    match value {
        Value::String(text_value) => {
            let multi = free_form
                || path
                    .last()
                    .is_some_and(|field| MULTI_LINE_FIELDS.contains(&field.as_str()));
            let lines = if multi { Lines::Multi } else { Lines::Single };
            text(&render(path), text_value, lines)
        }
        Value::Array(items) => {
            for (index, item) in items.iter().enumerate() {
                path.push(format!("[{index}]"));
                let result = walk(item, path, free_form);
                path.pop();
                result?;
            }
            Ok(())
        }
        Value::Object(map) => {
            for (key, item) in map {
                let lines = if free_form {
                    Lines::Multi
                } else {
                    Lines::Single
                };
                path.push(key.clone());
                let result = text(&render(path), key, lines).and_then(|()| {
                    walk(
                        item,
                        path,
                        free_form || FREE_FORM_OBJECTS.contains(&key.as_str()),
                    )
                });
                path.pop();
                result?;
            }
            Ok(())
        }
        _ => Ok(()),
    }
}

/// `["a", "[2]", "b"]` as `a[2].b`.
fn render(path: &[String]) -> String {
    let mut out = String::new();
    for segment in path {
        if !out.is_empty() && !segment.starts_with('[') {
            out.push('.');
        }
        // A bad key is named without repeating its control characters.
        for c in segment.chars() {
            if c.is_control() {
                out.extend(c.escape_unicode());
            } else {
                out.push(c);
            }
        }
    }
    if out.is_empty() { "body".into() } else { out }
}

/// Answers 404 for a path with a segment that can name nothing, before any handler (or the API
/// server behind it) sees it.
pub async fn refuse_bad_paths(
    request: axum::extract::Request,
    next: axum::middleware::Next,
) -> axum::response::Response {
    use axum::response::IntoResponse;
    if request.uri().path().split('/').any(bad_path_segment) {
        return ApiError::not_found_message(
            "no object has an id holding control characters or bytes that are not UTF-8",
        )
        .into_response();
    }
    next.run(request).await
}

/// A percent-decoded path segment that can name nothing: not UTF-8, or holding a control
/// character. Such ids match no object, so they are answered like a missing one.
pub fn bad_path_segment(raw: &str) -> bool {
    match percent_decode(raw) {
        Some(decoded) => decoded.chars().any(char::is_control),
        None => true,
    }
}

/// Percent-decodes `text`; `None` when an escape is broken or the result is not UTF-8.
pub fn percent_decode(text: &str) -> Option<String> {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let hex = text.get(i + 1..i + 3)?;
            out.push(u8::from_str_radix(hex, 16).ok()?);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8(out).ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn names_refuse_every_control_character() {
        for bad in ["a\0b", "a\nb", "a\tb", "\u{7f}", "\u{85}", "\u{1b}[31m"] {
            let error = text("name", bad, Lines::Single).unwrap_err();
            assert_eq!(error.status, 422, "{bad:?}");
            assert_eq!(error.body.details["field"], "name");
        }
        assert!(text("name", "Café – ünïcode ok", Lines::Single).is_ok());
    }

    #[test]
    fn free_text_allows_lines_but_never_nul() {
        assert!(text("value", "a\nb\tc\r\n", Lines::Multi).is_ok());
        assert!(text("value", "a\0b", Lines::Multi).is_err());
        assert!(text("value", &"x".repeat(10_000), Lines::Multi).is_ok());
        assert!(text("name", &"x".repeat(MAX_SINGLE_LINE + 1), Lines::Single).is_err());
    }

    #[test]
    fn bodies_are_checked_everywhere_with_the_path_named() {
        let error =
            json_strings(&json!({"variables": [{"key": "A"}, {"key": "B\u{0}"}]})).unwrap_err();
        assert_eq!(error.body.details["field"], "variables[1].key");
        let error = json_strings(&json!({"name": "a\nb"})).unwrap_err();
        assert_eq!(error.body.details["field"], "name");
        let error = json_strings(&json!({"ok\u{1}": 1})).unwrap_err();
        assert_eq!(error.body.details["field"], "ok\\u{1}");
        assert!(json_strings(&json!({"content": "A=1\nB=2", "privateKey": "-----\nx"})).is_ok());
        assert!(json_strings(&json!({"details": {"note": {"text": "two\nlines"}}})).is_ok());
        assert!(json_strings(&json!({"details": {"note": "nul\u{0}"}})).is_err());
    }

    #[test]
    fn path_segments_that_can_name_nothing() {
        assert!(bad_path_segment("prj-1%00"));
        assert!(bad_path_segment("%ff%fe"));
        assert!(bad_path_segment("%zz"));
        assert!(!bad_path_segment("prj-1"));
        assert!(!bad_path_segment("caf%C3%A9"));
    }
}
