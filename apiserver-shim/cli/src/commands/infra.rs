//! Servers and the SSH credentials they use.

use berth_api::common::{Confirmation, IdResponse};
use berth_api::credentials::{
    CreateCredential, CredentialList, CredentialShow, DeleteCredential, RotateCredential,
    RotatedCredential, SshCredentialKind,
};
use berth_api::server_capacity::{Capacity, PruneReport};
use berth_api::servers::{
    self, ConnectivityReport, CreateServer, DeleteCheck, DeleteServer, DraftConnectivityTest,
    DraftServer, NoBody, RenameServer, ServerList, ServerRecord,
};
use serde::de::DeserializeOwned;
use serde_json::Value;

use super::{Ctx, created, id_of, list};
use crate::cli::{Credentials, DraftServerArgs, Servers};
use crate::error::{CliError, CliResult};
use crate::output::{Column, col};
use crate::rows::ServerDetail;

const CREDENTIAL_COLUMNS: &[Column] = &[
    col("ID", "/id"),
    col("NAME", "/name"),
    col("KIND", "/kind"),
    col("USERNAME", "/username"),
    col("FINGERPRINT", "/fingerprint"),
    col("CREATED", "/createdAt"),
];

pub fn server_id(ctx: &Ctx, name: &str) -> CliResult<String> {
    id_of::<ServerList>(ctx.api()?, "/servers", "srv-", name)
}

pub fn servers(ctx: &Ctx, command: Servers) -> CliResult<()> {
    match command {
        Servers::List => {
            let answer = ctx.api()?.get::<ServerList>("/servers", &[])?;
            ctx.out.rows(&answer.raw, &answer.value.items);
            Ok(())
        }
        Servers::Show { server } => {
            let id = server_id(ctx, &server)?;
            let path = format!("/servers/{id}");
            let answer = ctx.api()?.get::<servers::ServerDetail>(&path, &[])?;
            ctx.out
                .row(&answer.raw, &ServerDetail(&answer.value.record));
            Ok(())
        }
        Servers::Create {
            name,
            host,
            port,
            username,
            credential,
            base_domain,
        } => {
            let credential = credential_id(ctx, &credential)?;
            let body = CreateServer {
                name,
                host,
                port,
                username,
                credential_id: credential,
                provider_key: None,
                base_domain,
                expected_host_key_fingerprint: None,
                proxy: None,
            };
            let answer = ctx.api()?.post::<IdResponse>("/servers", &body)?;
            created(ctx, &answer, "server", "/id");
            Ok(())
        }
        Servers::Test { server, draft } => test_connectivity(ctx, server.as_deref(), draft),
        Servers::Rename { server, name } => rename_server(ctx, &server, &name),
        Servers::DeleteCheck { server } => {
            server_report::<DeleteCheck>(ctx, &server, "delete-check")
        }
        Servers::Capacity { server } => server_report::<Capacity>(ctx, &server, "capacity"),
        Servers::Prune { server, apply } => prune_server(ctx, &server, apply),
        Servers::Activate { server } => lifecycle(ctx, &server, "activate"),
        Servers::Deactivate { server } => lifecycle(ctx, &server, "deactivate"),
        Servers::Delete { server } => delete_server(ctx, &server),
    }
}

/// Runs a connectivity test of a registered server, or of a draft one, and prints its checks;
/// a failure unless every check passed.
fn test_connectivity(ctx: &Ctx, server: Option<&str>, draft: DraftServerArgs) -> CliResult<()> {
    let answer = match server {
        Some(server) => {
            let id = server_id(ctx, server)?;
            let path = format!("/servers/{id}/connectivity-tests");
            ctx.api()?.post::<ConnectivityReport>(&path, &NoBody {})?
        }
        None => {
            let body = draft_test(ctx, draft)?;
            ctx.api()?
                .post::<ConnectivityReport>("/servers/connectivity-tests", &body)?
        }
    };
    let report = &answer.value;
    ctx.out.rows(&answer.raw, &report.checks);
    if report.status == "healthy" {
        return Ok(());
    }
    Err(CliError::failure(format!(
        "{}:{} is {}",
        report.host, report.port, report.status
    )))
}

/// The body of `POST /servers/connectivity-tests` for a host given on the command line.
fn draft_test(ctx: &Ctx, draft: DraftServerArgs) -> CliResult<DraftConnectivityTest> {
    let (Some(host), Some(credential)) = (draft.host, draft.credential) else {
        return Err(CliError::Usage(
            "give a server, or --host and --credential".into(),
        ));
    };
    let server = DraftServer {
        name: None,
        host,
        port: draft.port,
        provider_key: None,
        username: draft.username,
        credential_id: Some(credential_id(ctx, &credential)?),
        credential: None,
        expected_host_key_fingerprint: draft.host_key,
    };
    Ok(DraftConnectivityTest { server })
}

fn rename_server(ctx: &Ctx, server: &str, name: &str) -> CliResult<()> {
    let id = server_id(ctx, server)?;
    let body = RenameServer {
        name: name.to_string(),
        idempotency_key: None,
    };
    let path = format!("/servers/{id}/rename");
    let answer = ctx.api()?.post::<IdResponse>(&path, &body)?;
    ctx.out
        .done(&answer.raw, &format!("Renamed server {id} to {name}"));
    Ok(())
}

/// Prints what the server's `GET /servers/{id}/{report}` answers (a `T`), as it is.
fn server_report<T: DeserializeOwned>(ctx: &Ctx, server: &str, report: &str) -> CliResult<()> {
    let id = server_id(ctx, server)?;
    let answer = ctx
        .api()?
        .get::<T>(&format!("/servers/{id}/{report}"), &[])?;
    ctx.out.raw(&answer.raw);
    Ok(())
}

/// Removes what is reclaimable on the server, or (without `apply`) only lists it.
fn prune_server(ctx: &Ctx, server: &str, apply: bool) -> CliResult<()> {
    let id = server_id(ctx, server)?;
    let body = serde_json::json!({ "dryRun": !apply });
    let path = format!("/servers/{id}/capacity/prune");
    let answer = ctx.api()?.post::<PruneReport>(&path, &body)?;
    ctx.out.raw(&answer.raw);
    Ok(())
}

fn delete_server(ctx: &Ctx, server: &str) -> CliResult<()> {
    let id = server_id(ctx, server)?;
    let body = DeleteServer {
        confirmation: Some(Confirmation {
            server_id: Some(id.clone()),
            ..Confirmation::default()
        }),
        idempotency_key: None,
    };
    let path = format!("/servers/{id}");
    let answer = ctx.api()?.delete::<IdResponse>(&path, &body)?;
    ctx.out.done(&answer.raw, &format!("Deleted server {id}"));
    Ok(())
}

fn lifecycle(ctx: &Ctx, server: &str, action: &str) -> CliResult<()> {
    let id = server_id(ctx, server)?;
    let path = format!("/servers/{id}/{action}");
    let answer = ctx.api()?.post::<ServerRecord>(&path, &NoBody {})?;
    ctx.out.row(&answer.raw, &answer.value);
    Ok(())
}

pub fn credentials(ctx: &Ctx, command: Credentials) -> CliResult<()> {
    match command {
        Credentials::List => {
            list::<CredentialList>(ctx, "/credentials/ssh", &[], CREDENTIAL_COLUMNS, "/id")
        }
        Credentials::Show { credential } => show_credential(ctx, &credential),
        Credentials::Create {
            name,
            private_key_file,
            username,
        } => {
            let private_key = read_key(&private_key_file)?;
            let body = CreateCredential {
                name,
                kind: SshCredentialKind::SshPrivateKey,
                private_key,
                username,
            };
            let answer = ctx.api()?.post::<IdResponse>("/credentials/ssh", &body)?;
            created(ctx, &answer, "SSH credential", "/id");
            Ok(())
        }
        Credentials::Rotate {
            credential,
            private_key_file,
        } => {
            let id = credential_id(ctx, &credential)?;
            let body = RotateCredential {
                private_key: read_key(&private_key_file)?,
                confirmation: Some(Confirmation {
                    credential_id: Some(id.clone()),
                    ..Confirmation::default()
                }),
            };
            let path = format!("/credentials/ssh/{id}/rotate");
            let answer = ctx.api()?.post::<RotatedCredential>(&path, &body)?;
            let servers = answer.value.affected_usage.total_servers;
            ctx.out.done(
                &answer.raw,
                &format!("Rotated SSH credential {id}; {servers} server(s) use the new key"),
            );
            Ok(())
        }
        Credentials::Delete { credential } => {
            let id = credential_id(ctx, &credential)?;
            let body = DeleteCredential {
                confirmation: Some(Confirmation {
                    credential_id: Some(id.clone()),
                    ..Confirmation::default()
                }),
            };
            let path = format!("/credentials/ssh/{id}");
            let answer = ctx.api()?.delete::<IdResponse>(&path, &body)?;
            ctx.out
                .done(&answer.raw, &format!("Deleted SSH credential {id}"));
            Ok(())
        }
    }
}

/// The credential with how many servers use it.
fn show_credential(ctx: &Ctx, credential: &str) -> CliResult<()> {
    let id = credential_id(ctx, credential)?;
    let answer = ctx.api()?.get::<CredentialShow>(
        &format!("/credentials/ssh/{id}"),
        &[("includeUsage", "true".into())],
    )?;
    let mut view = answer.raw["credential"].clone();
    view["servers"] = answer
        .value
        .usage
        .as_ref()
        .map_or(Value::Null, |usage| usage.total_servers.into());
    let mut fields = CREDENTIAL_COLUMNS.to_vec();
    fields.push(col("SERVERS", "/servers"));
    ctx.out.record_of(&answer.raw, &view, &fields, "/id");
    Ok(())
}

fn credential_id(ctx: &Ctx, name: &str) -> CliResult<String> {
    id_of::<CredentialList>(ctx.api()?, "/credentials/ssh", "ssh-", name)
}

/// A private key file's text; never echoed, also not in errors.
fn read_key(file: &std::path::Path) -> CliResult<String> {
    std::fs::read_to_string(file)
        .map_err(|error| CliError::failure(format!("cannot read {}: {error}", file.display())))
}
