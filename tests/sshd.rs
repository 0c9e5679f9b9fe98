//! A private sshd on a free loopback port, for tests that stop, restart or re-key a server
//! without disturbing the stack's shared sshd (other tests run against it in parallel).

use std::fs::File;
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::random_suffix;

/// An sshd the test owns: its own host key, `authorized_keys` and log (LogLevel VERBOSE, so
/// every connection and accepted key shows up). Sessions get the sshd's directory as HOME, so
/// root's shell startup files (which may be slow, or leave locks when a session is killed) do
/// not run.
pub struct TestSshd {
    pub port: u16,
    dir: PathBuf,
    child: Option<Child>,
    max_sessions: u32,
}

impl TestSshd {
    /// Starts an sshd accepting `authorized_keys` (public key lines) for root.
    pub fn start(authorized_keys: &[&str]) -> Self {
        Self::start_with_max_sessions(authorized_keys, 64)
    }

    /// Like [`Self::start`], with sshd's `MaxSessions` (session channels per connection) set.
    pub fn start_with_max_sessions(authorized_keys: &[&str], max_sessions: u32) -> Self {
        let dir = std::env::temp_dir().join(format!("berth-test-sshd-{}", random_suffix()));
        std::fs::create_dir_all(&dir).expect("create sshd dir");
        let port = free_port();
        let sshd = Self {
            port,
            dir,
            child: None,
            max_sessions,
        };
        sshd.new_host_key();
        sshd.set_authorized_keys(authorized_keys);
        std::fs::write(sshd.dir.join("sshd_config"), sshd.config()).expect("write sshd_config");
        let mut sshd = sshd;
        sshd.restart();
        sshd
    }

    fn config(&self) -> String {
        let dir = self.dir.display();
        format!(
            "Port {}\nListenAddress 127.0.0.1\nHostKey {dir}/host_key\n\
             AuthorizedKeysFile {dir}/authorized_keys\nPidFile none\nStrictModes no\nUsePAM no\n\
             PermitRootLogin prohibit-password\nPasswordAuthentication no\n\
             KbdInteractiveAuthentication no\nAllowStreamLocalForwarding yes\nMaxSessions {}\n\
             SetEnv HOME={dir}\nLogLevel VERBOSE\n",
            self.port, self.max_sessions
        )
    }

    /// Replaces the host key; takes effect at the next (re)start.
    pub fn new_host_key(&self) {
        let key = self.dir.join("host_key");
        let _ = std::fs::remove_file(&key);
        let _ = std::fs::remove_file(self.dir.join("host_key.pub"));
        run(
            "ssh-keygen",
            &["-q", "-t", "ed25519", "-N", "", "-f", path(&key)],
        );
    }

    /// `SHA256:…` of the current host key, as `ssh-keygen -l` prints it.
    pub fn host_key_fingerprint(&self) -> String {
        fingerprint_of(&self.dir.join("host_key.pub"))
    }

    /// Replaces `authorized_keys`; sshd reads it at each login.
    pub fn set_authorized_keys(&self, keys: &[&str]) {
        std::fs::write(self.dir.join("authorized_keys"), keys.join("\n") + "\n")
            .expect("write authorized_keys");
    }

    /// Everything sshd logged so far.
    pub fn log(&self) -> String {
        std::fs::read_to_string(self.dir.join("sshd.log")).unwrap_or_default()
    }

    /// Stops sshd as a host going away would: the listener and every open connection.
    pub fn stop(&mut self) {
        if let Some(mut child) = self.child.take() {
            // Paused first: a listener still accepting while its sessions die would fork a
            // session for a reconnecting client that outlives it (and the server stays up).
            signal(child.id(), "STOP");
            for pid in descendants(child.id()) {
                signal(pid, "KILL");
            }
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// (Re)starts sshd with the current host key and waits until it accepts connections.
    pub fn restart(&mut self) {
        self.stop();
        let log = File::options()
            .create(true)
            .append(true)
            .open(self.dir.join("sshd.log"))
            .expect("open sshd log");
        let child = Command::new("/usr/sbin/sshd")
            .args(["-D", "-e", "-f", path(&self.dir.join("sshd_config"))])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .expect("start /usr/sbin/sshd");
        self.child = Some(child);
        let deadline = Instant::now() + Duration::from_secs(10);
        while std::net::TcpStream::connect(("127.0.0.1", self.port)).is_err() {
            assert!(
                Instant::now() < deadline,
                "test sshd did not start: {}",
                self.log()
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// Closes every open connection but keeps listening (the client must reconnect).
    pub fn drop_connections(&self) {
        if let Some(child) = &self.child {
            for pid in descendants(child.id()) {
                signal(pid, "KILL");
            }
        }
    }
}

impl Drop for TestSshd {
    fn drop(&mut self) {
        self.stop();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// `SHA256:…` of a public key file.
pub fn fingerprint_of(public_key: &Path) -> String {
    let output = run("ssh-keygen", &["-lf", path(public_key)]);
    output
        .split_whitespace()
        .nth(1)
        .expect("ssh-keygen -l prints a fingerprint")
        .to_string()
}

/// A new ed25519 key pair in `dir`: (private key text, public key line, fingerprint).
pub fn new_client_key(dir: &Path, name: &str) -> (String, String, String) {
    std::fs::create_dir_all(dir).expect("create key dir");
    let key = dir.join(name);
    run(
        "ssh-keygen",
        &[
            "-q",
            "-t",
            "ed25519",
            "-N",
            "",
            "-C",
            name,
            "-f",
            path(&key),
        ],
    );
    let public = key.with_extension("pub");
    (
        std::fs::read_to_string(&key).expect("private key"),
        std::fs::read_to_string(&public)
            .expect("public key")
            .trim()
            .to_string(),
        fingerprint_of(&public),
    )
}

fn path(p: &Path) -> &str {
    p.to_str().expect("UTF-8 path")
}

fn run(program: &str, args: &[&str]) -> String {
    let output = Command::new(program)
        .args(args)
        .output()
        .unwrap_or_else(|e| panic!("{program}: {e}"));
    assert!(
        output.status.success(),
        "{program} {args:?}: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8_lossy(&output.stdout).into_owned()
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a free loopback port")
        .port()
}

/// Every live descendant of `pid` (sshd forks a process per connection, and another below it).
fn descendants(pid: u32) -> Vec<u32> {
    let mut parents: Vec<(u32, u32)> = Vec::new();
    for entry in std::fs::read_dir("/proc").into_iter().flatten().flatten() {
        let Ok(child) = entry.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(entry.path().join("stat")) else {
            continue;
        };
        // Fields after the parenthesised command name: state, ppid, ...
        let Some(rest) = stat.rsplit_once(") ").map(|(_, rest)| rest) else {
            continue;
        };
        if let Some(ppid) = rest.split_whitespace().nth(1).and_then(|p| p.parse().ok()) {
            parents.push((child, ppid));
        }
    }
    let mut found = vec![pid];
    let mut index = 0;
    while index < found.len() {
        let parent = found[index];
        found.extend(
            parents
                .iter()
                .filter(|(_, p)| *p == parent)
                .map(|(c, _)| *c),
        );
        index += 1;
    }
    found.remove(0);
    found
}

fn signal(pid: u32, signal: &str) {
    // A process may exit by itself meanwhile; that is fine.
    let _ = Command::new("kill")
        .args([&format!("-{signal}"), &pid.to_string()])
        .stderr(Stdio::null())
        .status();
}
