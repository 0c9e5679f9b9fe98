//! Members of the current organization and invitations to it.

use berth_api::invitations::{AcceptInvitation, CreateInvitation, RevokeInvitation};
use berth_api::members::{
    ChangeRole, MemberList, MemberRecord, ReactivateMember, RemoveMember, TransferOwnership,
};
use serde_json::Value;

use super::{Ctx, current_organization, get_as, read_as};
use crate::cli::{Invitations, Members};
use crate::error::{CliError, CliResult};
use crate::output::{Column, col, items};

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
    let (answer, list): (_, MemberList) = get_as(api, &base, &[])?;
    let member_id = |name: &str| -> CliResult<String> {
        list.items
            .iter()
            .find(|m| m.member_id == name || m.email == name)
            .map(|m| m.member_id.clone())
            .ok_or_else(|| CliError::NotFound(format!("no member {name} in {organization}")))
    };
    // A member record the API answers a change with.
    let changed = |path: &str, answer: &Value| -> CliResult<()> {
        let member: MemberRecord = read_as(path, answer)?;
        ctx.out.row(answer, &member);
        Ok(())
    };
    match command {
        Members::List => ctx.out.rows(&answer, &list.items),
        Members::Role { member, role } => {
            let path = format!("{base}/{}/role", member_id(&member)?);
            changed(&path, &api.post(&path, &ChangeRole { role })?)?;
        }
        Members::Remove { member } => {
            let id = member_id(&member)?;
            let removed = api.delete(&format!("{base}/{id}"), &RemoveMember {})?;
            ctx.out.done(&removed, &format!("Removed member {id}"));
        }
        Members::Reactivate { member } => {
            let path = format!("{base}/{}/reactivate", member_id(&member)?);
            changed(&path, &api.post(&path, &ReactivateMember {})?)?;
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
