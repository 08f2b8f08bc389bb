//! The `tern` binary: parses the command line and runs the chosen command.

use clap::Parser;

fn main() -> std::process::ExitCode {
    let cli = tern::cli::Cli::parse();
    tern::cli::init_logging(cli.log_format);
    match tern::cli::run(cli) {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("error: {error:#}");
            std::process::ExitCode::FAILURE
        }
    }
}
