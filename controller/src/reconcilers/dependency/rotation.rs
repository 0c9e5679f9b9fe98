//! Credential rotation of a managed PostgreSQL, asked for by a new `spec.rotateCredentials`
//! value, without a failed request of a bound app:
//! 1. a new login role (`berth_r1`, `berth_r2`, …) is issued beside the current one: a member
//!    of the owner role `berth` whose sessions act as `berth`, so tables stay owned by one
//!    role; the connection Secret then holds its password and URL;
//! 2. each bound app that auto-deploys redeploys on the changed configuration (zero downtime);
//! 3. once every bound app's latest deployment succeeded with the current configuration and
//!    the old containers had [`REVOKE_GRACE`] to retire, the previous login is revoked (`berth`,
//!    the superuser the container made, keeps only its password-less local login).
//!
//! [`next`] decides from the object and what the caches say about the bound apps; [`advance`]
//! acts on the database over the server's Docker API and records the result.

use std::time::Duration;

use berth_crds::dependency_resource::{
    DependencyCredentials, DependencyKind, DependencyResource, POSTGRES_DATABASE, POSTGRES_USER,
    URL_KEY,
};
use berth_crds::deployment::{Deployment, DeploymentState};
use berth_crds::resource::Resource;
use k8s_openapi::jiff::Timestamp;
use kube::runtime::events::EventType;
use kube::{Resource as _, ResourceExt};

use super::plan::{Names, generate_password};
use super::{credentials, server};
use crate::cache::Caches;
use crate::context::Context;
use crate::error::{Error, Result};
use crate::reconcilers::deployment::{config, connect};
use crate::reconcilers::event_reason;

/// How long an app's new deployment serves before the previous login is revoked: the old
/// container is retired right after the new one succeeds, within `RETIRE_GRACE` (5 s), and
/// what it still serves meanwhile logs in the old way; the rest is headroom for a busy server.
const REVOKE_GRACE: Duration = Duration::from_secs(20);

/// What a rotation does next.
#[derive(Debug, PartialEq, Eq)]
pub enum Next {
    /// No rotation asked for or in progress.
    Idle,
    /// Issue the login `user` for the `spec.rotateCredentials` value `rotation`.
    Issue { user: String, rotation: String },
    /// The previous login stays: these bound apps do not serve with the current one yet.
    Wait { waiting_for: Vec<String> },
    /// Every bound app serves with the current login: revoke `user`.
    Revoke { user: String },
}

/// The credentials as recorded, or the ones a new dependency starts with.
pub fn recorded(dependency: &DependencyResource) -> DependencyCredentials {
    let recorded = dependency
        .status
        .as_ref()
        .and_then(|s| s.credentials.clone());
    recorded.unwrap_or_else(|| DependencyCredentials {
        user: POSTGRES_USER.to_string(),
        ..Default::default()
    })
}

/// Whether a rotation asks for work: a new value, or a previous login still to revoke.
pub fn pending(dependency: &DependencyResource) -> bool {
    let credentials = recorded(dependency);
    let asked = dependency.spec.rotate_credentials.as_ref();
    credentials.revoking.is_some() || (asked.is_some() && asked != credentials.rotation.as_ref())
}

/// The next step, given the bound apps still serving with an older login.
pub fn next(dependency: &DependencyResource, not_current: Vec<String>) -> Next {
    let credentials = recorded(dependency);
    if let Some(previous) = credentials.revoking {
        return if not_current.is_empty() {
            Next::Revoke { user: previous }
        } else {
            Next::Wait {
                waiting_for: not_current,
            }
        };
    }
    match &dependency.spec.rotate_credentials {
        Some(asked) if credentials.rotation.as_ref() != Some(asked) => Next::Issue {
            user: successor(&credentials.user),
            rotation: asked.clone(),
        },
        _ => Next::Idle,
    }
}

/// `berth` → `berth_r1`, `berth_r1` → `berth_r2`.
fn successor(user: &str) -> String {
    let number = user
        .strip_prefix(&format!("{POSTGRES_USER}_r"))
        .and_then(|n| n.parse::<u64>().ok())
        .unwrap_or(0);
    format!("{POSTGRES_USER}_r{}", number + 1)
}

/// The SQL that makes `user` a login with the password in the psql variable `pw`.
fn issue_sql(user: &str) -> String {
    format!(
        "\\getenv pw {PASSWORD_VARIABLE}\n\
         SELECT 'CREATE ROLE {user}' WHERE NOT EXISTS \
         (SELECT FROM pg_roles WHERE rolname = '{user}') \\gexec\n\
         ALTER ROLE {user} LOGIN PASSWORD :'pw';\n\
         GRANT {POSTGRES_USER} TO {user};\n\
         ALTER ROLE {user} SET role = '{POSTGRES_USER}';\n"
    )
}

/// The SQL that ends password logins of `user`; the superuser keeps its local login.
fn revoke_sql(user: &str) -> String {
    if user == POSTGRES_USER {
        format!("ALTER ROLE {user} PASSWORD NULL;\n")
    } else {
        format!("ALTER ROLE {user} NOLOGIN PASSWORD NULL;\n")
    }
}

/// The environment variable the new password reaches psql in (never a command line).
const PASSWORD_VARIABLE: &str = "BERTH_LOGIN_PASSWORD";

/// One rotation step, if one is due; answers the credentials to record.
pub async fn advance(
    dependency: &DependencyResource,
    context: &Context,
    names: &Names,
) -> Result<DependencyCredentials> {
    let mut credentials = recorded(dependency);
    if dependency.spec.kind != DependencyKind::Postgres {
        return Ok(credentials);
    }
    let namespace = dependency.namespace().unwrap_or_default();
    let not_current = not_current(dependency, context, names, &credentials.user);
    match next(dependency, not_current) {
        Next::Idle => {}
        Next::Wait { waiting_for } => credentials.waiting_for = waiting_for,
        Next::Issue { user, rotation } => {
            // A try whose status was not seen yet issued this login already: keep its password.
            let issued = credentials::issued_password(dependency, context, names, &user).await?;
            let password = issued.unwrap_or_else(generate_password);
            let (_, target) = connect(context, &namespace, &dependency.spec.server_id).await?;
            let env = [(PASSWORD_VARIABLE, password.as_str())];
            run(&target, names, &issue_sql(&user), &env).await?;
            credentials::replace_login(dependency, context, names, &user, &password).await?;
            credentials = DependencyCredentials {
                revoking: Some(credentials.user),
                user,
                rotation: Some(rotation),
                issued_at: Some(Timestamp::now().to_string()),
                waiting_for: bound_apps(context, dependency),
            };
        }
        Next::Revoke { user } => {
            let (_, target) = connect(context, &namespace, &dependency.spec.server_id).await?;
            run(&target, names, &revoke_sql(&user), &[]).await?;
            let note = format!(
                "credentials rotated: apps log in as {}; login {user} revoked",
                credentials.user
            );
            context
                .publish_event(
                    &dependency.object_ref(&()),
                    EventType::Normal,
                    event_reason::CREDENTIALS_ROTATED,
                    note,
                )
                .await;
            credentials.revoking = None;
            credentials.waiting_for = Vec::new();
        }
    }
    Ok(credentials)
}

async fn run(
    target: &crate::reconcilers::deployment::server_target::Target,
    names: &Names,
    sql: &str,
    env: &[(&str, &str)],
) -> Result<()> {
    let script = format!(
        "psql -v ON_ERROR_STOP=1 -qAt -U {POSTGRES_USER} -d {POSTGRES_DATABASE} <<'SQL'\n{sql}SQL\n"
    );
    match server::run_script(target, names, &script, env).await? {
        None => Ok(()),
        Some(why) => Err(Error::InvalidSpec(format!(
            "rotating the credentials: {why}"
        ))),
    }
}

/// Resources of the dependency's namespace bound to it.
fn bound(context: &Context, dependency: &DependencyResource) -> Vec<std::sync::Arc<Resource>> {
    let namespace = dependency.namespace().unwrap_or_default();
    let name = dependency.name_any();
    context
        .caches
        .resources
        .state()
        .into_iter()
        .filter(|r| r.namespace().as_deref() == Some(namespace.as_str()))
        .filter(|r| {
            r.spec
                .dependency_bindings
                .iter()
                .any(|b| b.dependency_resource_id == name)
        })
        .collect()
}

fn bound_apps(context: &Context, dependency: &DependencyResource) -> Vec<String> {
    let mut names: Vec<String> = bound(context, dependency)
        .iter()
        .map(|r| r.name_any())
        .collect();
    names.sort();
    names
}

/// Bound resources whose latest deployment does not serve with `user`'s login yet (every one
/// while the cached Secret still holds an older login).
fn not_current(
    dependency: &DependencyResource,
    context: &Context,
    names: &Names,
    user: &str,
) -> Vec<String> {
    let namespace = dependency.namespace().unwrap_or_default();
    let secret = Caches::get(&context.caches.secrets, &namespace, &names.secret);
    let url = secret
        .as_ref()
        .and_then(|s| s.data.as_ref()?.get(URL_KEY).cloned());
    let cached_login_is_current = url
        .and_then(|url| String::from_utf8(url.0).ok())
        .is_some_and(|url| url.starts_with(&format!("postgres://{user}:")));
    let mut waiting: Vec<String> = bound(context, dependency)
        .iter()
        .filter(|resource| {
            !cached_login_is_current || !serves_current(context, &namespace, resource)
        })
        .map(|resource| resource.name_any())
        .collect();
    waiting.sort();
    waiting
}

/// Whether `resource` serves its current configuration (with the Secret as cached) since at
/// least [`REVOKE_GRACE`], or serves nothing at all.
fn serves_current(context: &Context, namespace: &str, resource: &Resource) -> bool {
    let Some(latest) = resource
        .status
        .as_ref()
        .and_then(|s| s.last_deployment_id.as_deref())
    else {
        return true;
    };
    let Some(deployment) = Caches::get(&context.caches.deployments, namespace, latest) else {
        return false;
    };
    let entries = config::lasting_entries(context, namespace, resource);
    let current = berth_crds::config::fingerprint(&entries);
    deployed_with(&deployment, &current, Timestamp::now())
}

/// Whether `deployment` succeeded with the configuration `fingerprint` at least
/// [`REVOKE_GRACE`] before `now`.
fn deployed_with(deployment: &Deployment, fingerprint: &str, now: Timestamp) -> bool {
    let Some(status) = deployment.status.as_ref() else {
        return false;
    };
    let settled = status
        .finished_at
        .as_ref()
        .is_some_and(|finished| finished.0 + REVOKE_GRACE <= now);
    status.status == Some(DeploymentState::Succeeded)
        && status.config_fingerprint.as_deref() == Some(fingerprint)
        && settled
}

#[cfg(test)]
mod tests {
    use super::*;
    use berth_crds::dependency_resource::{DependencyResourceSpec, DependencyResourceStatus};
    use serde_json::json;

    fn dependency(
        asked: Option<&str>,
        credentials: Option<DependencyCredentials>,
    ) -> DependencyResource {
        let spec: DependencyResourceSpec = serde_json::from_value(json!({
            "kind": "postgres", "projectId": "p", "environmentId": "e", "serverId": "s",
            "name": "db", "rotateCredentials": asked,
        }))
        .unwrap();
        let mut dependency = DependencyResource::new("db", spec);
        dependency.status = Some(DependencyResourceStatus {
            credentials,
            ..Default::default()
        });
        dependency
    }

    fn credentials(
        user: &str,
        rotation: Option<&str>,
        revoking: Option<&str>,
    ) -> DependencyCredentials {
        DependencyCredentials {
            user: user.into(),
            rotation: rotation.map(str::to_string),
            revoking: revoking.map(str::to_string),
            ..Default::default()
        }
    }

    #[test]
    fn a_new_value_issues_the_next_login_beside_the_current_one() {
        assert_eq!(next(&dependency(None, None), vec![]), Next::Idle);
        assert_eq!(
            next(&dependency(Some("1"), None), vec![]),
            Next::Issue {
                user: "berth_r1".into(),
                rotation: "1".into()
            }
        );
        let done = credentials("berth_r1", Some("1"), None);
        assert_eq!(
            next(&dependency(Some("1"), Some(done.clone())), vec![]),
            Next::Idle
        );
        assert_eq!(
            next(&dependency(Some("2"), Some(done)), vec![]),
            Next::Issue {
                user: "berth_r2".into(),
                rotation: "2".into()
            }
        );
    }

    #[test]
    fn the_previous_login_is_revoked_only_when_every_bound_app_serves_the_current_one() {
        let rotating = dependency(
            Some("1"),
            Some(credentials("berth_r1", Some("1"), Some("berth"))),
        );
        assert!(pending(&rotating));
        assert_eq!(
            next(&rotating, vec!["web".into()]),
            Next::Wait {
                waiting_for: vec!["web".into()]
            }
        );
        assert_eq!(
            next(&rotating, vec![]),
            Next::Revoke {
                user: "berth".into()
            }
        );
        // A value changed again during a rotation waits for the first to finish.
        let again = dependency(
            Some("2"),
            Some(credentials("berth_r1", Some("1"), Some("berth"))),
        );
        assert_eq!(
            next(&again, vec![]),
            Next::Revoke {
                user: "berth".into()
            }
        );
    }

    #[test]
    fn the_superuser_keeps_its_local_login_other_logins_end() {
        assert_eq!(revoke_sql("berth"), "ALTER ROLE berth PASSWORD NULL;\n");
        assert_eq!(
            revoke_sql("berth_r1"),
            "ALTER ROLE berth_r1 NOLOGIN PASSWORD NULL;\n"
        );
        let issue = issue_sql("berth_r2");
        assert!(issue.contains("LOGIN PASSWORD :'pw'"), "{issue}");
        assert!(issue.contains("GRANT berth TO berth_r2"), "{issue}");
    }

    #[test]
    fn a_deployment_serves_the_current_login_once_it_succeeded_with_it_and_settled() {
        let now = Timestamp::now();
        let deployment = |state, fingerprint: &str, finished_ago: u64| {
            let mut d: Deployment = serde_json::from_value(json!({
                "apiVersion": "berth.dev/v1alpha1", "kind": "Deployment",
                "metadata": {"name": "dep-web-2"},
                "spec": {"resourceId": "web", "projectId": "p", "environmentId": "e", "serverId": "s"},
            }))
            .unwrap();
            let finished = now - Duration::from_secs(finished_ago);
            d.status = serde_json::from_value(json!({
                "status": state, "configFingerprint": fingerprint,
                "finishedAt": finished.to_string(),
            }))
            .unwrap();
            d
        };
        assert!(deployed_with(
            &deployment("succeeded", "new", 30),
            "new",
            now
        ));
        assert!(!deployed_with(
            &deployment("succeeded", "old", 30),
            "new",
            now
        ));
        assert!(!deployed_with(&deployment("failed", "new", 30), "new", now));
        assert!(
            !deployed_with(&deployment("succeeded", "new", 2), "new", now),
            "draining"
        );
    }
}
