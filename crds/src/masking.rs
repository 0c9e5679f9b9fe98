//! Secret values out of text: the one rule the controller (build output, errors it records) and
//! the shim (what it streams and shows) both apply.

/// What a secret value reads as wherever Berth shows it (spec: "masked on reads with `****`").
pub const MASK: &str = "****";

/// Values shorter than this are not masked: replacing every `1` or `on` in a log would garble
/// it while hiding almost nothing.
pub const MIN_MASKED_LEN: usize = 4;

/// Replaces known secret values in text with [`MASK`].
#[derive(Default, Debug, Clone)]
pub struct Masker {
    /// Longest first, so a value containing another is masked whole.
    values: Vec<String>,
}

impl Masker {
    pub fn new<S: AsRef<str>>(values: impl IntoIterator<Item = S>) -> Self {
        let mut values: Vec<String> = values
            .into_iter()
            .map(|v| v.as_ref().to_string())
            .filter(|v| v.len() >= MIN_MASKED_LEN)
            .collect();
        values.sort_by_key(|v| std::cmp::Reverse(v.len()));
        values.dedup();
        Self { values }
    }

    /// `text` with every known value replaced by [`MASK`].
    pub fn mask(&self, text: &str) -> String {
        self.mask_counted(text).0
    }

    /// [`Self::mask`], plus how many values it replaced: reads that report `masked` or a
    /// redaction count cannot tell from the text alone (a value may itself read `****`).
    pub fn mask_counted(&self, text: &str) -> (String, usize) {
        let mut count = 0;
        let masked = self.values.iter().fold(text.to_string(), |text, value| {
            let found = text.matches(value.as_str()).count();
            if found == 0 {
                return text;
            }
            count += found;
            text.replace(value.as_str(), MASK)
        });
        (masked, count)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_value_containing_another_is_masked_whole() {
        let masker = Masker::new(["s3cr3t", "s3cr3t-value"]);
        assert_eq!(
            masker.mask("echo s3cr3t-value and s3cr3t"),
            "echo **** and ****"
        );
    }

    #[test]
    fn replacements_are_counted() {
        let masker = Masker::new(["s3cr3t", "s3cr3t-value"]);
        assert_eq!(
            masker.mask_counted("s3cr3t-value, s3cr3t, s3cr3t"),
            ("****, ****, ****".to_string(), 3)
        );
        assert_eq!(
            masker.mask_counted("nothing here"),
            ("nothing here".into(), 0)
        );
        let odd = Masker::new(["****"]);
        assert_eq!(
            odd.mask_counted("a **** value").1,
            1,
            "a value that reads as the mask"
        );
    }

    #[test]
    fn short_values_are_left_alone() {
        let masker = Masker::new(["on", "hunter2"]);
        assert_eq!(masker.mask("debug on, pass hunter2"), "debug on, pass ****");
    }
}
