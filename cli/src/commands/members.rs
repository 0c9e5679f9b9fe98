//! Members of the current organization and invitations to it.

use berth_api::invitations::{AcceptInvitation, CreateInvitation, RevokeInvitation};
use berth_api::members::{ChangeRole, ReactivateMember, RemoveMember, TransferOwnership};
use serde_json::Value;

use super::{Ctx, current_organization};
use crate::cli::{Invitations, Members};
use crate::error::{CliError, CliResult};
use crate::output::{Column, col, items};

const MEMBER_COLUMNS: &[Column] = &[
    col("ID", "/memberId"),
    col("EMAIL", "/email"),
    col("NAME", "/displayName"),
    col("ROLE", "/role"),
    col("STATUS", "/status"),
    col("JOINED", "/joinedAt"),
];

const INVITATION_COLUMNS: &[Column] = &[
    col("ID", "/invitationId"),
    col("EMAIL", "/email"),
    col("ROLE", "/role"),
    col("STATUS", "/status"),
    col("INVITER", "/inviter/email"),
    col("EXPIRES", "/expiresAt"),
];

pub fn members(ctx: &Ctx, command: Members) -> CliResult<()> {
    let api = ctx.api()?;
    let organization = current_organization(api)?;
    let base = format!("/organizations/{organization}/members");
    let answer = api.get(&base, &[])?;
    let member_id = |name: &str| -> CliResult<String> {
        items(&answer, "/items")
            .iter()
            .find(|m| m["memberId"] == name || m["email"] == name)
            .and_then(|m| m["memberId"].as_str().map(str::to_string))
            .ok_or_else(|| CliError::NotFound(format!("no member {name} in {organization}")))
    };
    match command {
        Members::List => {
            ctx.out.list(
                &answer,
                &items(&answer, "/items"),
                MEMBER_COLUMNS,
                "/memberId",
            );
        }
        Members::Role { member, role } => {
            let id = member_id(&member)?;
            let changed = api.post(&format!("{base}/{id}/role"), &ChangeRole { role })?;
            ctx.out.record(&changed, MEMBER_COLUMNS, "/memberId");
        }
        Members::Remove { member } => {
            let id = member_id(&member)?;
            let removed = api.delete(&format!("{base}/{id}"), &RemoveMember {})?;
            ctx.out.done(&removed, &format!("Removed member {id}"));
        }
        Members::Reactivate { member } => {
            let id = member_id(&member)?;
            let member = api.post(&format!("{base}/{id}/reactivate"), &ReactivateMember {})?;
            ctx.out.record(&member, MEMBER_COLUMNS, "/memberId");
        }
        Members::TransferOwnership { member } => {
            let profile = api.get("/account/profile", &[])?;
            let me = crate::output::cell(&profile, "/email");
            let body = TransferOwnership {
                from_member_id: member_id(&me)?,
                to_member_id: member_id(&member)?,
            };
            let path = format!("/organizations/{organization}/owner-transfer");
            let answer = api.post(&path, &body)?;
            ctx.out.done(
                &answer,
                &format!("{member} is now the owner; you are an admin"),
            );
        }
    }
    Ok(())
}

pub fn invitations(ctx: &Ctx, command: Invitations) -> CliResult<()> {
    let api = ctx.api()?;
    let base = || -> CliResult<String> {
        let organization = current_organization(api)?;
        Ok(format!("/organizations/{organization}/invitations"))
    };
    match command {
        Invitations::List => {
            let answer = api.get(&base()?, &[])?;
            ctx.out.list(
                &answer,
                &items(&answer, "/items"),
                INVITATION_COLUMNS,
                "/invitationId",
            );
        }
        Invitations::Create { email, role } => {
            let answer = api.post(&base()?, &CreateInvitation { email, role })?;
            ctx.out.record(&answer, INVITATION_COLUMNS, "/invitationId");
        }
        Invitations::Revoke { invitation } => {
            let path = format!("{}/{invitation}/revoke", base()?);
            let answer = api.post(&path, &RevokeInvitation {})?;
            ctx.out.record(&answer, INVITATION_COLUMNS, "/invitationId");
        }
        // The invitee accepts from no organization of the inviter's yet.
        Invitations::Accept { invitation } => {
            let answer = api.post(
                &format!("/invitations/{invitation}/accept"),
                &AcceptInvitation {},
            )?;
            let organization = answer.pointer("/invitation/organizationId").cloned();
            let organization = organization.as_ref().and_then(Value::as_str).unwrap_or("-");
            ctx.out
                .done(&answer, &format!("Joined organization {organization}"));
        }
    }
    Ok(())
}
