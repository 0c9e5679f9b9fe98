//! A real terminal for the CLI's interactive tests: a tmux pane on a tmux server of its own
//! (`-L`), so tests running side by side never share one. What a person would see is read
//! back with `capture-pane`, without colours.

use std::process::Command;
use std::time::Duration;

use berth_tests::random_suffix;

pub struct Pane {
    socket: String,
}

impl Pane {
    /// Starts `command` (run by `sh -c`) on a detached pane of `cols` x `rows`, with `env`
    /// on top of this process's environment.
    pub fn start(command: &str, (cols, rows): (u16, u16), env: &[(&str, String)]) -> Self {
        let pane = Self {
            socket: format!("berth-test-{}", random_suffix()),
        };
        let (cols, rows) = (cols.to_string(), rows.to_string());
        let args = ["new-session", "-d", "-x", &cols, "-y", &rows, command];
        // The server takes the environment of the client that starts it.
        let status = pane
            .tmux()
            .args(args)
            .envs(env.iter().map(|(k, v)| (k, v)))
            .env("TERM", "xterm-256color")
            .status()
            .expect("tmux runs (hack/test.sh installs it)");
        assert!(status.success(), "tmux new-session failed");
        pane
    }

    fn tmux(&self) -> Command {
        let mut command = Command::new("tmux");
        // No user configuration: the pane behaves the same on every machine.
        command.args(["-L", &self.socket, "-f", "/dev/null"]);
        command
    }

    /// The pane's text, its scrollback included, lines joined where they wrapped.
    pub fn text(&self) -> String {
        let output = self
            .tmux()
            .args(["capture-pane", "-p", "-J", "-S", "-", "-t", "0"])
            .output()
            .expect("tmux capture-pane");
        String::from_utf8_lossy(&output.stdout).into_owned()
    }

    /// Types `line` and Enter.
    pub fn type_line(&self, line: &str) {
        let status = self
            .tmux()
            .args(["send-keys", "-t", "0", "-l", line])
            .status()
            .expect("tmux send-keys");
        assert!(status.success());
        let status = self
            .tmux()
            .args(["send-keys", "-t", "0", "Enter"])
            .status()
            .expect("tmux send-keys");
        assert!(status.success());
    }

    /// Resizes the window, as a person dragging the terminal's corner does.
    pub fn resize(&self, (cols, rows): (u16, u16)) {
        let (cols, rows) = (cols.to_string(), rows.to_string());
        let status = self
            .tmux()
            .args(["resize-window", "-t", "0", "-x", &cols, "-y", &rows])
            .status()
            .expect("tmux resize-window");
        assert!(status.success());
    }

    /// Waits until the pane shows `what`; returns the pane's text then.
    pub async fn wait_for(&self, what: &str, limit: Duration) -> String {
        let started = std::time::Instant::now();
        loop {
            let text = self.text();
            if text.contains(what) {
                return text;
            }
            assert!(
                started.elapsed() < limit,
                "the pane never showed {what:?}; it shows:\n{text}"
            );
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    }
}

impl Drop for Pane {
    fn drop(&mut self) {
        let _ = self.tmux().arg("kill-server").status();
    }
}
