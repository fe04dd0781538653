//! The `rockscout` binary: parse flags, set up logging, run until a signal or an unrecoverable error.

use clap::Parser;
use rockscout::config::{Cli, Command, Config};
use std::process::ExitCode;

fn main() -> ExitCode {
    let cli = Cli::parse();
    rockscout::telemetry::init(cli.log_format);
    if let Command::Account(args) = &cli.command {
        return match rockscout::account::cli::run(args) {
            Ok(output) => {
                print!("{output}");
                ExitCode::SUCCESS
            }
            Err(e) => {
                eprintln!("rockscout account: {e}");
                ExitCode::FAILURE
            }
        };
    }
    let replica = match &cli.command {
        Command::Serve(args) => match args.replica() {
            Ok(replica) => Some(replica),
            Err(why) => {
                eprintln!("rockscout serve: {why}");
                return ExitCode::FAILURE;
            }
        },
        _ => None,
    };
    match rockscout::raise_open_file_limit() {
        Ok(files) => tracing::debug!(files, "open file limit"),
        Err(e) => tracing::warn!(error = %e, "cannot raise the open file limit"),
    }
    let runtime = match tokio::runtime::Builder::new_multi_thread().enable_all().build() {
        Ok(runtime) => runtime,
        Err(e) => {
            eprintln!("rockscout: cannot start the async runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    if let Command::Snapshot(args) = &cli.command {
        return match runtime.block_on(rockscout::snapshot::take(&args.data_dir, &args.to)) {
            Ok(tip) => {
                let tip = tip.map_or("no blocks".to_owned(), |n| format!("tip {n}"));
                println!("snapshot of {} written to {} ({tip})", args.data_dir.display(), args.to.display());
                ExitCode::SUCCESS
            }
            Err(e) => {
                eprintln!("rockscout snapshot: {e}");
                ExitCode::FAILURE
            }
        };
    }
    let result = runtime.block_on(async {
        let cancel = rockscout::cancel_on_signals();
        match cli.command {
            Command::Run(args) => {
                rockscout::run(Config::from_args(args.rpc_url, args.ws_url, &args.daemon), cancel).await
            }
            Command::Dev(args) => rockscout::dev::run(args, cancel).await,
            Command::Serve(_) => {
                let (config, options) = replica.expect("checked before the runtime starts");
                rockscout::replica::run(config, options, cancel).await
            }
            Command::Account(_) | Command::Snapshot(_) => unreachable!("handled before the daemon starts"),
        }
    });
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            tracing::error!("{e}");
            ExitCode::FAILURE
        }
    }
}
