//! Docker's log output as Runtime log lines (spec §2.2): the timestamp Docker puts before each
//! line parsed off, secret values masked, and a sequence and cursor given. Pure: no I/O.

use berth_crds::masking::Masker;
use k8s_openapi::jiff::Timestamp;

pub use berth_api::runtime_logs::{LogStream, RuntimeLogLine};

/// `runtimeKind` of every line: logs are read from Docker containers.
pub const RUNTIME_KIND: &str = "docker-container";
/// Length of a short container id, as `docker ps` prints it.
const SHORT_ID: usize = 12;

/// What every line of one container shares.
#[derive(Clone, Debug)]
pub struct LineContext {
    pub resource_id: String,
    pub deployment_id: Option<String>,
    pub service_name: Option<String>,
    pub container_id: String,
}

/// Turns chunks of Docker output into lines, numbering them across chunks.
pub struct LineBuilder {
    context: LineContext,
    masker: Masker,
    /// Lines at or before this instant are dropped (Docker's `since` has whole seconds only).
    after: Option<Timestamp>,
    sequence: u64,
    /// The last timestamp seen, for a chunk's continuation lines that carry none.
    last: Option<Timestamp>,
}

impl LineBuilder {
    pub fn new(context: LineContext, masker: Masker, after: Option<Timestamp>) -> Self {
        Self {
            context,
            masker,
            after,
            sequence: 0,
            last: None,
        }
    }

    /// The lines of one chunk of output (Docker sends a line per chunk with timestamps on; a
    /// TTY's raw output may hold several), oldest first.
    pub fn lines(&mut self, stream: Option<LogStream>, chunk: &[u8]) -> Vec<RuntimeLogLine> {
        let text = String::from_utf8_lossy(chunk);
        let text = text.strip_suffix('\n').unwrap_or(&text);
        let mut lines = Vec::new();
        for raw in text.split('\n') {
            let raw = raw.strip_suffix('\r').unwrap_or(raw);
            let (timestamp, message) = match split_timestamp(raw) {
                Some((timestamp, message)) => {
                    self.last = Some(timestamp);
                    (Some(timestamp), message)
                }
                None => (self.last, raw),
            };
            if let (Some(after), Some(at)) = (self.after, timestamp)
                && at <= after
            {
                continue;
            }
            lines.push(self.line(stream, timestamp, message));
        }
        lines
    }

    fn line(
        &mut self,
        stream: Option<LogStream>,
        timestamp: Option<Timestamp>,
        message: &str,
    ) -> RuntimeLogLine {
        self.sequence += 1;
        let (message, replaced) = self.masker.mask_counted(message);
        let timestamp = timestamp.map(|t| t.to_string());
        RuntimeLogLine {
            resource_id: self.context.resource_id.clone(),
            deployment_id: self.context.deployment_id.clone(),
            service_name: self.context.service_name.clone(),
            runtime_kind: RUNTIME_KIND.into(),
            runtime_instance_id: short_id(&self.context.container_id).to_string(),
            stream,
            cursor: timestamp.clone(),
            timestamp,
            sequence: self.sequence,
            message,
            masked: replaced > 0,
        }
    }
}

/// `2024-05-01T12:00:00.123456789Z message` → (timestamp, `message`); `None` when the line
/// does not start with an RFC 3339 timestamp and a space.
pub fn split_timestamp(line: &str) -> Option<(Timestamp, &str)> {
    let (first, rest) = line.split_once(' ').unwrap_or((line, ""));
    let timestamp = first.parse::<Timestamp>().ok()?;
    // Docker always writes a separating space; a bare timestamp is an empty line.
    Some((timestamp, rest))
}

/// The first 12 characters of a container id.
pub fn short_id(id: &str) -> &str {
    id.get(..SHORT_ID).unwrap_or(id)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn builder(after: Option<&str>) -> LineBuilder {
        LineBuilder::new(
            LineContext {
                resource_id: "res-web".into(),
                deployment_id: Some("dep-web-1".into()),
                service_name: None,
                container_id: "0123456789abcdef0123".into(),
            },
            Masker::new(["hunter2-secret"]),
            after.map(|a| a.parse().unwrap()),
        )
    }

    #[test]
    fn docker_timestamps_are_parsed_off_the_line() {
        let (at, message) = split_timestamp("2024-05-01T12:00:00.123456789Z hello world").unwrap();
        assert_eq!(at.to_string(), "2024-05-01T12:00:00.123456789Z");
        assert_eq!(message, "hello world");
        let (_, empty) = split_timestamp("2024-05-01T12:00:00Z ").unwrap();
        assert_eq!(empty, "");
        assert!(split_timestamp("hello 2024-05-01T12:00:00Z").is_none());
        assert!(split_timestamp("").is_none());
    }

    #[test]
    fn lines_are_numbered_across_chunks_with_a_cursor() {
        let mut builder = builder(None);
        let first = builder.lines(
            Some(LogStream::Stdout),
            b"2024-05-01T12:00:00.5Z starting\n",
        );
        let second = builder.lines(
            Some(LogStream::Stderr),
            b"2024-05-01T12:00:01.000000001Z oops\r\n",
        );
        assert_eq!(first.len(), 1);
        assert_eq!(first[0].sequence, 1);
        assert_eq!(first[0].message, "starting");
        assert_eq!(
            first[0].timestamp.as_deref(),
            Some("2024-05-01T12:00:00.5Z")
        );
        assert_eq!(first[0].cursor, first[0].timestamp);
        assert_eq!(second[0].sequence, 2);
        assert_eq!(second[0].message, "oops");
        assert_eq!(second[0].stream, Some(LogStream::Stderr));
        assert_eq!(second[0].runtime_instance_id, "0123456789ab");
        assert_eq!(second[0].runtime_kind, "docker-container");
        assert_eq!(second[0].deployment_id.as_deref(), Some("dep-web-1"));
    }

    #[test]
    fn secret_values_are_masked_and_flagged_per_line() {
        let mut builder = builder(None);
        let lines = builder.lines(
            Some(LogStream::Stdout),
            b"2024-05-01T12:00:00Z token hunter2-secret\n",
        );
        assert_eq!(lines[0].message, "token ****");
        assert!(lines[0].masked);
        let plain = builder.lines(
            Some(LogStream::Stdout),
            b"2024-05-01T12:00:00Z token ****\n",
        );
        assert_eq!(plain[0].message, "token ****");
        assert!(!plain[0].masked, "nothing was replaced");
        let json = serde_json::to_value(&lines[0]).unwrap();
        assert_eq!(json["masked"], true);
        assert_eq!(json["runtimeInstanceId"], "0123456789ab");
        assert_eq!(json["stream"], "stdout");
        assert!(json.get("serviceName").is_none());
    }

    #[test]
    fn lines_up_to_since_are_dropped_so_a_cursor_reads_on() {
        let mut builder = builder(Some("2024-05-01T12:00:00.5Z"));
        let chunk = b"2024-05-01T12:00:00.4Z old\n";
        assert!(builder.lines(None, chunk).is_empty());
        assert!(
            builder
                .lines(None, b"2024-05-01T12:00:00.5Z the cursor's own\n")
                .is_empty()
        );
        let lines = builder.lines(None, b"2024-05-01T12:00:00.6Z new\n");
        assert_eq!(lines[0].message, "new");
        assert_eq!(lines[0].sequence, 1, "numbering counts returned lines only");
    }

    #[test]
    fn raw_output_splits_into_lines_that_inherit_the_timestamp() {
        let mut builder = builder(None);
        let lines = builder.lines(None, b"2024-05-01T12:00:00Z one\ntwo\n\nthree");
        let messages: Vec<&str> = lines.iter().map(|l| l.message.as_str()).collect();
        assert_eq!(messages, ["one", "two", "", "three"]);
        assert!(
            lines
                .iter()
                .all(|l| l.timestamp.as_deref() == Some("2024-05-01T12:00:00Z"))
        );
        assert_eq!(lines.last().unwrap().sequence, 4);
        assert!(lines.iter().all(|l| l.stream.is_none()));
    }
}
