//! Secret values out of text: the one rule the controller (build output, errors it records) and
//! the shim (what it streams and shows) both apply; and which plain variables read as secret
//! (the shim masks them wherever it shows variables).

/// What a secret value reads as wherever Berth shows it (spec: "masked on reads with `****`").
pub const MASK: &str = "****";

/// Values shorter than this are not masked: replacing every `1` or `on` in a log would garble
/// it while hiding almost nothing.
pub const MIN_MASKED_LEN: usize = 4;

/// Key fragments that mark a plain variable's value as a secret worth hiding anyway.
const SECRET_WORDS: &[&str] = &[
    "SECRET",
    "PASSWORD",
    "PASSWD",
    "PWD",
    "TOKEN",
    "KEY",
    "APIKEY",
    "PRIVATE",
    "CREDENTIAL",
    "CREDENTIALS",
    "AUTH",
    "DSN",
    "SALT",
    "CERT",
];

/// Whether a variable should be masked: a key word such as `PASSWORD` or `API_KEY`, or a URL
/// with a password in it (`postgres://user:pw@host`).
pub fn looks_secret(key: &str, value: &str) -> bool {
    let key_hit = key
        .split(|c: char| !c.is_ascii_alphanumeric())
        .any(|word| SECRET_WORDS.contains(&word.to_ascii_uppercase().as_str()));
    let url_password = value.split_once("://").is_some_and(|(_, rest)| {
        let authority = rest.split(['/', '?', '#']).next().unwrap_or_default();
        authority
            .rsplit_once('@')
            .is_some_and(|(userinfo, _)| userinfo.contains(':'))
    });
    key_hit || url_password
}

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

    #[test]
    fn secret_looking_variables_are_recognised() {
        assert!(looks_secret("DATABASE_PASSWORD", "x"));
        assert!(looks_secret("stripe_api_key", "x"));
        assert!(looks_secret("GITHUB_TOKEN", "x"));
        assert!(looks_secret(
            "DATABASE_URL",
            "postgres://app:hunter2@db:5432/app"
        ));
        assert!(!looks_secret("DATABASE_URL", "postgres://db:5432/app"));
        assert!(!looks_secret("LOG_LEVEL", "debug"));
        assert!(!looks_secret("MONKEY_COUNT", "3"));
    }
}
