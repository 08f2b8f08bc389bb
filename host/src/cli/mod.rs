//! The command line: `tern <command>`, each command a thin layer over the library.

mod crd;
mod operator;
mod render;
mod strategy;

use clap::{Parser, Subcommand, ValueEnum};

/// Tern: a global server load balancer for Kubernetes, wire-compatible with k8gb.
#[derive(Debug, Parser)]
#[command(name = "tern", version, about)]
pub struct Cli {
    /// Log format on stderr.
    #[arg(long, global = true, value_enum, default_value_t = LogFormat::Text, env = "TERN_LOG_FORMAT")]
    pub log_format: LogFormat,
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum LogFormat {
    Text,
    Json,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Work with strategies: list, evaluate, build.
    #[command(subcommand)]
    Strategy(strategy::StrategyCommand),
    /// Print the CRDs (Gslb in both groups, ZoneDelegation), or write them as files.
    Crd(crd::CrdArgs),
    /// Print the DNSEndpoints the operator would write for Gslb manifests, offline.
    Render(render::RenderArgs),
    /// Run the operator: reconcile Gslbs into DNSEndpoints (configured by k8gb's environment variables).
    Operator(operator::OperatorArgs),
}

/// Runs the parsed command.
pub fn run(cli: Cli) -> anyhow::Result<()> {
    match cli.command {
        Command::Strategy(command) => strategy::run(command),
        Command::Crd(args) => crd::run(args),
        Command::Render(args) => render::run(args),
        Command::Operator(args) => operator::run(args),
    }
}

/// Logs to stderr, filtered by `RUST_LOG` (default `info`).
pub fn init_logging(format: LogFormat) {
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info"));
    let builder = tracing_subscriber::fmt().with_env_filter(filter).with_writer(std::io::stderr);
    let _ = match format {
        LogFormat::Text => builder.try_init(),
        LogFormat::Json => builder.json().try_init(),
    };
}
