//! Sign-in, account, organizations, members, invitations, projects and environments.

use berth_api::members::OrganizationRole;
use clap::{Args, Subcommand};

/// A role as the API spells it (`owner`, `admin`, `member`).
fn organization_role(text: &str) -> Result<OrganizationRole, String> {
    serde_json::from_value(serde_json::Value::String(text.to_string()))
        .map_err(|_| "expected owner, admin or member".to_string())
}

#[derive(Args, Debug)]
pub struct Login {
    /// Email to sign in with (the password is prompted without echo).
    #[arg(long, conflicts_with = "token")]
    pub email: Option<String>,
    /// Read the password from the first line of standard input.
    #[arg(long, requires = "email")]
    pub password_stdin: bool,
    /// Store this deploy token instead of signing in with a password.
    #[arg(long)]
    pub token: Option<String>,
}

#[derive(Subcommand, Debug)]
pub enum Account {
    /// Show your profile.
    #[command(after_help = "Example:\n  berth account show")]
    Show,
    /// List your signed-in sessions (this CLI's is marked current).
    #[command(after_help = "Example:\n  berth account sessions")]
    Sessions,
    /// Sign one of your sessions out.
    #[command(after_help = "Example:\n  berth account revoke-session sess-abc")]
    RevokeSession { session: String },
    /// Change your display name or avatar (an empty value clears it).
    #[command(after_help = "Example:\n  berth account update --display-name \"Ana Lima\"")]
    Update {
        #[arg(long)]
        display_name: Option<String>,
        #[arg(long)]
        avatar_url: Option<String>,
    },
    /// Delete your account (asks for no confirmation: the API checks your user id).
    #[command(after_help = "Example:\n  berth account delete")]
    Delete,
}

#[derive(Subcommand, Debug)]
pub enum Organizations {
    /// List your organizations.
    #[command(visible_alias = "ls", after_help = "Example:\n  berth orgs list")]
    List,
    /// Show an organization's profile.
    #[command(after_help = "Example:\n  berth orgs show acme")]
    Show { organization: String },
    /// Create an organization you own.
    #[command(after_help = "Example:\n  berth orgs create \"Acme Inc\" --slug acme")]
    Create {
        name: String,
        #[arg(long)]
        slug: Option<String>,
    },
    /// Change an organization's name or logo.
    #[command(after_help = "Example:\n  berth orgs update acme --name \"Acme GmbH\"")]
    Update {
        organization: String,
        #[arg(long)]
        name: Option<String>,
        #[arg(long)]
        logo_url: Option<String>,
    },
    /// Delete an organization and everything in it.
    #[command(
        visible_alias = "rm",
        after_help = "Example:\n  berth orgs delete acme"
    )]
    Delete { organization: String },
}

#[derive(Subcommand, Debug)]
pub enum Members {
    /// List the organization's members.
    #[command(visible_alias = "ls", after_help = "Example:\n  berth members list")]
    List,
    /// Change a member's role (member id or email).
    #[command(after_help = "Example:\n  berth members role ana@example.com admin")]
    Role {
        member: String,
        /// owner, admin or member.
        #[arg(value_parser = organization_role)]
        role: OrganizationRole,
    },
    /// Remove a member (reversible with `reactivate`).
    #[command(
        visible_alias = "rm",
        after_help = "Example:\n  berth members remove ana@example.com"
    )]
    Remove { member: String },
    /// Reactivate a removed member.
    #[command(after_help = "Example:\n  berth members reactivate mem-abc")]
    Reactivate { member: String },
    /// Hand your ownership to another member (you become admin).
    #[command(after_help = "Example:\n  berth members transfer-ownership ana@example.com")]
    TransferOwnership { member: String },
}

#[derive(Subcommand, Debug)]
pub enum Invitations {
    /// List the organization's invitations.
    #[command(
        visible_alias = "ls",
        after_help = "Example:\n  berth invitations list"
    )]
    List,
    /// Invite someone by email.
    #[command(after_help = "Example:\n  berth invitations create ana@example.com --role admin")]
    Create {
        email: String,
        /// owner, admin or member.
        #[arg(long, default_value = "member", value_parser = organization_role)]
        role: OrganizationRole,
    },
    /// Revoke a pending invitation.
    #[command(after_help = "Example:\n  berth invitations revoke inv-abc")]
    Revoke { invitation: String },
    /// Accept an invitation sent to your email.
    #[command(after_help = "Example:\n  berth invitations accept inv-abc")]
    Accept { invitation: String },
}

#[derive(Subcommand, Debug)]
pub enum Projects {
    /// List projects.
    #[command(visible_alias = "ls", after_help = "Example:\n  berth projects list")]
    List,
    /// Count active projects.
    #[command(after_help = "Example:\n  berth projects count")]
    Count,
    /// Show a project.
    #[command(after_help = "Example:\n  berth projects show prj-abc")]
    Show { project: String },
    /// Create a project.
    #[command(after_help = "Example:\n  berth projects create Shop --description storefront")]
    Create {
        name: String,
        #[arg(long)]
        description: Option<String>,
    },
    /// Rename a project (and, with --slug, change its slug).
    #[command(
        after_help = "Example:\n  berth projects rename prj-abc \"Web Shop\" --slug web-shop"
    )]
    Rename {
        project: String,
        name: String,
        #[arg(long)]
        slug: Option<String>,
    },
    /// Restore an archived project (admins).
    #[command(after_help = "Example:\n  berth projects restore prj-abc")]
    Restore { project: String },
    /// Archive a project (its history stays readable).
    #[command(
        visible_alias = "rm",
        after_help = "Example:\n  berth projects delete prj-abc"
    )]
    Delete { project: String },
}

#[derive(Subcommand, Debug)]
pub enum Environments {
    /// List environments.
    #[command(
        visible_alias = "ls",
        after_help = "Example:\n  berth environments list --project prj-abc"
    )]
    List {
        #[arg(long)]
        project: Option<String>,
    },
    /// Count active environments.
    #[command(after_help = "Example:\n  berth environments count")]
    Count,
    /// Show an environment (variables masked).
    #[command(after_help = "Example:\n  berth environments show env-abc")]
    Show { environment: String },
    /// Create an environment in a project.
    #[command(
        after_help = "Example:\n  berth environments create --project prj-abc prod --kind production"
    )]
    Create {
        #[arg(long)]
        project: String,
        name: String,
        /// local, development, test, staging, production, preview or custom.
        #[arg(long, default_value = "development")]
        kind: String,
    },
    /// Archive an environment (its history stays readable).
    #[command(
        visible_alias = "rm",
        after_help = "Example:\n  berth environments delete env-abc"
    )]
    Delete {
        environment: String,
        #[arg(long)]
        reason: Option<String>,
    },
    /// Rename an environment.
    #[command(after_help = "Example:\n  berth environments rename env-abc staging-eu")]
    Rename { environment: String, name: String },
    /// Lock an environment (admins): no deployments or changes until unlocked.
    #[command(
        after_help = "Example:\n  berth environments lock env-abc --reason \"release freeze\""
    )]
    Lock {
        environment: String,
        #[arg(long)]
        reason: Option<String>,
    },
    /// Unlock an environment (admins).
    #[command(after_help = "Example:\n  berth environments unlock env-abc")]
    Unlock { environment: String },
    /// Set a variable every resource of the environment inherits (a resource's own wins).
    #[command(
        after_help = "Examples:\n  berth environments set env-abc LOG_LEVEL=debug --build-time\n  \
                      berth environments set env-abc STRIPE_KEY=sk_live_… --secret"
    )]
    Set {
        environment: String,
        /// KEY=VALUE.
        assignment: String,
        #[arg(long)]
        build_time: bool,
        /// Keep the value in the environment's Secret, shown only as ****.
        #[arg(long)]
        secret: bool,
    },
    /// Remove an environment variable.
    #[command(after_help = "Example:\n  berth environments unset env-abc LOG_LEVEL")]
    Unset {
        environment: String,
        key: String,
        #[arg(long)]
        build_time: bool,
    },
    /// A new environment of the same project with a copy of this one's variables.
    #[command(after_help = "Example:\n  berth environments clone env-abc staging-2 --kind staging")]
    Clone {
        environment: String,
        name: String,
        #[arg(long)]
        kind: Option<String>,
    },
    /// How two environments' variables differ (secret-looking values masked).
    #[command(after_help = "Example:\n  berth environments diff staging production")]
    Diff { environment: String, other: String },
    /// Copy an environment's variables into another (shows the diff first).
    #[command(after_help = "Example:\n  berth environments promote staging production")]
    Promote { environment: String, target: String },
}
