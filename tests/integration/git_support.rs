//! Repositories of the stack's git server for the tests, and pushes as a git host reports them:
//! a bare repository under `$BERTH_GIT_ROOT` (served over smart HTTP, git:// and SSH), a work
//! tree whose commits are pushed to it with Debian's `git` (the test acts as a developer), and
//! push webhooks signed as GitHub signs them (HMAC-SHA256 by `openssl`, an implementation
//! other than Berth's).

use std::path::{Path, PathBuf};
use std::process::Command;

use berth_tests::{random_suffix, rest::base_url, stack_env};
use serde_json::{Value, json};

/// A repository on the stack's git server with a work tree to commit from; both go when
/// dropped.
pub struct GitRepo {
    pub name: String,
    bare: PathBuf,
    work: PathBuf,
}

fn git(dir: &Path, args: &[&str]) -> String {
    let output = Command::new("git")
        .args(args)
        .current_dir(dir)
        .env("GIT_AUTHOR_NAME", "Ada Tester")
        .env("GIT_AUTHOR_EMAIL", "ada@test.berth.local")
        .env("GIT_COMMITTER_NAME", "Ada Tester")
        .env("GIT_COMMITTER_EMAIL", "ada@test.berth.local")
        .output()
        .expect("git (tests only)");
    assert!(output.status.success(), "git {args:?}: {output:?}");
    String::from_utf8_lossy(&output.stdout).trim().to_string()
}

impl GitRepo {
    /// An empty repository named after `label`, its default branch `main`.
    pub fn new(label: &str) -> Self {
        let name = format!("{label}-{}", random_suffix());
        let bare = PathBuf::from(stack_env("BERTH_GIT_ROOT")).join(format!("{name}.git"));
        let work = std::env::temp_dir().join(format!("berth-git-{name}"));
        std::fs::create_dir_all(&work).expect("create the work tree");
        git(&work, &["init", "-q", "-b", "main"]);
        git(
            Path::new("/"),
            &["init", "-q", "--bare", "-b", "main", bare.to_str().unwrap()],
        );
        git(&work, &["remote", "add", "origin", bare.to_str().unwrap()]);
        Self { name, bare, work }
    }

    pub fn write(&self, relative: &str, content: &str) {
        let path = self.work.join(relative);
        std::fs::create_dir_all(path.parent().expect("a parent")).expect("create folders");
        std::fs::write(path, content).expect("write a file");
    }

    /// Commits everything on the current branch, pushes it, and returns the commit id.
    pub fn commit(&self, message: &str) -> String {
        git(&self.work, &["add", "-A"]);
        git(&self.work, &["commit", "-q", "-m", message]);
        let branch = git(&self.work, &["rev-parse", "--abbrev-ref", "HEAD"]);
        git(
            &self.work,
            &["push", "-q", "origin", &format!("HEAD:refs/heads/{branch}")],
        );
        git(&self.work, &["rev-parse", "HEAD"])
    }

    /// Switches the work tree to a new branch `name` from the current commit.
    pub fn branch(&self, name: &str) {
        git(&self.work, &["checkout", "-q", "-b", name]);
    }

    /// Over git's smart HTTP protocol.
    pub fn http_url(&self) -> String {
        format!("{}/{}.git", stack_env("BERTH_GIT_HTTP_URL"), self.name)
    }

    /// Over the git daemon protocol.
    pub fn daemon_url(&self) -> String {
        format!("{}/{}.git", stack_env("BERTH_GIT_DAEMON_URL"), self.name)
    }

    /// Over SSH, with the stack's deploy key.
    pub fn ssh_url(&self) -> String {
        format!("{}/{}.git", stack_env("BERTH_GIT_SSH_URL"), self.name)
    }
}

impl Drop for GitRepo {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.work);
        let _ = std::fs::remove_dir_all(&self.bare);
    }
}

/// The stack's deploy key (authorized for git commands only), PEM.
pub fn deploy_key() -> String {
    std::fs::read_to_string(stack_env("BERTH_GIT_DEPLOY_KEY")).expect("the stack's deploy key")
}

/// `sha256=<hex>`: the HMAC-SHA256 of `body` under `secret`, as `X-Hub-Signature-256` carries.
pub fn github_signature(secret: &str, body: &[u8]) -> String {
    use std::io::Write;
    let mut child = Command::new("openssl")
        .args(["dgst", "-sha256", "-hmac", secret, "-r"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .expect("openssl (tests only)");
    child.stdin.take().unwrap().write_all(body).unwrap();
    let output = child.wait_with_output().unwrap();
    let text = String::from_utf8_lossy(&output.stdout);
    format!(
        "sha256={}",
        text.split_whitespace().next().unwrap_or_default()
    )
}

/// A GitHub push payload: `git_ref` of `repo` moved to `after`.
pub fn github_push(repo: &GitRepo, git_ref: &str, after: &str) -> Value {
    json!({
        "ref": git_ref,
        "before": "0".repeat(40),
        "after": after,
        "repository": {
            "full_name": format!("stack/{}", repo.name),
            "clone_url": repo.http_url(),
            "ssh_url": repo.ssh_url(),
            "default_branch": "main",
        },
        "head_commit": { "id": after, "message": "pushed", "author": { "name": "Ada Tester" } },
        "pusher": { "name": "ada" },
    })
}

/// Delivers `payload` to `POST /webhooks/github` as GitHub would, signed with `secret`
/// (`event` in `X-GitHub-Event`): (status, body).
pub async fn deliver(payload: &Value, secret: &str, event: &str, delivery: &str) -> (u16, Value) {
    let body = serde_json::to_vec(payload).unwrap();
    let response = reqwest::Client::new()
        .post(format!("{}/webhooks/github", base_url()))
        .header("content-type", "application/json")
        .header("x-github-event", event)
        .header("x-github-delivery", delivery)
        .header("x-hub-signature-256", github_signature(secret, &body))
        .body(body)
        .send()
        .await
        .expect("the shim answers");
    let status = response.status().as_u16();
    (status, response.json().await.unwrap_or(Value::Null))
}

/// GET `path` for `host` through the edge proxy on `port`: (status, body).
pub async fn get(port: u16, host: &str, path: &str) -> (u16, String) {
    let response = reqwest::Client::new()
        .get(format!("http://127.0.0.1:{port}{path}"))
        .header("Host", host)
        .send()
        .await
        .expect("the edge proxy answers");
    let status = response.status().as_u16();
    (status, response.text().await.unwrap_or_default())
}

/// Delivers `payload` to `POST /webhooks/{provider}` with `headers`: (status, body).
pub async fn deliver_as(
    provider: &str,
    headers: &[(&str, String)],
    payload: &Value,
) -> (u16, Value) {
    let mut request = reqwest::Client::new()
        .post(format!("{}/webhooks/{provider}", base_url()))
        .header("content-type", "application/json")
        .body(serde_json::to_vec(payload).unwrap());
    for (name, value) in headers {
        request = request.header(*name, value);
    }
    let response = request.send().await.expect("the shim answers");
    let status = response.status().as_u16();
    (status, response.json().await.unwrap_or(Value::Null))
}
