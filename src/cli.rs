//! The command line: `serve` (the default), `seed`, `import`, `openapi`, `aggregates`,
//! `backup`, `restore` and `audit`.

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
    /// Generate a Socialite-style data set into the configured storage, in bulk (the
    /// service must be stopped).
    Seed {
        /// Number of users, named u0, u1, ...
        #[arg(long)]
        users: usize,
        /// Upper bound of the Zipf-distributed number of accounts each user follows.
        #[arg(long)]
        max_follows: usize,
        /// Posts written by every user.
        #[arg(long)]
        posts_per_user: usize,
        /// Random seed; the same seed gives the same data set.
        #[arg(long, default_value_t = 1)]
        seed: u64,
        /// Issue every user an API token and write them here as a JSON array (the token
        /// of u{i} at index i), for the load tests.
        #[arg(long, value_name = "FILE")]
        tokens_out: Option<PathBuf>,
    },
    /// Load users, follows, posts (replies too), likes, blocks, mutes and reposts from JSON Lines
    /// files in bulk, then build every derived datum, notifications included (the service
    /// must be stopped; see docs/operations-bulk.md for the formats).
    Import {
        /// Users: {"id", "display_name"?, "created_at"?} per line; `-` for standard input.
        #[arg(long, value_name = "FILE")]
        users: Option<PathBuf>,
        /// Follows: {"follower", "followee", "created_at"?} per line.
        #[arg(long, value_name = "FILE")]
        follows: Option<PathBuf>,
        /// Posts: {"id" (24 hex digits), "author", "text", "in_reply_to"?} per line.
        #[arg(long, value_name = "FILE")]
        posts: Option<PathBuf>,
        /// Likes: {"user", "post", "created_at"?} per line.
        #[arg(long, value_name = "FILE")]
        likes: Option<PathBuf>,
        /// Blocks: {"user", "other", "created_at"?} per line.
        #[arg(long, value_name = "FILE")]
        blocks: Option<PathBuf>,
        /// Mutes: {"user", "other", "created_at"?, "notifications"?, "until"?} per line.
        #[arg(long, value_name = "FILE")]
        mutes: Option<PathBuf>,
        /// Reposts: {"user", "post", "created_at"?, "id"?} per line.
        #[arg(long, value_name = "FILE")]
        reposts: Option<PathBuf>,
    },
    /// Print the OpenAPI document.
    Openapi,
    /// Hashtag aggregates.
    Aggregates {
        #[command(subcommand)]
        command: AggregatesCommand,
    },
    /// Copy the embedded store to FILE, consistently, while servers keep using it.
    Backup {
        /// The copy; written beside it first, then renamed into place.
        #[arg(long, value_name = "FILE")]
        to: PathBuf,
    },
    /// Compare every derived datum with its sources; exit 0 clean, 1 discrepancies, 2 error.
    Audit {
        /// Run the matching rebuilds under the workers' leases, then audit again.
        #[arg(long)]
        repair: bool,
        /// Seconds to wait for the workers to apply what a discrepancy may be waiting for.
        #[arg(long, default_value_t = 30)]
        wait: u64,
    },
    /// Replace the embedded store with a backup; refused while any process uses the store.
    Restore {
        /// A file written by `socialite backup`.
        #[arg(long, value_name = "FILE")]
        from: PathBuf,
        /// Restore a copy that has no manifest (a backup by an older socialite): its
        /// content is then checked only by its length and SQLite's integrity check.
        #[arg(long)]
        allow_no_manifest: bool,
    },
}

#[derive(Debug, Subcommand)]
pub enum AggregatesCommand {
    /// Recompute every tag's counts from the posts, under the aggregates lock of type
    /// `rebuild`; the incremental worker then continues from the rebuild's watermark.
    Rebuild,
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
    let effective = toml::to_string(&config.redacted()).unwrap_or_default();
    tracing::info!("effective configuration:\n{effective}");
    crate::faults::install(&config.faults);
    Ok(config)
}

fn run(cli: Cli) -> anyhow::Result<()> {
    match cli.command {
        Some(Command::Openapi) => {
            print!("{}", crate::http::openapi_json());
            Ok(())
        }
        Some(Command::Seed {
            users,
            max_follows,
            posts_per_user,
            seed,
            ref tokens_out,
        }) => {
            let config = load_config(&cli)?;
            if tokens_out.is_some() {
                anyhow::ensure!(
                    config.auth.mode == crate::config::AuthMode::Token,
                    "--tokens-out needs auth.mode = token"
                );
            }
            let args = crate::seed::SeedArgs {
                users,
                max_follows,
                posts_per_user,
                seed,
            };
            tokio::runtime::Runtime::new()?.block_on(async move {
                let store = crate::app::open_store(&config).await?;
                let settings = crate::bulk::derive_settings(&config);
                let report =
                    crate::bulk::seed::run(store, settings, args, tokens_out.as_deref()).await?;
                println!(
                    "seeded {report} ({} strategy, {} storage)",
                    config.feed.strategy,
                    config.storage.backend.as_str()
                );
                anyhow::Ok(())
            })
        }
        Some(Command::Import {
            ref users,
            ref follows,
            ref posts,
            ref likes,
            ref blocks,
            ref mutes,
            ref reposts,
        }) => {
            let config = load_config(&cli)?;
            let files = crate::bulk::import::ImportFiles {
                users: users.clone(),
                follows: follows.clone(),
                posts: posts.clone(),
                likes: likes.clone(),
                blocks: blocks.clone(),
                mutes: mutes.clone(),
                reposts: reposts.clone(),
            };
            tokio::runtime::Runtime::new()?.block_on(async move {
                let store = crate::app::open_store(&config).await?;
                let settings = crate::bulk::derive_settings(&config);
                let report = crate::bulk::import::run(store, settings, &files).await?;
                println!(
                    "imported {report} ({} strategy, {} storage)",
                    config.feed.strategy,
                    config.storage.backend.as_str()
                );
                anyhow::Ok(())
            })
        }
        Some(Command::Aggregates {
            command: AggregatesCommand::Rebuild,
        }) => {
            let config = load_config(&cli)?;
            let report = tokio::runtime::Runtime::new()?
                .block_on(crate::app::rebuild_aggregates(&config))?;
            println!("{report}");
            Ok(())
        }
        Some(Command::Backup { ref to }) => {
            println!("{}", crate::backup::backup(&load_config(&cli)?, to)?);
            Ok(())
        }
        Some(Command::Restore {
            ref from,
            allow_no_manifest,
        }) => {
            let config = load_config(&cli)?;
            println!(
                "{}",
                crate::backup::restore(&config, from, allow_no_manifest)?
            );
            Ok(())
        }
        Some(Command::Audit { repair, wait }) => {
            let wait = std::time::Duration::from_secs(wait);
            let code = match load_config(&cli) {
                Ok(config) => crate::audit::command::run(&config, repair, wait),
                Err(error) => {
                    eprintln!("error: {error:#}");
                    2
                }
            };
            std::process::exit(code.into())
        }
        Some(Command::Serve) | None => {
            let config = load_config(&cli)?;
            tokio::runtime::Runtime::new()?.block_on(crate::app::serve(config))
        }
    }
}
