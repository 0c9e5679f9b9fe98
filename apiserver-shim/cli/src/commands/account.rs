//! Sign-in, sign-out, the current organization, and organizations.

use std::io::BufRead;

use berth_api::account::{
    AccountProfile, DeleteAccount, DeletedAccount, RevokeSession, RevokedSession, SessionList,
    UpdateProfile,
};
use berth_api::bootstrap::{LoginRequest, LoginResult, LogoutRequest, LogoutResult};
use berth_api::common::{Confirmation, CountResponse, IdResponse};
use berth_api::organizations::{
    CreateOrganization, DeleteOrganization, DeletedOrganization, OrganizationContext,
    OrganizationProfile, SwitchOrganization, UpdateOrganization,
};
use serde_json::{Value, json};

use super::{Answer, Ctx, created, show};
use crate::cli::{Account, Login, Organizations};
use crate::config::{self, Config, TokenKind};
use crate::error::{CliError, CliResult};
use crate::output::{Column, col};
use crate::rows::OrganizationRow;

pub fn login(ctx: &Ctx, args: Login) -> CliResult<()> {
    let url = ctx.url()?;
    let config = match (args.token, args.email) {
        (Some(token), _) => deploy_token_config(url, token)?,
        (None, Some(email)) => {
            let password = password(&email, args.password_stdin)?;
            session_config(ctx, url, email, &password)?
        }
        (None, None) => {
            return Err(CliError::Usage(
                "sign in with --email (password prompted) or --token".into(),
            ));
        }
    };
    config::save(&config)?;
    let who = config.email.as_deref().unwrap_or("a deploy token");
    let path = config::path()?;
    ctx.out.done(
        &json!({"url": config.url, "email": config.email, "tokenKind": config.token_kind}),
        &format!(
            "Signed in to {} as {who} (saved in {})",
            config.url.as_deref().unwrap_or_default(),
            path.display()
        ),
    );
    Ok(())
}

fn password(email: &str, from_stdin: bool) -> CliResult<String> {
    let password = if from_stdin {
        let mut line = String::new();
        std::io::stdin().lock().read_line(&mut line)?;
        line.trim_end_matches(['\r', '\n']).to_string()
    } else {
        rpassword::prompt_password(format!("Password for {email}: ")).map_err(|error| {
            CliError::Usage(format!(
                "cannot prompt for a password ({error}): use --password-stdin"
            ))
        })?
    };
    if password.is_empty() {
        return Err(CliError::Usage("the password is empty".into()));
    }
    Ok(password)
}

fn session_config(ctx: &Ctx, url: String, email: String, password: &str) -> CliResult<Config> {
    let body = LoginRequest {
        email: email.clone(),
        password: password.to_string(),
        client_kind: Some("cli".into()),
        display_name: Some("berth CLI".into()),
    };
    let answer = ctx
        .anonymous()?
        .post::<LoginResult>("/auth/login", &body)
        .map_err(|error| match error {
            CliError::Api {
                status: 401,
                code,
                message,
            } => CliError::Api {
                status: 401,
                code,
                message: format!("{message} (wrong email or password?)"),
            },
            other => other,
        })?;
    Ok(Config {
        url: Some(url),
        token: Some(answer.value.token),
        token_kind: Some(TokenKind::Session),
        email: Some(email),
    })
}

/// Checks the token with a cheap read before storing it.
fn deploy_token_config(url: String, token: String) -> CliResult<Config> {
    let api = crate::client::Api::new(&url, Some(token.clone()))?;
    api.get::<CountResponse>("/projects/count", &[])?;
    Ok(Config {
        url: Some(url),
        token: Some(token),
        token_kind: Some(TokenKind::DeployToken),
        email: None,
    })
}

pub fn logout(ctx: &Ctx) -> CliResult<()> {
    let mut config = ctx.config.clone();
    if config.token.is_none() {
        ctx.out.done(&Value::Null, "Not signed in");
        return Ok(());
    }
    let mut answer = Value::Null;
    if config.token_kind == Some(TokenKind::Session) {
        let api = crate::client::Api::new(&ctx.url()?, config.token.clone())?;
        match api.post::<LogoutResult>("/auth/logout", &LogoutRequest {}) {
            Ok(revoked) => answer = revoked.raw,
            // A session already gone is signed out all the same.
            Err(CliError::Api { status: 401, .. }) => {}
            Err(other) => return Err(other),
        }
    }
    config.token = None;
    config.token_kind = None;
    config::save(&config)?;
    ctx.out.done(&answer, "Signed out");
    Ok(())
}

/// `berth context [ORG]`: shows the organizations, or switches to ORG (id or slug).
pub fn context(ctx: &Ctx, organization: Option<String>) -> CliResult<()> {
    let api = ctx.api()?;
    let answer = current_context(ctx)?;
    let Some(name) = organization else {
        return print_organizations(ctx, &answer);
    };
    let id = organization_id(&answer.value, &name)?;
    let switched = api.post::<OrganizationContext>(
        "/organizations/current-context/switch",
        &SwitchOrganization {
            organization_id: id.clone(),
        },
    )?;
    let slug = switched
        .value
        .current_organization
        .map(|organization| organization.slug)
        .unwrap_or_default();
    ctx.out.done(
        &switched.raw,
        &format!("Switched to organization {slug} ({id})"),
    );
    Ok(())
}

fn current_context(ctx: &Ctx) -> CliResult<Answer<OrganizationContext>> {
    ctx.api()?.get("/organizations/current-context", &[])
}

/// The id of the organization whose id or slug is `name`, among the caller's.
fn organization_id(context: &OrganizationContext, name: &str) -> CliResult<String> {
    context
        .organizations
        .iter()
        .find(|o| o.organization_id == name || o.slug == name)
        .map(|o| o.organization_id.clone())
        .ok_or_else(|| {
            CliError::NotFound(format!("you are not a member of an organization {name}"))
        })
}

/// The caller's organizations, the current one marked `*`.
fn print_organizations(ctx: &Ctx, answer: &Answer<OrganizationContext>) -> CliResult<()> {
    let context = &answer.value;
    let current = context
        .current_organization
        .as_ref()
        .map(|o| &o.organization_id);
    let rows: Vec<OrganizationRow> = context
        .organizations
        .iter()
        .map(|organization| OrganizationRow {
            organization,
            current: current == Some(&organization.organization_id),
        })
        .collect();
    ctx.out.rows(&answer.raw, &rows);
    Ok(())
}

pub fn organizations(ctx: &Ctx, command: Organizations) -> CliResult<()> {
    let api = ctx.api()?;
    match command {
        Organizations::List => print_organizations(ctx, &current_context(ctx)?)?,
        Organizations::Show { organization } => {
            let id = organization_id(&current_context(ctx)?.value, &organization)?;
            show::<OrganizationProfile>(
                ctx,
                &format!("/organizations/{id}/profile"),
                &[
                    col("ID", "/organizationId"),
                    col("NAME", "/name"),
                    col("SLUG", "/slug"),
                    col("ROLE", "/role"),
                    col("CREATED", "/createdAt"),
                ],
                "/organizationId",
            )?;
        }
        Organizations::Create { name, slug } => {
            let answer =
                api.post::<IdResponse>("/organizations", &CreateOrganization { name, slug })?;
            created(ctx, &answer, "organization", "/id");
        }
        Organizations::Update {
            organization,
            name,
            logo_url,
        } => {
            let id = organization_id(&current_context(ctx)?.value, &organization)?;
            let body = UpdateOrganization { name, logo_url };
            let path = format!("/organizations/{id}/profile");
            let answer = api.post::<OrganizationProfile>(&path, &body)?;
            ctx.out
                .done(&answer.raw, &format!("Updated organization {id}"));
        }
        Organizations::Delete { organization } => {
            let id = organization_id(&current_context(ctx)?.value, &organization)?;
            let body = DeleteOrganization {
                confirmation: Some(Confirmation {
                    organization_id: Some(id.clone()),
                    ..Confirmation::default()
                }),
            };
            let path = format!("/organizations/{id}");
            let answer = api.delete::<DeletedOrganization>(&path, &body)?;
            ctx.out
                .done(&answer.raw, &format!("Deleted organization {id}"));
        }
    }
    Ok(())
}

const PROFILE_COLUMNS: &[Column] = &[
    col("USER", "/userId"),
    col("EMAIL", "/email"),
    col("NAME", "/displayName"),
    col("VERIFIED", "/emailVerified"),
    col("CREATED", "/createdAt"),
];

const SESSION_COLUMNS: &[Column] = &[
    col("ID", "/sessionId"),
    col("CLIENT", "/clientKind"),
    col("NAME", "/displayName"),
    col("CURRENT", "/current"),
    col("CREATED", "/createdAt"),
    col("LAST ACTIVE", "/lastActiveAt"),
    col("EXPIRES", "/expiresAt"),
];

pub fn account(ctx: &Ctx, command: Account) -> CliResult<()> {
    match command {
        Account::Show => {
            show::<AccountProfile>(ctx, "/account/profile", PROFILE_COLUMNS, "/userId")
        }
        Account::Sessions => {
            super::list::<SessionList>(ctx, "/account/sessions", &[], SESSION_COLUMNS, "/sessionId")
        }
        Account::RevokeSession { session } => {
            let path = format!("/account/sessions/{session}/revoke");
            let answer = ctx
                .api()?
                .post::<RevokedSession>(&path, &RevokeSession {})?;
            ctx.out
                .done(&answer.raw, &format!("Signed out session {session}"));
            Ok(())
        }
        Account::Update {
            display_name,
            avatar_url,
        } => {
            let body = UpdateProfile {
                display_name,
                avatar_url,
                email: None,
            };
            let answer = ctx
                .api()?
                .post::<AccountProfile>("/account/profile", &body)?;
            ctx.out.record(&answer.raw, PROFILE_COLUMNS, "/userId");
            Ok(())
        }
        Account::Delete => {
            let api = ctx.api()?;
            let profile = api.get::<AccountProfile>("/account/profile", &[])?;
            let user = profile.value.user_id;
            let body = DeleteAccount {
                confirmation: Some(Confirmation {
                    user_id: Some(user.clone()),
                    ..Confirmation::default()
                }),
            };
            let answer = api.delete::<DeletedAccount>("/account", &body)?;
            ctx.out
                .done(&answer.raw, &format!("Deleted account {user}"));
            Ok(())
        }
    }
}
