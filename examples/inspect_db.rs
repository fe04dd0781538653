//! Opens a rockscout data directory read-only (the daemon may keep running) and prints what it holds: chain
//! identity, tip, counters, and per table the number of rows, their bytes and the size of the SST files.
//!
//!     cargo run --release --example inspect_db -- rockscout-data

use rockscout::store::{Store, StoreOptions};
use std::collections::BTreeMap;

fn main() {
    let Some(dir) = std::env::args().nth(1) else {
        eprintln!("usage: inspect_db <data-dir>");
        std::process::exit(2);
    };
    let store = match Store::open(dir.as_ref(), &StoreOptions { read_only: true, ..Default::default() }) {
        Ok(store) => store,
        Err(e) => {
            eprintln!("cannot open {dir}: {e}");
            std::process::exit(1);
        }
    };
    let reader = store.reader();
    println!("data dir   {dir}");
    println!("identity   {:?}", reader.chain_identity().expect("identity"));
    println!("tip        {:?}", reader.tip().expect("tip"));
    println!("counters   {:?}", reader.counters().expect("counters"));
    let mut rows: BTreeMap<&str, (u64, u64)> = BTreeMap::new();
    for (table, key, value) in store.raw_rows().expect("rows") {
        let entry = rows.entry(table).or_default();
        entry.0 += 1;
        entry.1 += (key.len() + value.len()) as u64;
    }
    println!("\n{:<14} {:>10} {:>14} {:>14}", "table", "rows", "key+value B", "sst B");
    for (table, sst) in store.disk_usage().expect("disk usage") {
        let (count, bytes) = rows.get(table).copied().unwrap_or_default();
        println!("{table:<14} {count:>10} {bytes:>14} {sst:>14}");
    }
}
