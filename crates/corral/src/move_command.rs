//! `corral move`: flags in, one call into `corral_cli::mover` out.

use std::path::PathBuf;

use corral_cli::mover::{Mode, MoveOptions};
use corral_cli::{Connection, KubeconfigSource};

#[derive(clap::Args)]
pub struct MoveArgs {
    #[command(flatten)]
    kubeconfig: crate::commands::KubeconfigArgs,
    /// The kubeconfig of the management plane to move to (its current context). It must run
    /// the same providers (`corral init`) and, for in-memory clusters, share the source's
    /// simulated cloud (`--cloud URL`).
    #[arg(long, value_name = "FILE")]
    to_kubeconfig: PathBuf,
    /// The context to use in `--to-kubeconfig` (default: its current context), as clusterctl.
    #[arg(long, value_name = "CONTEXT")]
    to_kubeconfig_context: Option<String>,
    /// The namespace whose Clusters move (default: the source kubeconfig's namespace).
    #[arg(long, short = 'n')]
    namespace: Option<String>,
    /// Print what would move, in which order, and change nothing.
    #[arg(long)]
    dry_run: bool,
    /// Continue a move that stopped midway (its Clusters are paused by it).
    #[arg(long, conflicts_with_all = ["rollback", "dry_run"])]
    resume: bool,
    /// Undo a move that stopped before deleting at the source: delete what it created at the
    /// target and unpause the source.
    #[arg(long, conflicts_with = "dry_run")]
    rollback: bool,
}

pub async fn run(args: MoveArgs) -> anyhow::Result<()> {
    let source = args.kubeconfig.connect().await?;
    let target = Connection::open_context(
        &KubeconfigSource {
            flag: Some(args.to_kubeconfig.clone()),
            env: None,
            home: None,
        },
        args.to_kubeconfig_context.as_deref(),
    )
    .await?;
    let namespace = args
        .namespace
        .clone()
        .unwrap_or_else(|| source.default_namespace.clone());
    let mut command = format!(
        "corral move --to-kubeconfig {} --namespace {namespace}",
        args.to_kubeconfig.display()
    );
    if let Some(kubeconfig) = &args.kubeconfig.path() {
        command.push_str(&format!(" --kubeconfig {}", kubeconfig.display()));
    }
    if let Some(context) = &args.kubeconfig.context() {
        command.push_str(&format!(" --kubeconfig-context {context}"));
    }
    if let Some(context) = &args.to_kubeconfig_context {
        command.push_str(&format!(" --to-kubeconfig-context {context}"));
    }
    let options = MoveOptions {
        namespace: Some(namespace),
        dry_run: args.dry_run,
        mode: if args.resume {
            Mode::Resume
        } else if args.rollback {
            Mode::Rollback
        } else {
            Mode::Move
        },
        command,
    };
    let mut stdout = std::io::stdout();
    corral_cli::mover::run(&source, &target, &options, &mut stdout).await?;
    Ok(())
}
