//! `berth previews`: pull requests' preview environments (each pull request's head commit
//! deployed in an environment of its own at its own URL, removed when it closes).

use clap::Subcommand;

#[derive(Subcommand, Debug)]
pub enum Previews {
    /// List previews: pull request, resource, head commit, URL and whether it serves.
    #[command(
        visible_alias = "ls",
        after_help = "Examples:\n  berth previews list\n  berth previews list --resource web\n  berth previews list --project Shop -o json"
    )]
    List {
        /// Only this resource's (id, slug or name).
        #[arg(short, long)]
        resource: Option<String>,
        /// Only this project's (id, slug or name).
        #[arg(long)]
        project: Option<String>,
        /// Only this pull request's (its number).
        #[arg(long = "pr", value_name = "NUMBER")]
        pull_request: Option<u64>,
    },
    /// Show a preview: its pull request, the commit serving, its URL and why it is not ready.
    #[command(after_help = "Example:\n  berth previews show web-pr-7")]
    Show {
        /// Preview id (`<resource>-pr-<number>`, as `berth previews list` shows).
        preview: String,
    },
    /// Remove a preview with its environment, resource, containers and route. Waits up to
    /// 45 seconds for the removal to finish; if it takes longer it goes on in the background.
    #[command(
        visible_alias = "rm",
        after_help = "Example:\n  berth previews delete web-pr-7\n\nA preview is also removed when its pull request closes or merges."
    )]
    Delete {
        /// Preview id (`<resource>-pr-<number>`).
        preview: String,
    },
    /// Check what is left of previews that are gone: Kubernetes objects, and containers,
    /// networks and volumes on the organization's servers, still carrying a preview's label.
    /// Exits non-zero when something is left or a server could not be read. Admins only.
    #[command(
        after_help = "Example:\n  berth previews leftovers\n\nA preview's removal takes off everything it made; this check says when something survived it."
    )]
    Leftovers,
}
