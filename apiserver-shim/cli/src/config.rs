//! Where `berth` keeps its sign-in: `$XDG_CONFIG_HOME/berth/config.json` (else
//! `~/.config/berth/config.json`), readable by the user only, since it holds a bearer token.

use std::fs;
use std::io::Write;
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use crate::error::{CliError, CliResult};

/// What kind of bearer token is stored; a session can be signed out on the server.
#[derive(Serialize, Deserialize, Debug, Clone, Copy, PartialEq, Eq)]
#[serde(rename_all = "kebab-case")]
pub enum TokenKind {
    Session,
    DeployToken,
}

#[derive(Serialize, Deserialize, Debug, Clone, Default, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct Config {
    /// The REST API's base URL, ending in `/api`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub token: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub token_kind: Option<TokenKind>,
    /// Who signed in, for `berth context`; absent for deploy tokens.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub email: Option<String>,
}

pub fn path() -> CliResult<PathBuf> {
    let base = match std::env::var_os("XDG_CONFIG_HOME").filter(|v| !v.is_empty()) {
        Some(dir) => PathBuf::from(dir),
        None => {
            let home = std::env::var_os("HOME")
                .filter(|v| !v.is_empty())
                .ok_or_else(|| {
                    CliError::failure("neither XDG_CONFIG_HOME nor HOME is set: no config dir")
                })?;
            PathBuf::from(home).join(".config")
        }
    };
    Ok(base.join("berth").join("config.json"))
}

/// The stored config, or an empty one when nothing is stored yet.
pub fn load() -> CliResult<Config> {
    let path = path()?;
    match fs::read_to_string(&path) {
        Ok(text) => serde_json::from_str(&text).map_err(|error| {
            CliError::failure(format!("{} is not valid: {error}", path.display()))
        }),
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => Ok(Config::default()),
        Err(error) => Err(CliError::failure(format!(
            "cannot read {}: {error}",
            path.display()
        ))),
    }
}

/// Writes the config with mode 0600 (its directory 0700), replacing the file atomically.
pub fn save(config: &Config) -> CliResult<()> {
    let path = path()?;
    let dir = path.parent().expect("the config path has a directory");
    fs::create_dir_all(dir)?;
    fs::set_permissions(dir, fs::Permissions::from_mode(0o700))?;
    let temporary = dir.join(".config.json.tmp");
    let mut file = fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .open(&temporary)?;
    // A file left by an older run may have been created with wider permissions.
    file.set_permissions(fs::Permissions::from_mode(0o600))?;
    let text = serde_json::to_string_pretty(config).expect("the config serializes");
    file.write_all(text.as_bytes())?;
    file.sync_all()?;
    fs::rename(&temporary, &path)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_config_round_trips_with_mode_0600() {
        let dir = tempfile::tempdir().unwrap();
        // SAFETY: the only test in this binary that touches the environment.
        unsafe { std::env::set_var("XDG_CONFIG_HOME", dir.path()) };
        assert_eq!(load().unwrap(), Config::default());
        let config = Config {
            url: Some("http://127.0.0.1:7070/api".into()),
            token: Some("secret".into()),
            token_kind: Some(TokenKind::Session),
            email: Some("a@b.c".into()),
        };
        save(&config).unwrap();
        save(&config).unwrap();
        assert_eq!(load().unwrap(), config);
        let file = dir.path().join("berth/config.json");
        let mode = fs::metadata(&file).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600);
        let text = fs::read_to_string(&file).unwrap();
        assert!(text.contains("\"tokenKind\": \"session\""), "{text}");
    }
}
