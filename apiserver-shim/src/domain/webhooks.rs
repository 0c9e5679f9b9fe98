//! Git-push webhooks' shared names: the Secret and key of a Resource's binding secret, and
//! the trigger kind auto-deploy answers.

/// Key of the binding secret in the Secret `<resource>-webhook`.
pub const WEBHOOK_SECRET_KEY: &str = "secret";

/// The Secret holding a resource's webhook secret.
pub fn webhook_secret_name(resource: &str) -> String {
    format!("{resource}-webhook")
}

/// The trigger kind Berth's auto-deploy answers.
pub const GIT_PUSH: &str = "git-push";
