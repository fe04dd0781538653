//! Logging: tracing-subscriber with `RUST_LOG` filtering (default `info`), as text or JSON lines.

use crate::config::LogFormat;
use tracing_subscriber::EnvFilter;

/// Installs the global subscriber (a second call is a no-op).
pub fn init(format: LogFormat) {
    let filter = EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new("info"));
    // Colours only for a terminal: a file or the journal would keep the escape codes as text.
    let colour = std::io::IsTerminal::is_terminal(&std::io::stderr());
    let builder = tracing_subscriber::fmt().with_env_filter(filter).with_writer(std::io::stderr).with_ansi(colour);
    let _ = match format {
        LogFormat::Text => builder.try_init(),
        LogFormat::Json => builder.json().try_init(),
    };
}
