//! Shared by the benchmark programs: argument parsing, a chain generator that fills an anvil quickly (batched
//! JSON-RPC), and figure printing.
#![allow(dead_code)]

use alloy::primitives::{Address, U256};
use alloy::providers::{Provider, RootProvider};
use rockscout::dev::anvil::{self, Anvil, AnvilOptions};
use serde_json::json;

/// `--name value` from the command line (cargo's own `--bench` flag is ignored), or `default`.
pub fn arg<T: std::str::FromStr>(name: &str, default: T) -> T {
    let args: Vec<String> = std::env::args().collect();
    args.windows(2)
        .find(|w| w[0] == format!("--{name}"))
        .map(|w| w[1].parse().unwrap_or_else(|_| panic!("bad value for --{name}: {}", w[1])))
        .unwrap_or(default)
}

/// Starts an anvil that mines only on request.
pub fn start_anvil() -> Anvil {
    let bin = anvil::locate(None).unwrap_or_else(|e| panic!("{e}"));
    Anvil::spawn(&bin, &AnvilOptions { extra_args: vec!["--no-mining".into()], ..Default::default() })
        .unwrap_or_else(|e| panic!("{e}"))
}

/// Fills `blocks` blocks with `txs_per_block` ether transfers each (to fresh addresses, so address indexes
/// grow as on a real chain). Returns the number of transactions.
pub async fn fill_transfers(
    node: &RootProvider,
    url: &str,
    senders: &[Address],
    blocks: u64,
    txs_per_block: usize,
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
                let to = Address::from_word(U256::from(block * 1_000_000 + *i as u64 + 1).into());
                let tx = json!({"from": senders[s], "to": to, "value": "0x1", "gas": "0x5208", "nonce": nonces[s]});
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

/// Prints one figure line: name, value, unit.
pub fn figure(name: &str, value: f64, unit: &str) {
    println!("{name:<48} {value:>14.2} {unit}");
}
