//! `corral move`: flags in, one call into `corral_cli::mover` out (a move to another
//! management plane, to a directory, or from one).

use std::path::PathBuf;

use corral_cli::mover::{Mode, MoveOptions};
use corral_cli::{Connection, KubeconfigSource};

#[derive(clap::Args)]
pub struct MoveArgs {
    #[command(flatten)]
    kubeconfig: crate::commands::KubeconfigArgs,
    /// The kubeconfig of the management plane to move to (its current context), or with
    /// `--from-directory` to restore into. It must run the same providers (`corral init`) and,
    /// for in-memory clusters, share the source's simulated cloud (`--cloud URL`).
    #[arg(
        long,
        value_name = "FILE",
        required_unless_present_any = ["to_directory", "from_directory"]
    )]
    to_kubeconfig: Option<PathBuf>,
    /// The context to use in `--to-kubeconfig` (default: its current context), as clusterctl.
    #[arg(long, value_name = "CONTEXT")]
    to_kubeconfig_context: Option<String>,
    /// The namespace whose Clusters move (default: the kubeconfig context's namespace, else
    /// `default`; as clusterctl, one namespace per move).
    #[arg(long, short = 'n')]
    namespace: Option<String>,
    /// Write the Cluster API objects of the namespace to this empty directory, one file per
    /// object, instead of moving them; the source keeps managing them (clusterctl's backup).
    #[arg(
        long,
        value_name = "DIR",
        conflicts_with_all = ["to_kubeconfig", "to_kubeconfig_context", "from_directory", "resume", "rollback"]
    )]
    to_directory: Option<PathBuf>,
    /// Create the objects `--to-directory` wrote in the management plane of `--to-kubeconfig`
    /// (else `$KUBECONFIG`, else `~/.kube/config`) and unpause their Clusters there.
    #[arg(
        long,
        value_name = "DIR",
        conflicts_with_all = ["namespace", "resume", "rollback"]
    )]
    from_directory: Option<PathBuf>,
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
    let mut stdout = std::io::stdout();
    if let Some(directory) = &args.from_directory {
        // As clusterctl: a restore has no source, so `--kubeconfig` would be a mistake.
        if args.kubeconfig.path().is_some() || args.kubeconfig.context().is_some() {
            return Err(corral_cli::Error::Usage(
                "--from-directory restores into --to-kubeconfig FILE (else $KUBECONFIG); --kubeconfig names a source, which a restore has none of".into(),
            )
            .into());
        }
        let target = Connection::open_context(
            &KubeconfigSource {
                flag: args.to_kubeconfig.clone(),
                env: std::env::var_os("KUBECONFIG"),
                home: std::env::var_os("HOME").map(PathBuf::from),
            },
            args.to_kubeconfig_context.as_deref(),
        )
        .await?;
        let mut command = format!("corral move --from-directory {}", directory.display());
        if let Some(kubeconfig) = &args.to_kubeconfig {
            command.push_str(&format!(" --to-kubeconfig {}", kubeconfig.display()));
        }
        if let Some(context) = &args.to_kubeconfig_context {
            command.push_str(&format!(" --to-kubeconfig-context {context}"));
        }
        let options = MoveOptions {
            namespace: None,
            dry_run: args.dry_run,
            mode: Mode::Move,
            command,
        };
        corral_cli::mover::from_directory(&target, directory, &options, &mut stdout).await?;
        return Ok(());
    }
    let source = args.kubeconfig.connect().await?;
    let namespace = args
        .namespace
        .clone()
        .unwrap_or_else(|| source.default_namespace.clone());
    if let Some(directory) = &args.to_directory {
        let options = MoveOptions {
            namespace: Some(namespace),
            dry_run: args.dry_run,
            mode: Mode::Move,
            command: String::new(),
        };
        corral_cli::mover::to_directory(&source, directory, &options, &mut stdout).await?;
        return Ok(());
    }
    let to_kubeconfig = args
        .to_kubeconfig
        .clone()
        .expect("clap requires --to-kubeconfig without a directory");
    let target = Connection::open_context(
        &KubeconfigSource {
            flag: Some(to_kubeconfig.clone()),
            env: None,
            home: None,
        },
        args.to_kubeconfig_context.as_deref(),
    )
    .await?;
    let mut command = format!(
        "corral move --to-kubeconfig {} --namespace {namespace}",
        to_kubeconfig.display()
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
    corral_cli::mover::run(&source, &target, &options, &mut stdout).await?;
    Ok(())
}
