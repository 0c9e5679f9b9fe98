//! Members of the current organization and invitations to it.

use berth_api::account::AccountProfile;
use berth_api::invitations::{
    AcceptInvitation, AcceptedInvitation, CreateInvitation, InvitationList, InvitationRecord,
    RevokeInvitation,
};
use berth_api::members::{
    ChangeRole, MemberList, MemberRecord, ReactivateMember, RemoveMember, RemovedMember,
    TransferOwnership, TransferredOwnership,
};

use super::{Answer, Ctx, current_organization};
use crate::cli::{Invitations, Members};
use crate::error::{CliError, CliResult};
use crate::output::{Column, col, items, text};

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
    let Answer {
        raw: answer,
        value: list,
    } = api.get::<MemberList>(&base, &[])?;
    let member_id = |name: &str| -> CliResult<String> {
        list.items
            .iter()
            .find(|m| m.member_id == name || m.email == name)
            .map(|m| m.member_id.clone())
            .ok_or_else(|| CliError::NotFound(format!("no member {name} in {organization}")))
    };
    // A member record the API answers a change with.
    let changed = |answer: Answer<MemberRecord>| ctx.out.row(&answer.raw, &answer.value);
    match command {
        Members::List => ctx.out.rows(&answer, &list.items),
        Members::Role { member, role } => {
            let path = format!("{base}/{}/role", member_id(&member)?);
            changed(api.post(&path, &ChangeRole { role })?);
        }
        Members::Remove { member } => {
            let id = member_id(&member)?;
            let path = format!("{base}/{id}");
            let removed = api.delete::<RemovedMember>(&path, &RemoveMember {})?;
            ctx.out.done(&removed.raw, &format!("Removed member {id}"));
        }
        Members::Reactivate { member } => {
            let path = format!("{base}/{}/reactivate", member_id(&member)?);
            changed(api.post(&path, &ReactivateMember {})?);
        }
        Members::TransferOwnership { member } => {
            let profile = api.get::<AccountProfile>("/account/profile", &[])?;
            let me = profile.value.email;
            let body = TransferOwnership {
                from_member_id: member_id(&me)?,
                to_member_id: member_id(&member)?,
            };
            let path = format!("/organizations/{organization}/owner-transfer");
            let answer = api.post::<TransferredOwnership>(&path, &body)?;
            ctx.out.done(
                &answer.raw,
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
            let answer = api.get::<InvitationList>(&base()?, &[])?;
            ctx.out.list(
                &answer.raw,
                &items(&answer.raw, "/items"),
                INVITATION_COLUMNS,
                "/invitationId",
            );
        }
        Invitations::Create { email, role } => {
            let body = CreateInvitation { email, role };
            let answer = api.post::<InvitationRecord>(&base()?, &body)?;
            ctx.out
                .record(&answer.raw, INVITATION_COLUMNS, "/invitationId");
        }
        Invitations::Revoke { invitation } => {
            let path = format!("{}/{invitation}/revoke", base()?);
            let answer = api.post::<InvitationRecord>(&path, &RevokeInvitation {})?;
            ctx.out
                .record(&answer.raw, INVITATION_COLUMNS, "/invitationId");
        }
        // The invitee accepts from no organization of the inviter's yet.
        Invitations::Accept { invitation } => {
            let path = format!("/invitations/{invitation}/accept");
            let answer = api.post::<AcceptedInvitation>(&path, &AcceptInvitation {})?;
            let organization = text(&answer.value.invitation.organization_id);
            ctx.out
                .done(&answer.raw, &format!("Joined organization {organization}"));
        }
    }
    Ok(())
}
