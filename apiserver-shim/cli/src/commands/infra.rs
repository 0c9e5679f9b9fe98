//! Servers and the SSH credentials they use.

use berth_api::common::Confirmation;
use berth_api::credentials::{
    CreateCredential, DeleteCredential, RotateCredential, RotatedCredential, SshCredentialKind,
};
use berth_api::servers::{
    ConnectivityReport, CreateServer, DeleteServer, NoBody, ServerList, ServerRecord,
};

use super::{Ctx, created, get_as, id_of, list, read_as};
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
    id_of(ctx.api()?, "/servers", "srv-", name)
}

pub fn servers(ctx: &Ctx, command: Servers) -> CliResult<()> {
    match command {
        Servers::List => {
            let (answer, list): (_, ServerList) = get_as(ctx.api()?, "/servers", &[])?;
            ctx.out.rows(&answer, &list.items);
            Ok(())
        }
        Servers::Show { server } => {
            let id = server_id(ctx, &server)?;
            let path = format!("/servers/{id}");
            let (answer, server): (_, ServerRecord) = get_as(ctx.api()?, &path, &[])?;
            ctx.out.row(&answer, &ServerDetail(&server));
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
            let credential = id_of(ctx.api()?, "/credentials/ssh", "ssh-", &credential)?;
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
            let answer = ctx.api()?.post("/servers", &body)?;
            created(ctx, &answer, "server", "/id");
            Ok(())
        }
        Servers::Test { server, draft } => test_connectivity(ctx, server.as_deref(), draft),
        Servers::Rename { server, name } => rename_server(ctx, &server, &name),
        Servers::DeleteCheck { server } => server_report(ctx, &server, "delete-check"),
        Servers::Capacity { server } => server_report(ctx, &server, "capacity"),
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
            ctx.api()?.post(&path, &NoBody {})?
        }
        None => {
            let body = draft_test(ctx, draft)?;
            ctx.api()?.post("/servers/connectivity-tests", &body)?
        }
    };
    let report: ConnectivityReport = read_as("connectivity test", &answer)?;
    ctx.out.rows(&answer, &report.checks);
    if report.status == "healthy" {
        return Ok(());
    }
    Err(CliError::failure(format!(
        "{}:{} is {}",
        report.host, report.port, report.status
    )))
}

/// The body of `POST /servers/connectivity-tests` for a host given on the command line.
fn draft_test(ctx: &Ctx, draft: DraftServerArgs) -> CliResult<serde_json::Value> {
    let (Some(host), Some(credential)) = (draft.host, draft.credential) else {
        return Err(CliError::Usage(
            "give a server, or --host and --credential".into(),
        ));
    };
    let credential_id = id_of(ctx.api()?, "/credentials/ssh", "ssh-", &credential)?;
    let mut server = serde_json::json!({ "host": host, "credentialId": credential_id });
    let optional = [
        ("port", draft.port.map(serde_json::Value::from)),
        ("username", draft.username.map(serde_json::Value::from)),
        (
            "expectedHostKeyFingerprint",
            draft.host_key.map(serde_json::Value::from),
        ),
    ];
    for (field, value) in optional {
        if let Some(value) = value {
            server[field] = value;
        }
    }
    Ok(serde_json::json!({ "server": server }))
}

fn rename_server(ctx: &Ctx, server: &str, name: &str) -> CliResult<()> {
    let id = server_id(ctx, server)?;
    let body = serde_json::json!({ "name": name });
    let answer = ctx.api()?.post(&format!("/servers/{id}/rename"), &body)?;
    ctx.out
        .done(&answer, &format!("Renamed server {id} to {name}"));
    Ok(())
}

/// Prints what the server's `GET /servers/{id}/{report}` answers, as it is.
fn server_report(ctx: &Ctx, server: &str, report: &str) -> CliResult<()> {
    let id = server_id(ctx, server)?;
    let answer = ctx.api()?.get(&format!("/servers/{id}/{report}"), &[])?;
    ctx.out.raw(&answer);
    Ok(())
}

/// Removes what is reclaimable on the server, or (without `apply`) only lists it.
fn prune_server(ctx: &Ctx, server: &str, apply: bool) -> CliResult<()> {
    let id = server_id(ctx, server)?;
    let body = serde_json::json!({ "dryRun": !apply });
    let path = format!("/servers/{id}/capacity/prune");
    let answer = ctx.api()?.post(&path, &body)?;
    ctx.out.raw(&answer);
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
    let answer = ctx.api()?.delete(&format!("/servers/{id}"), &body)?;
    ctx.out.done(&answer, &format!("Deleted server {id}"));
    Ok(())
}

fn lifecycle(ctx: &Ctx, server: &str, action: &str) -> CliResult<()> {
    let id = server_id(ctx, server)?;
    let answer = ctx
        .api()?
        .post(&format!("/servers/{id}/{action}"), &NoBody {})?;
    let server: ServerRecord = read_as("server", &answer)?;
    ctx.out.row(&answer, &server);
    Ok(())
}

pub fn credentials(ctx: &Ctx, command: Credentials) -> CliResult<()> {
    match command {
        Credentials::List => list(ctx, "/credentials/ssh", &[], CREDENTIAL_COLUMNS, "/id"),
        Credentials::Show { credential } => {
            let id = id_of(ctx.api()?, "/credentials/ssh", "ssh-", &credential)?;
            let answer = ctx.api()?.get(
                &format!("/credentials/ssh/{id}"),
                &[("includeUsage", "true".into())],
            )?;
            let mut view = answer["credential"].clone();
            view["servers"] = answer["usage"]["totalServers"].clone();
            let mut fields = CREDENTIAL_COLUMNS.to_vec();
            fields.push(col("SERVERS", "/servers"));
            ctx.out.record_of(&answer, &view, &fields, "/id");
            Ok(())
        }
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
            let answer = ctx.api()?.post("/credentials/ssh", &body)?;
            created(ctx, &answer, "SSH credential", "/id");
            Ok(())
        }
        Credentials::Rotate {
            credential,
            private_key_file,
        } => {
            let id = id_of(ctx.api()?, "/credentials/ssh", "ssh-", &credential)?;
            let body = RotateCredential {
                private_key: read_key(&private_key_file)?,
                confirmation: Some(Confirmation {
                    credential_id: Some(id.clone()),
                    ..Confirmation::default()
                }),
            };
            let answer = ctx
                .api()?
                .post(&format!("/credentials/ssh/{id}/rotate"), &body)?;
            let rotated: RotatedCredential = read_as("credential rotation", &answer)?;
            let servers = rotated.affected_usage.total_servers;
            ctx.out.done(
                &answer,
                &format!("Rotated SSH credential {id}; {servers} server(s) use the new key"),
            );
            Ok(())
        }
        Credentials::Delete { credential } => {
            let id = id_of(ctx.api()?, "/credentials/ssh", "ssh-", &credential)?;
            let body = DeleteCredential {
                confirmation: Some(Confirmation {
                    credential_id: Some(id.clone()),
                    ..Confirmation::default()
                }),
            };
            let answer = ctx
                .api()?
                .delete(&format!("/credentials/ssh/{id}"), &body)?;
            ctx.out
                .done(&answer, &format!("Deleted SSH credential {id}"));
            Ok(())
        }
    }
}

/// A private key file's text; never echoed, also not in errors.
fn read_key(file: &std::path::Path) -> CliResult<String> {
    std::fs::read_to_string(file)
        .map_err(|error| CliError::failure(format!("cannot read {}: {error}", file.display())))
}
