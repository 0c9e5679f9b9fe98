//! Reading vendor JSON (and YAML/TOML converted to JSON) field by field, remembering which keys
//! were read so every other key becomes a warning: nothing is dropped silently. Type errors
//! name the file and the path, never the value found there.

use berth_api::validate::FieldError;
use serde_json::{Map, Value};

use super::draft::{Draft, file_error};

/// One JSON object of a vendor file and the keys read from it so far.
pub(crate) struct Obj<'a> {
    pub file: &'a str,
    pub path: String,
    map: &'a Map<String, Value>,
    read: Vec<&'a str>,
}

impl<'a> Obj<'a> {
    /// `value` as an object, or an error naming `path` in `file`.
    pub fn new(file: &'a str, path: &str, value: &'a Value) -> Result<Self, FieldError> {
        match value {
            Value::Object(map) => Ok(Self {
                file,
                path: path.to_string(),
                map,
                read: Vec::new(),
            }),
            _ => Err(file_error(
                file,
                format!("{} must be an object", show(path)),
            )),
        }
    }

    /// `path.key` (or `key` at the top).
    pub fn child(&self, key: &str) -> String {
        if self.path.is_empty() {
            key.to_string()
        } else {
            format!("{}.{key}", self.path)
        }
    }

    /// `<file>:<path.key>`, the path of a blocker.
    pub fn at(&self, key: &str) -> String {
        format!("{}:{}", self.file, self.child(key))
    }

    /// The value of `key`, marking it read; `null` counts as absent (most vendor keys accept it).
    pub fn get(&mut self, key: &str) -> Option<&'a Value> {
        let (name, value) = self.map.get_key_value(key)?;
        self.read.push(name.as_str());
        (!value.is_null()).then_some(value)
    }

    pub fn str(&mut self, key: &str) -> Result<Option<&'a str>, FieldError> {
        match self.get(key) {
            None => Ok(None),
            Some(Value::String(text)) => Ok(Some(text.as_str())),
            Some(_) => Err(self.wrong(key, "a string")),
        }
    }

    /// A non-negative integer (numbers in strings too: some exports quote them).
    pub fn uint(&mut self, key: &str) -> Result<Option<u64>, FieldError> {
        match self.get(key) {
            None => Ok(None),
            Some(Value::Number(n)) if n.as_u64().is_some() => Ok(n.as_u64()),
            Some(Value::String(text)) if text.trim().parse::<u64>().is_ok() => {
                Ok(text.trim().parse().ok())
            }
            Some(_) => Err(self.wrong(key, "a non-negative integer")),
        }
    }

    pub fn bool(&mut self, key: &str) -> Result<Option<bool>, FieldError> {
        match self.get(key) {
            None => Ok(None),
            Some(Value::Bool(flag)) => Ok(Some(*flag)),
            Some(_) => Err(self.wrong(key, "true or false")),
        }
    }

    pub fn obj(&mut self, key: &str) -> Result<Option<Obj<'a>>, FieldError> {
        let path = self.child(key);
        self.get(key)
            .map(|value| Obj::new(self.file, &path, value))
            .transpose()
    }

    pub fn arr(&mut self, key: &str) -> Result<Option<&'a Vec<Value>>, FieldError> {
        match self.get(key) {
            None => Ok(None),
            Some(Value::Array(items)) => Ok(Some(items)),
            Some(_) => Err(self.wrong(key, "an array")),
        }
    }

    /// The members of this object as objects (`services.<id>`, `volumes.<id>`, …).
    pub fn members(&self) -> Result<Vec<(&'a str, Obj<'a>)>, FieldError> {
        self.map
            .iter()
            .map(|(key, value)| Ok((key.as_str(), Obj::new(self.file, &self.child(key), value)?)))
            .collect()
    }

    /// The raw members, for maps of scalars.
    pub fn entries(&self) -> impl Iterator<Item = (&'a String, &'a Value)> + 'a {
        self.map.iter()
    }

    /// The value of `key` without marking it read (to look ahead).
    pub fn peek(&self, key: &str) -> Option<&'a Value> {
        self.map.get(key).filter(|value| !value.is_null())
    }

    /// Keys present (and not null) but never read.
    pub fn unread(&self) -> Vec<String> {
        self.map
            .iter()
            .filter(|(key, value)| !value.is_null() && !self.read.contains(&key.as_str()))
            .map(|(key, _)| self.child(key))
            .collect()
    }

    /// One warning per unread key: read but not expressible in a Berth bundle.
    pub fn warn_unread(&self, draft: &mut Draft) {
        for path in self.unread() {
            draft.warn(format!(
                "{}: {path} is not migrated (Berth has no equivalent).",
                self.file
            ));
        }
    }

    pub fn wrong(&self, key: &str, what: &str) -> FieldError {
        file_error(self.file, format!("{} must be {what}", self.child(key)))
    }
}

fn show(path: &str) -> &str {
    if path.is_empty() { "the file" } else { path }
}
