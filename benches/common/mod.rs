//! Shared by the benchmark programs: argument parsing, a chain generator that fills an anvil quickly (batched
//! JSON-RPC), memory readings, figure printing and a WebSocket client.
#![allow(dead_code)]

pub mod growth_plot;
pub mod synth;

use alloy::primitives::{Address, Bytes, B256, U256};
use alloy::providers::{Provider, RootProvider};
use alloy::sol_types::{SolCall, SolConstructor};
use rockscout::dev::anvil::{self, Anvil, AnvilOptions};
use rockscout::dev::contracts::DemoToken;
use serde_json::json;

/// `--name value` from the command line (cargo's own `--bench` flag is ignored), or `default`.
pub fn arg<T: std::str::FromStr>(name: &str, default: T) -> T {
    let args: Vec<String> = std::env::args().collect();
    args.windows(2)
        .find(|w| w[0] == format!("--{name}"))
        .map(|w| w[1].parse().unwrap_or_else(|_| panic!("bad value for --{name}: {}", w[1])))
        .unwrap_or(default)
}

/// `--zstd-dictionary TABLES` as the daemon reads it (`off`, `transactions`, `all`; `false` and `true` too), or the
/// daemon's default.
pub fn zstd_dictionary_arg() -> rockscout::store::ZstdDictionary {
    let value = arg("zstd-dictionary", "transactions".to_string());
    <rockscout::store::ZstdDictionary as clap::ValueEnum>::from_str(&value, true)
        .unwrap_or_else(|e| panic!("bad value for --zstd-dictionary: {e}"))
}

/// Starts an anvil that mines only on request.
pub fn start_anvil() -> Anvil {
    start_anvil_with(&[])
}

/// Starts an anvil that mines only on request, with more command-line arguments.
pub fn start_anvil_with(args: &[&str]) -> Anvil {
    let bin = anvil::locate(None).unwrap_or_else(|e| panic!("{e}"));
    let extra_args = ["--no-mining"].iter().chain(args).map(|a| a.to_string()).collect();
    Anvil::spawn(&bin, &AnvilOptions { extra_args, ..Default::default() }).unwrap_or_else(|e| panic!("{e}"))
}

/// Deploys the demo ERC-20 token and mints a balance to every sender (two mined blocks). Returns its address.
pub async fn deploy_token(node: &RootProvider, senders: &[Address]) -> Address {
    let supply = U256::from(10u64).pow(U256::from(30));
    let constructor =
        DemoToken::constructorCall { name_: "Bench".into(), symbol_: "BNCH".into(), initialSupply: supply };
    let code = [DemoToken::BYTECODE.as_ref(), &constructor.abi_encode()].concat();
    let deploy = json!({"from": senders[0], "data": Bytes::from(code), "gas": "0x4c4b40"});
    let hash: B256 = node.raw_request("eth_sendTransaction".into(), (deploy,)).await.unwrap();
    let _: serde_json::Value = node.raw_request("anvil_mine".into(), json!([1])).await.unwrap();
    let receipt = node.get_transaction_receipt(hash).await.unwrap().expect("deployment receipt");
    let token = receipt.contract_address.expect("token deployed");
    for sender in senders {
        let mint = DemoToken::mintCall { to: *sender, value: supply }.abi_encode();
        let tx = json!({"from": senders[0], "to": token, "data": Bytes::from(mint), "gas": "0x30d40"});
        let _: B256 = node.raw_request("eth_sendTransaction".into(), (tx,)).await.unwrap();
    }
    let _: serde_json::Value = node.raw_request("anvil_mine".into(), json!([1])).await.unwrap();
    token
}

/// Fills `blocks` blocks with `txs_per_block` transfers each, to fresh addresses so address indexes grow as on
/// a real chain (or, with `recipients > 0`, to that many addresses in turn: anvil's own speed falls as its
/// state grows, to ~500 tx/s past 400,000 fresh accounts): ether transfers, or with `erc20 = Some((token, n))`
/// every `n`th one a transfer of `token` (see [`deploy_token`]). Returns the number of transactions.
pub async fn fill_transfers(
    node: &RootProvider,
    url: &str,
    senders: &[Address],
    blocks: u64,
    txs_per_block: usize,
    erc20: Option<(Address, usize)>,
    recipients: u64,
) -> u64 {
    let client = alloy::rpc::client::RpcClient::new_http(url.parse().unwrap());
    let mut sent = 0u64;
    // Explicit nonces: a batch is processed concurrently, so anvil cannot assign them in order.
    let mut nonces = Vec::new();
    for sender in senders {
        nonces.push(node.get_transaction_count(*sender).await.unwrap());
    }
    for block in 0..blocks {
        for chunk in (0..txs_per_block).collect::<Vec<_>>().chunks(200) {
            let mut batch = client.new_batch();
            let mut waiting = Vec::new();
            for i in chunk {
                let s = *i % senders.len();
                let seq = block * 1_000_000 + *i as u64;
                let to = Address::from_word(U256::from(if recipients > 0 { seq % recipients } else { seq } + 1).into());
                let tx = match erc20 {
                    Some((token, every)) if (*i + 1) % every == 0 => {
                        let data = Bytes::from(DemoToken::transferCall { to, value: U256::from(1) }.abi_encode());
                        json!({"from": senders[s], "to": token, "data": data, "gas": "0x186a0", "nonce": nonces[s]})
                    }
                    _ => json!({"from": senders[s], "to": to, "value": "0x1", "gas": "0x5208", "nonce": nonces[s]}),
                };
                nonces[s] += 1;
                waiting.push(batch.add_call::<_, serde_json::Value>("eth_sendTransaction", &(tx,)).unwrap());
            }
            batch.send().await.expect("batch sent");
            for w in waiting {
                w.await.expect("transaction accepted");
            }
            sent += chunk.len() as u64;
        }
        let _: serde_json::Value = node.raw_request("anvil_mine".into(), json!([1])).await.unwrap();
    }
    sent
}

/// Resets this process's peak-RSS mark to its current resident set (Linux, `man 5 proc`: clear_refs value 5).
pub fn reset_peak_rss() {
    std::fs::write("/proc/self/clear_refs", "5").expect("reset the peak RSS mark");
}

/// The peak resident set of this process since the last [`reset_peak_rss`] (`VmHWM`), in bytes.
pub fn peak_rss() -> u64 {
    proc_status_kib("VmHWM:") * 1024
}

/// The current resident set of this process (`VmRSS`), in bytes.
pub fn rss() -> u64 {
    proc_status_kib("VmRSS:") * 1024
}

fn proc_status_kib(field: &str) -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    let line = status.lines().find(|l| l.starts_with(field)).expect("field of /proc/self/status");
    line.split_whitespace().nth(1).unwrap().parse().unwrap()
}

/// Prints one figure line: name, value, unit.
pub fn figure(name: &str, value: f64, unit: &str) {
    println!("{name:<48} {value:>14.2} {unit}");
}

/// The integration tests' WebSocket client (fastwebsockets' client handshake), shared rather than copied.
#[path = "../../tests/it/support/ws.rs"]
pub mod ws;

/// The `p`th percentile (0–100) of `sorted` values.
pub fn percentile(sorted: &[f64], p: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    let rank = ((sorted.len() - 1) as f64 * p / 100.0).round() as usize;
    sorted[rank]
}

/// CPU seconds this process has used so far (user and system, all threads), from `/proc/self/stat` (clock ticks
/// of 10 ms: meant for runs of seconds). Unlike latency, CPU time per request barely moves when other programs
/// share the cores.
pub fn cpu_seconds() -> f64 {
    stat_cpu_seconds("/proc/self/stat")
}

/// [`cpu_seconds`] of another process (a node the bench started).
pub fn process_cpu_seconds(pid: u32) -> f64 {
    stat_cpu_seconds(&format!("/proc/{pid}/stat"))
}

fn stat_cpu_seconds(path: &str) -> f64 {
    let stat = std::fs::read_to_string(path).unwrap();
    // Fields after the command name (which is in parentheses and may contain spaces): utime and stime are the 12th
    // and 13th of them.
    let fields: Vec<&str> = stat.rsplit_once(')').unwrap().1.split_whitespace().collect();
    let ticks: f64 = fields[11].parse::<f64>().unwrap() + fields[12].parse::<f64>().unwrap();
    ticks / 100.0
}
