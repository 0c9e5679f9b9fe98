//! The one output formatter: aligned tables (colour only on a terminal, `NO_COLOR` honoured),
//! the API's own JSON or YAML with `-o json|yaml`, or ids only with `-q`.

use std::io::IsTerminal;

use clap::ValueEnum;
use serde_json::Value;

#[derive(ValueEnum, Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum Format {
    #[default]
    Table,
    Json,
    Yaml,
}

/// A column of a table or a line of a record view: its header and where its value is, as a
/// JSON pointer into one item of the API's answer.
#[derive(Clone, Copy, Debug)]
pub struct Column {
    pub header: &'static str,
    pub pointer: &'static str,
}

pub const fn col(header: &'static str, pointer: &'static str) -> Column {
    Column { header, pointer }
}

pub struct Output {
    pub format: Format,
    pub quiet: bool,
    pub color: bool,
}

/// Text styles; plain text when colour is off.
#[derive(Clone, Copy)]
pub enum Style {
    Bold,
    Dim,
    Green,
    Red,
    Yellow,
}

impl Output {
    pub fn new(format: Format, quiet: bool) -> Self {
        let color = std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty())
            && std::io::stdout().is_terminal();
        Self {
            format,
            quiet,
            color,
        }
    }

    /// Whether people read the output (a table), rather than a script (JSON, YAML, ids).
    pub fn human(&self) -> bool {
        self.format == Format::Table && !self.quiet
    }

    pub fn paint(&self, style: Style, text: &str) -> String {
        if !self.color {
            return text.to_string();
        }
        let code = match style {
            Style::Bold => "1",
            Style::Dim => "2",
            Style::Green => "32",
            Style::Red => "31",
            Style::Yellow => "33",
        };
        format!("\x1b[{code}m{text}\x1b[0m")
    }

    /// A list: `items` as a table, their ids with `-q`, or `answer` (the API's whole
    /// response) as JSON or YAML.
    pub fn list(&self, answer: &Value, items: &[Value], columns: &[Column], id: &str) {
        if self.quiet {
            for item in items {
                println!("{}", cell(item, id));
            }
            return;
        }
        match self.format {
            Format::Table => print!("{}", self.table(items, columns)),
            _ => self.raw(answer),
        }
    }

    /// One more item of a list being watched: a table line under the list's columns (the
    /// header is not repeated), its id with `-q`, or the item as one JSON line (a YAML
    /// document with `-o yaml`).
    pub fn watched(&self, item: &Value, columns: &[Column], id: &str) {
        if self.quiet {
            println!("{}", cell(item, id));
            return;
        }
        match self.format {
            Format::Table => {
                let table = self.table(std::slice::from_ref(item), columns);
                print!("{}", table.split_once('\n').map_or("", |(_, row)| row));
            }
            Format::Json => println!("{item}"),
            Format::Yaml => print!(
                "---\n{}",
                serde_yaml::to_string(item).expect("JSON values are YAML")
            ),
        }
    }

    /// One record: a `FIELD  value` view, its id with `-q`, or the API's JSON or YAML.
    pub fn record(&self, answer: &Value, fields: &[Column], id: &str) {
        self.record_of(answer, answer, fields, id);
    }

    /// Like [`Output::record`], where people see `view` (a part of the answer, or one with
    /// fields gathered from several parts) while scripts get the answer as it came.
    pub fn record_of(&self, answer: &Value, view: &Value, fields: &[Column], id: &str) {
        if self.quiet {
            println!("{}", cell(view, id));
            return;
        }
        match self.format {
            Format::Table => {
                let width = fields.iter().map(|f| f.header.len()).max().unwrap_or(0);
                for field in fields {
                    let header = format!("{:width$}", field.header);
                    println!(
                        "{}  {}",
                        self.paint(Style::Bold, &header),
                        cell(view, field.pointer)
                    );
                }
            }
            _ => self.raw(answer),
        }
    }

    /// The outcome of a command: `human` for people, the API's answer for scripts, nothing
    /// with `-q` (the exit code says it).
    pub fn done(&self, answer: &Value, human: &str) {
        if self.quiet {
            return;
        }
        match self.format {
            Format::Table => println!("{human}"),
            _ => self.raw(answer),
        }
    }

    /// The API's answer as it came, in the chosen format (JSON for `table`).
    pub fn raw(&self, answer: &Value) {
        match self.format {
            Format::Yaml => print!(
                "{}",
                serde_yaml::to_string(answer).expect("JSON values are YAML")
            ),
            _ => println!(
                "{}",
                serde_json::to_string_pretty(answer).expect("values serialize")
            ),
        }
    }

    /// A typed list: `rows` as a table, their ids with `-q`, or `answer` (the API's whole
    /// response) as JSON or YAML.
    pub fn rows<R: Row>(&self, answer: &Value, rows: &[R]) {
        if self.quiet {
            for row in rows {
                println!("{}", row.id());
            }
            return;
        }
        match self.format {
            Format::Table => {
                let cells = rows.iter().map(Row::cells).collect();
                print!("{}", self.grid(R::HEADERS, cells));
            }
            _ => self.raw(answer),
        }
    }

    /// One typed record as `FIELD  value` lines, its id with `-q`, or the API's JSON or YAML.
    pub fn row<R: Row>(&self, answer: &Value, record: &R) {
        if self.quiet {
            println!("{}", record.id());
            return;
        }
        match self.format {
            Format::Table => {
                let width = R::HEADERS.iter().map(|h| h.len()).max().unwrap_or(0);
                for (header, value) in R::HEADERS.iter().zip(record.cells()) {
                    let header = format!("{header:width$}");
                    println!("{}  {value}", self.paint(Style::Bold, &header));
                }
            }
            _ => self.raw(answer),
        }
    }

    pub fn table(&self, items: &[Value], columns: &[Column]) -> String {
        let rows: Vec<Vec<String>> = items
            .iter()
            .map(|item| columns.iter().map(|c| cell(item, c.pointer)).collect())
            .collect();
        let headers: Vec<&str> = columns.iter().map(|c| c.header).collect();
        self.grid(&headers, rows)
    }

    /// Aligned columns under bold `headers`.
    pub(crate) fn grid(&self, headers: &[&str], rows: Vec<Vec<String>>) -> String {
        let widths: Vec<usize> = headers
            .iter()
            .enumerate()
            .map(|(i, header)| {
                rows.iter()
                    .map(|row| row[i].chars().count())
                    .chain([header.len()])
                    .max()
                    .unwrap_or(0)
            })
            .collect();
        let line = |cells: Vec<String>, style: Option<Style>| {
            let last = cells.len().saturating_sub(1);
            let mut text = String::new();
            for (i, value) in cells.into_iter().enumerate() {
                // Pad before painting: escape codes would count as width.
                let padded = if i == last {
                    value
                } else {
                    let pad = widths[i].saturating_sub(value.chars().count());
                    format!("{value}{}", " ".repeat(pad + 2))
                };
                match style {
                    Some(style) => text.push_str(&self.paint(style, &padded)),
                    None => text.push_str(&padded),
                }
            }
            text.trim_end().to_string() + "\n"
        };
        let headers = headers.iter().map(|h| h.to_string()).collect();
        let mut out = line(headers, Some(Style::Bold));
        for row in rows {
            out.push_str(&line(row, None));
        }
        out
    }
}

/// A record the CLI shows as a table row, read as the API's own type (berth-api): a field the
/// API renames breaks this crate's build, not a table at run time.
pub trait Row {
    /// Column headers, in the order of [`Row::cells`].
    const HEADERS: &'static [&'static str];
    fn cells(&self) -> Vec<String>;
    /// What `-q` prints.
    fn id(&self) -> &str;
}

/// A text cell: `-` when empty, as [`cell`] shows it.
pub fn text(value: &str) -> String {
    if value.is_empty() {
        "-".to_string()
    } else {
        value.to_string()
    }
}

/// An optional text cell: `-` when absent or empty.
pub fn optional(value: Option<&String>) -> String {
    text(value.map_or("", String::as_str))
}

/// A cell of one of the API's enums or numbers: its wire form (`not-ready`, `8080`), as
/// `-o json` shows it; `-` when absent.
pub fn wire<T: serde::Serialize>(value: &T) -> String {
    match serde_json::to_value(value) {
        Ok(Value::String(name)) => text(&name),
        Ok(Value::Null) | Err(_) => "-".to_string(),
        Ok(other) => other.to_string(),
    }
}

/// A value for a table cell: strings as they are, lists comma-separated, absent as `-`.
pub fn cell(item: &Value, pointer: &str) -> String {
    match item.pointer(pointer) {
        None | Some(Value::Null) => "-".to_string(),
        Some(Value::String(text)) if text.is_empty() => "-".to_string(),
        Some(Value::String(text)) => text.clone(),
        Some(Value::Array(values)) if values.is_empty() => "-".to_string(),
        Some(Value::Array(values)) => values
            .iter()
            .map(|v| v.as_str().map_or_else(|| v.to_string(), str::to_string))
            .collect::<Vec<_>>()
            .join(","),
        Some(other) => other.to_string(),
    }
}

/// The array at `pointer` of an answer (e.g. `/items`); none when absent.
pub fn items(answer: &Value, pointer: &str) -> Vec<Value> {
    answer
        .pointer(pointer)
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn plain() -> Output {
        Output {
            format: Format::Table,
            quiet: false,
            color: false,
        }
    }

    #[test]
    fn tables_align_columns_and_show_absent_values_as_a_dash() {
        let items = vec![
            json!({"id": "prj-1", "name": "Web Shop", "tags": ["a", "b"]}),
            json!({"id": "prj-long-id", "name": null}),
        ];
        let columns = [col("ID", "/id"), col("NAME", "/name"), col("TAGS", "/tags")];
        let text = plain().table(&items, &columns);
        assert_eq!(
            text,
            "ID           NAME      TAGS\n\
             prj-1        Web Shop  a,b\n\
             prj-long-id  -         -\n"
        );
    }

    #[test]
    fn colour_wraps_headers_only_when_on() {
        let mut output = plain();
        output.color = true;
        let text = output.table(&[json!({"id": "x"})], &[col("ID", "/id")]);
        assert!(text.starts_with("\x1b[1mID\x1b[0m\n"), "{text:?}");
        assert!(text.ends_with("x\n"));
    }

    #[test]
    fn cells_render_numbers_booleans_and_nested_values() {
        let item = json!({"n": 3, "b": true, "o": {"k": "v"}, "e": ""});
        assert_eq!(cell(&item, "/n"), "3");
        assert_eq!(cell(&item, "/b"), "true");
        assert_eq!(cell(&item, "/o/k"), "v");
        assert_eq!(cell(&item, "/e"), "-");
        assert_eq!(cell(&item, "/missing"), "-");
    }
}
