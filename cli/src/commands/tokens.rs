//! Deploy tokens of the current organization. Their secret is printed only when the API
//! returns it: on creation and rotation.

use berth_api::common::Confirmation;
use berth_api::deploy_tokens::{ConfirmedAction, CreateToken, ScopeInput};
use serde_json::Value;

use super::{Ctx, current_organization};
use crate::cli::Tokens;
use crate::error::CliResult;
use crate::output::{Column, col, items};

const TOKEN_COLUMNS: &[Column] = &[
    col("ID", "/tokenId"),
    col("NAME", "/displayName"),
    col("STATUS", "/status"),
    col("SUFFIX", "/secretSuffix"),
    col("PROJECTS", "/scope/projectIds"),
    col("RESOURCES", "/scope/resourceIds"),
    col("EXPIRES", "/expiresAt"),
    col("LAST USED", "/lastUsedAt"),
];

pub fn tokens(ctx: &Ctx, command: Tokens) -> CliResult<()> {
    let api = ctx.api()?;
    let organization = current_organization(api)?;
    let in_organization = [("organizationId", organization.clone())];
    match command {
        Tokens::List => {
            let answer = api.get("/deploy-tokens", &in_organization)?;
            ctx.out.list(
                &answer,
                &items(&answer, "/items"),
                TOKEN_COLUMNS,
                "/tokenId",
            );
        }
        Tokens::Show { token } => {
            let answer = api.get(&format!("/deploy-tokens/{token}"), &in_organization)?;
            ctx.out.record(&answer, TOKEN_COLUMNS, "/tokenId");
        }
        Tokens::Create {
            name,
            projects,
            environments,
            resources,
            expires_at,
        } => {
            let body = CreateToken {
                organization_id: organization.clone(),
                display_name: name,
                scope: ScopeInput {
                    project_ids: projects,
                    environment_ids: environments,
                    resource_ids: resources,
                    ..ScopeInput::default()
                },
                expires_at,
            };
            let answer = api.post("/deploy-tokens", &body)?;
            print_secret(ctx, &answer, "Created");
        }
        Tokens::Rotate { token } => {
            let answer = api.post(
                &format!("/deploy-tokens/{token}/rotate"),
                &confirm(&organization, &token),
            )?;
            print_secret(ctx, &answer, "Rotated");
        }
        Tokens::Revoke { token } => {
            let answer = api.post(
                &format!("/deploy-tokens/{token}/revoke"),
                &confirm(&organization, &token),
            )?;
            ctx.out
                .done(&answer, &format!("Revoked deploy token {token}"));
        }
    }
    Ok(())
}

fn confirm(organization: &str, token: &str) -> ConfirmedAction {
    ConfirmedAction {
        organization_id: organization.to_string(),
        confirmation: Some(Confirmation {
            token_id: Some(token.to_string()),
            ..Confirmation::default()
        }),
    }
}

/// The one-time secret: with `-q` the secret alone (for `$(berth tokens create -q …)`).
fn print_secret(ctx: &Ctx, answer: &Value, verb: &str) {
    let secret = answer["token"].as_str().unwrap_or_default();
    if ctx.out.quiet {
        println!("{secret}");
    } else if ctx.out.human() {
        println!(
            "{verb} deploy token {}",
            crate::output::cell(answer, "/tokenId")
        );
        println!("Secret (shown only now): {secret}");
    } else {
        ctx.out.raw(answer);
    }
}
