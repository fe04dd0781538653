//! The growth bench's rows (one JSON line per segment) and what is made of them: a markdown table and a
//! hand-written SVG of tx/s, the longest write, bytes per transaction, memory and REST p99 against store size.

use serde::{Deserialize, Serialize};
use std::fmt::Write as _;
use std::path::Path;

/// The file in a growth store's directory that says what it holds (`rest_load --store` serves such a store as is).
pub const GROWTH_MARKER: &str = "growth.marker";

/// One segment of a growth run: figures at the store size `txs` (counters cumulative unless named per segment).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct SegmentRow {
    /// Transactions in the store at the end of the segment.
    pub txs: u64,
    /// The segment's transactions per second of wall time (waits for the generator included).
    pub tx_per_s: f64,
    /// The segment's transactions per second spent inside `write_chunk`.
    pub writer_tx_per_s: f64,
    /// Share of the segment's wall time the writer waited for the generator.
    pub waited_share: f64,
    /// The longest `write_chunk` call of the segment.
    pub longest_chunk_ms: f64,
    /// SST bytes written (flushes and compactions) per byte of write batches, in this segment.
    pub write_amp_segment: f64,
    /// The same since the store was created.
    pub write_amp: f64,
    /// Bytes of write batches (`rocksdb.bytes.written`).
    pub user_bytes: u64,
    /// Bytes written to the WAL.
    pub wal_bytes: u64,
    /// Bytes of SST files written by flushes.
    pub flush_bytes: u64,
    /// Bytes of SST files written by compactions.
    pub compact_write_bytes: u64,
    /// Bytes compactions read.
    pub compact_read_bytes: u64,
    /// Time writers were stalled by RocksDB in this segment (`rocksdb.stall.micros`).
    pub stall_ms_segment: f64,
    /// RocksDB's estimate of the bytes compaction still has to rewrite, summed over the tables.
    pub pending_compaction_bytes: u64,
    /// The rate RocksDB slows writes to (0: not delayed).
    pub delayed_write_rate: u64,
    /// Bytes of live SST files (not compacted fully: overwritten rows not yet dropped count).
    pub live_sst_bytes: u64,
    /// `live_sst_bytes` per transaction.
    pub live_bytes_per_tx: f64,
    /// The process's resident set.
    pub rss_bytes: u64,
    /// The process's peak resident set since writing started.
    pub peak_rss_bytes: u64,
    /// RocksDB's own memory: memtables (`rocksdb.size-all-mem-tables`, all tables).
    #[serde(default)]
    pub memtable_bytes: u64,
    /// The shared block cache's usage.
    #[serde(default)]
    pub block_cache_bytes: u64,
    /// Table readers' memory outside the block cache (`rocksdb.estimate-table-readers-mem`, all tables).
    #[serde(default)]
    pub table_readers_bytes: u64,
    /// Seconds since writing started.
    pub elapsed_s: f64,
    /// The machine's 1-minute load average when the segment ended.
    pub load_average: f64,
}

/// One REST measurement against a store of `txs` transactions (written by `rest_load` next to a growth store).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct RestRow {
    pub txs: u64,
    pub endpoint: String,
    pub req_per_s: f64,
    pub p50_ms: f64,
    pub p99_ms: f64,
    pub bare_req_per_s: f64,
    pub ratio: f64,
}

/// The rows of a JSON-lines file that parse as `T` (other lines, such as a run's summary, are skipped).
pub fn read_rows<T: for<'de> Deserialize<'de>>(path: &Path) -> Vec<T> {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    text.lines().filter_map(|line| serde_json::from_str(line).ok()).collect()
}

/// Prints the rows as a markdown table.
pub fn print_table(rows: &[SegmentRow]) {
    println!("\n| store size | tx/s | writer tx/s | waited | longest write | stall | WA (segment / total) | pending compaction | live B/tx | RSS (peak) | memtables + cache + readers | load |");
    println!("|---|---|---|---|---|---|---|---|---|---|---|---|");
    for r in rows {
        println!(
            "| {}M | {:.1}k | {:.1}k | {:.0} % | {:.0} ms | {:.0} ms | {:.1} / {:.1} | {:.0} MiB | {:.0} | {:.0} MiB ({:.0}) | {:.0} + {:.0} + {:.0} MiB | {:.1} |",
            trim(r.txs as f64 / 1e6),
            r.tx_per_s / 1e3,
            r.writer_tx_per_s / 1e3,
            r.waited_share * 100.0,
            r.longest_chunk_ms,
            r.stall_ms_segment,
            r.write_amp_segment,
            r.write_amp,
            r.pending_compaction_bytes as f64 / (1 << 20) as f64,
            r.live_bytes_per_tx,
            r.rss_bytes as f64 / (1 << 20) as f64,
            r.peak_rss_bytes as f64 / (1 << 20) as f64,
            r.memtable_bytes as f64 / (1 << 20) as f64,
            r.block_cache_bytes as f64 / (1 << 20) as f64,
            r.table_readers_bytes as f64 / (1 << 20) as f64,
            r.load_average,
        );
    }
}

/// Reads the rows (and REST rows), prints the table and writes the SVG.
pub fn render(rows_path: &Path, rest_path: Option<&Path>, svg_path: &Path) {
    let rows: Vec<SegmentRow> = read_rows(rows_path);
    let rest: Vec<RestRow> = rest_path.map(read_rows).unwrap_or_default();
    print_table(&rows);
    if !rest.is_empty() {
        println!("\n| store size | endpoint | req/s | p50 ms | p99 ms | bare req/s | ratio |");
        println!("|---|---|---|---|---|---|---|");
        for r in &rest {
            println!(
                "| {}M | {} | {:.0} | {:.2} | {:.2} | {:.0} | {:.2} |",
                trim(r.txs as f64 / 1e6),
                r.endpoint.trim(),
                r.req_per_s,
                r.p50_ms,
                r.p99_ms,
                r.bare_req_per_s,
                r.ratio
            );
        }
    }
    std::fs::write(svg_path, svg(&rows, &rest)).unwrap();
    println!("\nwrote {}", svg_path.display());
}

const WIDTH: f64 = 880.0;
const PANEL: f64 = 170.0;
const LEFT: f64 = 70.0;
const RIGHT: f64 = 260.0;
/// One colour per series of a panel: the REST panel has nine endpoints.
const COLORS: [&str; 10] =
    ["#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf"];

/// A dashed line across a panel: value and label.
type Target = (f64, &'static str);

/// A named line of (store size in M transactions, value) points.
struct Series {
    label: String,
    points: Vec<(f64, f64)>,
}

/// The SVG: one panel per figure, store size (M transactions) on every x axis, targets as dashed lines.
fn svg(rows: &[SegmentRow], rest: &[RestRow]) -> String {
    let size = |txs: u64| txs as f64 / 1e6;
    let line = |label: &str, value: &dyn Fn(&SegmentRow) -> f64| Series {
        label: label.into(),
        points: rows.iter().map(|r| (size(r.txs), value(r))).collect(),
    };
    let mib = |b: u64| b as f64 / (1 << 20) as f64;
    let mut panels: Vec<(&str, Vec<Series>, Option<Target>)> = vec![
        (
            "transactions per second, per segment",
            vec![line("wall", &|r| r.tx_per_s), line("inside write_chunk", &|r| r.writer_tx_per_s)],
            Some((50_000.0, "target 50k")),
        ),
        (
            "longest write_chunk and stall time per segment (ms)",
            vec![line("longest write_chunk", &|r| r.longest_chunk_ms), line("RocksDB stall", &|r| r.stall_ms_segment)],
            Some((1000.0, "1 s")),
        ),
        (
            "live SST bytes per transaction (not compacted fully)",
            vec![line("live B/tx", &|r| r.live_bytes_per_tx)],
            Some((150.0, "150 after compaction")),
        ),
        (
            "resident set (MiB)",
            vec![line("RSS", &|r| mib(r.rss_bytes)), line("peak RSS", &|r| mib(r.peak_rss_bytes))],
            Some((300e6 / (1 << 20) as f64, "300 MB")),
        ),
    ];
    if !rest.is_empty() {
        let mut endpoints: Vec<&str> = Vec::new();
        for r in rest {
            if !endpoints.contains(&r.endpoint.as_str()) {
                endpoints.push(&r.endpoint);
            }
        }
        let series = endpoints
            .iter()
            .map(|e| Series {
                label: e.trim().chars().take(24).collect(),
                points: rest.iter().filter(|r| r.endpoint == *e).map(|r| (size(r.txs), r.p99_ms)).collect(),
            })
            .collect();
        panels.push(("REST p99 (ms)", series, Some((5.0, "5 ms"))));
    }
    let x_max = rows.iter().map(|r| size(r.txs)).chain(rest.iter().map(|r| size(r.txs))).fold(1.0, f64::max);
    let height = 40.0 + PANEL * panels.len() as f64;
    let mut out = String::new();
    writeln!(
        out,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{height}" font-family="sans-serif" font-size="11">"#
    )
    .unwrap();
    writeln!(out, r#"<rect width="100%" height="100%" fill="white"/>"#).unwrap();
    writeln!(
        out,
        r#"<text x="{LEFT}" y="20" font-size="14">rockscout growth: figures against store size (M transactions)</text>"#
    )
    .unwrap();
    for (i, (title, series, target)) in panels.iter().enumerate() {
        panel(&mut out, 40.0 + PANEL * i as f64, title, series, *target, x_max);
    }
    out.push_str("</svg>\n");
    out
}

fn panel(out: &mut String, top: f64, title: &str, series: &[Series], target: Option<Target>, x_max: f64) {
    let (plot_top, plot_bottom) = (top + 18.0, top + PANEL - 28.0);
    let (plot_left, plot_right) = (LEFT, WIDTH - RIGHT);
    let values = series.iter().flat_map(|s| s.points.iter().map(|p| p.1)).chain(target.map(|t| t.0));
    let y_max = nice_ceiling(values.filter(|v| v.is_finite()).fold(0.0, f64::max));
    let x = |v: f64| plot_left + (plot_right - plot_left) * v / x_max;
    let y = |v: f64| plot_bottom - (plot_bottom - plot_top) * v / y_max;
    writeln!(out, r#"<text x="{plot_left}" y="{}" font-weight="bold">{title}</text>"#, top + 10.0).unwrap();
    writeln!(out, r##"<path d="M{plot_left} {plot_top} V{plot_bottom} H{plot_right}" stroke="#444" fill="none"/>"##)
        .unwrap();
    for step in 0..=4 {
        let v = y_max * step as f64 / 4.0;
        writeln!(
            out,
            r##"<text x="{}" y="{:.1}" text-anchor="end">{}</text><line x1="{plot_left}" x2="{plot_right}" y1="{:.1}" y2="{:.1}" stroke="#eee"/>"##,
            plot_left - 4.0,
            y(v) + 4.0,
            short(v),
            y(v),
            y(v)
        )
        .unwrap();
    }
    for step in 0..=5 {
        let v = x_max * step as f64 / 5.0;
        writeln!(out, r#"<text x="{:.1}" y="{}" text-anchor="middle">{}M</text>"#, x(v), plot_bottom + 14.0, short(v))
            .unwrap();
    }
    if let Some((value, label)) = target {
        // Inside the plot, right-aligned (the legend has the space right of it): under its line, or over it when
        // the line runs along the axis.
        let under = y(value) + 12.0;
        let label_y = if under > plot_bottom - 2.0 { y(value) - 4.0 } else { under };
        writeln!(
            out,
            r##"<line x1="{plot_left}" x2="{plot_right}" y1="{0:.1}" y2="{0:.1}" stroke="#999" stroke-dasharray="5,4"/><text x="{1}" y="{label_y:.1}" text-anchor="end" fill="#777">{label}</text>"##,
            y(value),
            plot_right - 4.0,
        )
        .unwrap();
    }
    for (i, s) in series.iter().enumerate() {
        let color = COLORS[i % COLORS.len()];
        let points: Vec<String> = s.points.iter().map(|&(px, py)| format!("{:.1},{:.1}", x(px), y(py))).collect();
        writeln!(out, r#"<polyline points="{}" fill="none" stroke="{color}" stroke-width="2"/>"#, points.join(" "))
            .unwrap();
        for &(px, py) in &s.points {
            writeln!(out, r#"<circle cx="{:.1}" cy="{:.1}" r="2.5" fill="{color}"/>"#, x(px), y(py)).unwrap();
        }
        writeln!(
            out,
            r#"<text x="{}" y="{}" fill="{color}">{}</text>"#,
            plot_right + 4.0,
            plot_top + 14.0 * i as f64 + 8.0,
            s.label
        )
        .unwrap();
    }
}

/// 1, 2 or 5 times a power of ten at or above `v`.
fn nice_ceiling(v: f64) -> f64 {
    if v <= 0.0 {
        return 1.0;
    }
    let power = 10f64.powf(v.log10().floor());
    [1.0, 2.0, 5.0, 10.0].iter().map(|m| m * power).find(|c| *c >= v).unwrap_or(10.0 * power)
}

/// A short axis label: 50k, 1.5M, 0.25.
fn short(v: f64) -> String {
    if v >= 1e6 {
        format!("{}M", trim(v / 1e6))
    } else if v >= 1e3 {
        format!("{}k", trim(v / 1e3))
    } else {
        trim(v)
    }
}

fn trim(v: f64) -> String {
    let text = format!("{v:.2}");
    text.trim_end_matches('0').trim_end_matches('.').to_string()
}
