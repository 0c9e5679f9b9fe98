//! Deploy tokens of the current organization. Their secret is printed only when the API
//! returns it: on creation and rotation.

use berth_api::common::Confirmation;
use berth_api::deploy_tokens::{ConfirmedAction, CreateToken, ScopeInput, TokenList, TokenRecord};
use serde_json::Value;

use super::{Ctx, current_organization, get_as};
use crate::cli::Tokens;
use crate::error::CliResult;

pub fn tokens(ctx: &Ctx, command: Tokens) -> CliResult<()> {
    let api = ctx.api()?;
    let organization = current_organization(api)?;
    let in_organization = [("organizationId", organization.clone())];
    match command {
        Tokens::List => {
            let (answer, list): (_, TokenList) = get_as(api, "/deploy-tokens", &in_organization)?;
            ctx.out.rows(&answer, &list.items);
        }
        Tokens::Show { token } => {
            let path = format!("/deploy-tokens/{token}");
            let (answer, token): (_, TokenRecord) = get_as(api, &path, &in_organization)?;
            ctx.out.row(&answer, &token);
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
