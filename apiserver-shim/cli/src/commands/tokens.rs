//! Deploy tokens of the current organization. Their secret is printed only when the API
//! returns it: on creation and rotation.

use berth_api::common::Confirmation;
use berth_api::deploy_tokens::{
    ConfirmedAction, CreateToken, CreatedToken, RevokedToken, RotatedToken, ScopeInput, TokenList,
    TokenRecord,
};
use serde_json::Value;

use super::{Ctx, current_organization};
use crate::cli::Tokens;
use crate::error::CliResult;
use crate::output::text;

pub fn tokens(ctx: &Ctx, command: Tokens) -> CliResult<()> {
    let api = ctx.api()?;
    let organization = current_organization(api)?;
    let in_organization = [("organizationId", organization.clone())];
    match command {
        Tokens::List => {
            let answer = api.get::<TokenList>("/deploy-tokens", &in_organization)?;
            ctx.out.rows(&answer.raw, &answer.value.items);
        }
        Tokens::Show { token } => {
            let path = format!("/deploy-tokens/{token}");
            let answer = api.get::<TokenRecord>(&path, &in_organization)?;
            ctx.out.row(&answer.raw, &answer.value);
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
            let answer = api.post::<CreatedToken>("/deploy-tokens", &body)?;
            let created = &answer.value;
            print_secret(
                ctx,
                &answer.raw,
                &created.token_id,
                &created.token,
                "Created",
            );
        }
        Tokens::Rotate { token } => {
            let answer = api.post::<RotatedToken>(
                &format!("/deploy-tokens/{token}/rotate"),
                &confirm(&organization, &token),
            )?;
            let rotated = &answer.value;
            print_secret(
                ctx,
                &answer.raw,
                &rotated.token_id,
                &rotated.token,
                "Rotated",
            );
        }
        Tokens::Revoke { token } => {
            let answer = api.post::<RevokedToken>(
                &format!("/deploy-tokens/{token}/revoke"),
                &confirm(&organization, &token),
            )?;
            ctx.out
                .done(&answer.raw, &format!("Revoked deploy token {token}"));
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
fn print_secret(ctx: &Ctx, answer: &Value, token_id: &str, secret: &str, verb: &str) {
    if ctx.out.quiet {
        println!("{secret}");
    } else if ctx.out.human() {
        println!("{verb} deploy token {}", text(token_id));
        println!("Secret (shown only now): {secret}");
    } else {
        ctx.out.raw(answer);
    }
}
