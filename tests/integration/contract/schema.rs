//! A strict client's reading of the records in [`super::records`]: every field the spec lists
//! without `?` present, every value of its type and value set, and no `null` anywhere but in
//! the caller's own JSON (`any`, `map`). Fields a record does not list are allowed (a client
//! generated from the spec ignores them), unless they are `null`. A field listed without `?`
//! may be missing (`~`) only for a reason [`super::absent`] names.

use std::collections::{HashMap, HashSet};

use serde_json::Value;

/// Whether a field must be there.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Presence {
    /// Listed without `?`.
    Required,
    /// Listed without `?`, left out where no value can exist (for a named reason).
    WhereKnown,
    /// Listed with `?`.
    Optional,
}

#[derive(Clone, Debug)]
enum Ty {
    Str,
    Num,
    Int,
    Bool,
    /// The caller's JSON, `null` included.
    Any,
    Map(Box<Ty>),
    List(Box<Ty>),
    OneOf(Vec<&'static str>),
    Record(&'static str),
}

#[derive(Clone, Debug)]
struct Field {
    name: &'static str,
    presence: Presence,
    ty: Ty,
}

/// A record's fields, or a value set standing alone (`Freshness`).
#[derive(Clone, Debug)]
enum Definition {
    Fields(Vec<Field>),
    Alias(Ty),
}

/// Every record, parsed once.
pub struct Spec {
    definitions: HashMap<&'static str, Definition>,
}

impl Spec {
    /// Parses `records`, with `absent_when` saying why each `~` field may be missing
    /// (`("Record.field", reason)`). A line that does not parse, names a record that does not
    /// exist, a `~` field without a reason or a reason for a field that is not `~` is a bug of
    /// the tables and panics.
    pub fn new(
        records: &[(&'static str, &'static str)],
        absent_when: &[(&'static str, &'static str)],
    ) -> Self {
        let definitions: HashMap<_, _> = records
            .iter()
            .map(|(name, text)| (*name, definition(name, text)))
            .collect();
        let spec = Self { definitions };
        for (name, definition) in &spec.definitions {
            let types: Vec<&Ty> = match definition {
                Definition::Fields(fields) => fields.iter().map(|f| &f.ty).collect(),
                Definition::Alias(ty) => vec![ty],
            };
            for ty in types {
                spec.assert_known(name, ty);
            }
        }
        let unexplained = spec.unexplained(absent_when);
        assert!(
            unexplained.is_empty(),
            "every field listed without `?` is required unless a reason says when it has no \
             value:\n{}",
            unexplained.join("\n")
        );
        spec
    }

    /// Every `~` field without a reason in `absent_when`, and every reason that is empty,
    /// repeated, or names a field that is not `~`; one line each.
    fn unexplained(&self, absent_when: &[(&'static str, &'static str)]) -> Vec<String> {
        let mut problems = Vec::new();
        let mut explained = HashSet::new();
        for (at, why) in absent_when {
            if !explained.insert(*at) {
                problems.push(format!("{at}: a second reason"));
            }
            if why.trim().is_empty() {
                problems.push(format!("{at}: an empty reason"));
            }
            match self.presence(at) {
                Some(Presence::WhereKnown) => {}
                Some(_) => problems.push(format!("{at}: a reason, but the field is not `~`")),
                None => problems.push(format!("{at}: a reason for a field no record lists")),
            }
        }
        let mut names: Vec<&&str> = self.definitions.keys().collect();
        names.sort();
        for name in names {
            let Definition::Fields(fields) = &self.definitions[*name] else {
                continue;
            };
            for field in fields {
                let at = format!("{name}.{}", field.name);
                if field.presence == Presence::WhereKnown && !explained.contains(at.as_str()) {
                    problems.push(format!("{at}: `~` without a reason"));
                }
            }
        }
        problems
    }

    /// How `Record.field` is listed; `None` when no record lists it.
    fn presence(&self, at: &str) -> Option<Presence> {
        let (record, name) = at.split_once('.')?;
        match self.definitions.get(record)? {
            Definition::Fields(fields) => {
                fields.iter().find(|f| f.name == name).map(|f| f.presence)
            }
            Definition::Alias(_) => None,
        }
    }

    fn assert_known(&self, at: &str, ty: &Ty) {
        match ty {
            Ty::Record(name) => assert!(
                self.definitions.contains_key(name),
                "{at} names the unknown record {name}"
            ),
            Ty::Map(inner) | Ty::List(inner) => self.assert_known(at, inner),
            _ => {}
        }
    }

    /// What is wrong with `value` read as `record`, one line per problem, each with its path.
    pub fn check(&self, record: &'static str, value: &Value) -> Vec<String> {
        let mut problems = Vec::new();
        self.value(&Ty::Record(record), value, record, &mut problems);
        problems
    }

    fn value(&self, ty: &Ty, value: &Value, at: &str, problems: &mut Vec<String>) {
        let wrong = |expected: &str| format!("{at}: expected {expected}, got {value}");
        match ty {
            Ty::Any => {}
            Ty::Str if !value.is_string() => problems.push(wrong("a string")),
            Ty::Num if !value.is_number() => problems.push(wrong("a number")),
            Ty::Int if !(value.is_i64() || value.is_u64()) => problems.push(wrong("an integer")),
            Ty::Bool if !value.is_boolean() => problems.push(wrong("a boolean")),
            Ty::OneOf(values) => match value.as_str() {
                Some(text) if values.contains(&text) => {}
                _ => problems.push(wrong(&format!("one of {}", values.join("|")))),
            },
            Ty::List(inner) => match value.as_array() {
                Some(items) => {
                    for (index, item) in items.iter().enumerate() {
                        self.value(inner, item, &format!("{at}[{index}]"), problems);
                    }
                }
                None => problems.push(wrong("an array")),
            },
            Ty::Map(inner) => match value.as_object() {
                Some(entries) => {
                    for (key, entry) in entries {
                        if !entry.is_null() || !matches!(**inner, Ty::Any) {
                            self.value(inner, entry, &format!("{at}.{key}"), problems);
                        }
                    }
                }
                None => problems.push(wrong("an object")),
            },
            Ty::Record(name) => self.record(name, value, at, problems),
            _ => {}
        }
    }

    fn record(&self, name: &'static str, value: &Value, at: &str, problems: &mut Vec<String>) {
        let fields = match &self.definitions[name] {
            Definition::Alias(ty) => return self.value(ty, value, at, problems),
            Definition::Fields(fields) => fields,
        };
        let Some(object) = value.as_object() else {
            problems.push(format!("{at}: expected a {name} object, got {value}"));
            return;
        };
        for field in fields {
            let path = format!("{at}.{}", field.name);
            match object.get(field.name) {
                None if field.presence == Presence::Required => {
                    problems.push(format!("{path}: missing"));
                }
                None => {}
                Some(Value::Null) => problems.push(format!("{path}: null")),
                Some(value) => self.value(&field.ty, value, &path, problems),
            }
        }
        for (key, member) in object {
            if !fields.iter().any(|f| f.name == key) {
                no_nulls(member, &format!("{at}.{key}"), problems);
            }
        }
        if name == "Scope" {
            scope_names_its_id(object, at, problems);
        }
    }
}

/// A scope of kind `server` names its `serverId`, and so on.
fn scope_names_its_id(
    object: &serde_json::Map<String, Value>,
    at: &str,
    problems: &mut Vec<String>,
) {
    if let Some(kind) = object.get("kind").and_then(Value::as_str) {
        let id = format!("{kind}Id");
        if !object.get(&id).is_some_and(Value::is_string) {
            problems.push(format!("{at}: a {kind} scope without {id}"));
        }
    }
}

/// `null` anywhere in `value` (a field the tables do not list).
fn no_nulls(value: &Value, at: &str, problems: &mut Vec<String>) {
    match value {
        Value::Null => problems.push(format!("{at}: null")),
        Value::Array(items) => {
            for (index, item) in items.iter().enumerate() {
                no_nulls(item, &format!("{at}[{index}]"), problems);
            }
        }
        Value::Object(entries) => {
            for (key, entry) in entries {
                no_nulls(entry, &format!("{at}.{key}"), problems);
            }
        }
        _ => {}
    }
}

fn definition(name: &str, text: &'static str) -> Definition {
    let text = text.trim();
    if let Some(values) = text.strip_prefix('=') {
        return Definition::Alias(one_of(values));
    }
    let fields = text
        .split(',')
        .map(str::trim)
        .filter(|f| !f.is_empty())
        .map(|f| field(name, f))
        .collect();
    Definition::Fields(fields)
}

fn field(record: &str, text: &'static str) -> Field {
    let (head, ty) = text
        .split_once(':')
        .unwrap_or_else(|| panic!("{record}: `{text}` has no type"));
    let (name, presence) = if let Some(name) = head.strip_suffix('?') {
        (name, Presence::Optional)
    } else if let Some(name) = head.strip_suffix('~') {
        (name, Presence::WhereKnown)
    } else {
        (head, Presence::Required)
    };
    Field {
        name,
        presence,
        ty: ty_of(ty.trim()),
    }
}

fn ty_of(text: &'static str) -> Ty {
    if let Some(inner) = text.strip_suffix("[]") {
        return Ty::List(Box::new(ty_of(inner)));
    }
    if let Some(values) = text.strip_prefix('=') {
        return one_of(values);
    }
    if let Some(inner) = text.strip_prefix("map<").and_then(|t| t.strip_suffix('>')) {
        return Ty::Map(Box::new(ty_of(inner)));
    }
    match text {
        "string" => Ty::Str,
        "number" => Ty::Num,
        "integer" => Ty::Int,
        "boolean" => Ty::Bool,
        "any" => Ty::Any,
        "map" => Ty::Map(Box::new(Ty::Any)),
        name => Ty::Record(name),
    }
}

fn one_of(values: &'static str) -> Ty {
    Ty::OneOf(values.split('|').map(str::trim).collect())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    const RECORDS: &[(&str, &str)] = &[
        (
            "Thing",
            "id:string, size~:integer, note?:string, kind:Kind, tags:=a|b[], extra?:map",
        ),
        ("Kind", "=x|y"),
        (
            "Scope",
            "kind:=server|project, serverId?:string, projectId?:string",
        ),
    ];

    const ABSENT_WHEN: &[(&str, &str)] = &[("Thing.size", "not measured yet")];

    #[test]
    fn a_strict_client_names_every_drift() {
        let spec = Spec::new(RECORDS, ABSENT_WHEN);
        let good = json!({"id": "t", "kind": "x", "tags": ["a"], "extra": {"k": null}, "more": 1});
        assert_eq!(spec.check("Thing", &good), Vec::<String>::new());
        let bad =
            json!({"size": 1.5, "note": null, "kind": "z", "tags": ["c"], "more": {"n": null}});
        assert_eq!(
            spec.check("Thing", &bad),
            [
                "Thing.id: missing",
                "Thing.size: expected an integer, got 1.5",
                "Thing.note: null",
                "Thing.kind: expected one of x|y, got \"z\"",
                "Thing.tags[0]: expected one of a|b, got \"c\"",
                "Thing.more.n: null",
            ]
        );
        assert_eq!(
            spec.check("Scope", &json!({"kind": "server", "projectId": "p"})),
            ["Scope: a server scope without serverId"]
        );
    }

    #[test]
    fn every_field_left_out_has_a_reason_and_every_reason_its_field() {
        let spec = Spec::new(RECORDS, ABSENT_WHEN);
        let reasons = [
            ("Thing.note", "optional anyway"),
            ("Thing.id", "never"),
            ("Thing.colour", "no such field"),
            ("Kind.x", "a value set"),
            ("Scope.kind", ""),
            ("Scope.kind", "twice"),
        ];
        assert_eq!(
            spec.unexplained(&reasons),
            [
                "Thing.note: a reason, but the field is not `~`",
                "Thing.id: a reason, but the field is not `~`",
                "Thing.colour: a reason for a field no record lists",
                "Kind.x: a reason for a field no record lists",
                "Scope.kind: an empty reason",
                "Scope.kind: a reason, but the field is not `~`",
                "Scope.kind: a second reason",
                "Scope.kind: a reason, but the field is not `~`",
                "Thing.size: `~` without a reason",
            ]
        );
    }

    #[test]
    #[should_panic(expected = "Thing.size: `~` without a reason")]
    fn the_tables_are_refused_with_a_field_left_out_for_no_reason() {
        Spec::new(RECORDS, &[]);
    }

    /// The rule for the real tables: a field the spec lists without `?` is required unless
    /// [`crate::contract::absent`] says when Berth has no value for it.
    #[test]
    fn every_field_the_records_leave_out_names_when() {
        use crate::contract::{absent, records};
        Spec::new(records::RECORDS, absent::ABSENT_WHEN);
    }
}
