//! Reads a `text/event-stream` body (spec §6) as it arrives: each event's `data`, in order.
//! Keep-alive comments and the `event`/`id`/`retry` fields carry nothing the CLI shows.

use std::io::BufRead;

pub struct Events<R> {
    reader: R,
}

impl<R: BufRead> Events<R> {
    pub fn new(reader: R) -> Self {
        Self { reader }
    }
}

impl<R: BufRead> Iterator for Events<R> {
    /// One event's `data` (lines joined with `\n`), or the read error that ended the stream.
    type Item = std::io::Result<String>;

    fn next(&mut self) -> Option<Self::Item> {
        let mut data: Option<String> = None;
        let mut line = String::new();
        loop {
            line.clear();
            match self.reader.read_line(&mut line) {
                Err(error) => return Some(Err(error)),
                // The stream ended; an event without its blank line still counts.
                Ok(0) => return data.map(Ok),
                Ok(_) => {}
            }
            let line = line.trim_end_matches(['\r', '\n']);
            if line.is_empty() {
                if data.is_some() {
                    return data.map(Ok);
                }
                continue;
            }
            if let Some(value) = line.strip_prefix("data:") {
                let value = value.strip_prefix(' ').unwrap_or(value);
                match &mut data {
                    Some(existing) => {
                        existing.push('\n');
                        existing.push_str(value);
                    }
                    None => data = Some(value.to_string()),
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn events(text: &str) -> Vec<String> {
        Events::new(text.as_bytes()).map(Result::unwrap).collect()
    }

    #[test]
    fn data_of_each_event_in_order() {
        let text = "event: message\nid: 1\ndata: {\"a\":1}\n\n: keep-alive\n\n\
                    event: message\r\nid: 2\r\ndata:{\"b\":2}\r\n\r\n";
        assert_eq!(events(text), vec!["{\"a\":1}", "{\"b\":2}"]);
    }

    #[test]
    fn multi_line_data_is_joined_and_a_last_event_without_blank_line_counts() {
        assert_eq!(
            events("data: one\ndata: two\n\ndata: end"),
            vec!["one\ntwo", "end"]
        );
    }

    #[test]
    fn comments_alone_are_no_events() {
        assert!(events(": ping\n\n: ping\n\n").is_empty());
    }
}
