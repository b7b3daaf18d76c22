//! The command line: `serve` (the default) and `openapi`.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};

use crate::config::{Config, Overrides};
use crate::domain::FeedStrategy;

#[derive(Debug, Parser)]
#[command(name = "socialite", version, about = "A social feed service")]
pub struct Cli {
    /// Configuration file (default: ./socialite.toml when present).
    #[arg(long, global = true, value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// Address to listen on (server.listen).
    #[arg(long, global = true, value_name = "ADDR")]
    pub listen: Option<SocketAddr>,
    /// How timelines are built (feed.strategy).
    #[arg(long, global = true, value_name = "STRATEGY")]
    pub feed_strategy: Option<FeedStrategy>,
    #[command(subcommand)]
    pub command: Option<Command>,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Serve the API (the default).
    Serve,
    /// Print the OpenAPI document.
    Openapi,
}

pub fn main() -> ExitCode {
    let cli = Cli::parse();
    crate::telemetry::init_logging();
    match run(cli) {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            tracing::error!("{error:#}");
            eprintln!("error: {error:#}");
            ExitCode::FAILURE
        }
    }
}

fn load_config(cli: &Cli) -> anyhow::Result<Config> {
    let overrides = Overrides::new(cli.listen, cli.feed_strategy);
    let config = Config::load(cli.config.as_deref(), &overrides)?;
    let effective = toml::to_string(&config).unwrap_or_default();
    tracing::info!("effective configuration:\n{effective}");
    Ok(config)
}

fn run(cli: Cli) -> anyhow::Result<()> {
    match cli.command {
        Some(Command::Openapi) => {
            print!("{}", crate::http::openapi_json());
            Ok(())
        }
        Some(Command::Serve) | None => {
            let config = load_config(&cli)?;
            tokio::runtime::Runtime::new()?.block_on(crate::app::serve(config))
        }
    }
}
