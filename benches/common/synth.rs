//! A synthetic chain for the benchmarks that need more transactions than a node can produce in minutes: blocks of
//! EIP-1559 ether transfers (each to a fresh address, as the anvil generator sends them) mixed with ERC-20
//! `transfer` calls carrying their `Transfer` log, shaped field by field like what `indexer::bundle::from_rpc` builds from
//! anvil's answers. Deterministic: the same arguments give the same chain. Also the follower's chunking, to write it.

use alloy::primitives::{keccak256, Address, Bytes, B256, B64, U256};
use rockscout::chain::tokens::TRANSFER;
use rockscout::indexer::IndexerConfig;
use rockscout::store::records::Bundle;
use rockscout::store::records::{BlockRecord, LogRecord, TxBody, TxRecord};

/// What the chain is made of.
#[derive(Debug, Clone, Copy)]
pub struct Shape {
    /// Transactions per block.
    pub txs_per_block: usize,
    /// Every `erc20_every`-th transaction is an ERC-20 transfer (0: none).
    pub erc20_every: usize,
    /// Every `hot_every`-th transaction is sent by [`HOT`] (0: none), to give one address a long history.
    pub hot_every: usize,
    /// A long tail of busy senders besides [`HOT`] (0: none): one transaction in 8 is sent by one of
    /// [`tail_sender`]`(0..hot_tail)`, the `k`th taking half the share of the one before (1/16 of all
    /// transactions for the first, 1/32 for the second, …; the last takes what is left).
    pub hot_tail: usize,
}

/// The address with the long history.
pub const HOT: Address = Address::new([0x40; 20]);
/// The ERC-20 contract of the token transfers.
pub const TOKEN: Address = Address::new([0x70; 20]);
/// Distinct senders besides [`HOT`].
const SENDERS: u64 = 1_000;
const GWEI: u128 = 1_000_000_000;

/// The `i`th of the ordinary senders.
pub fn sender(i: u64) -> Address {
    Address::from_word(keccak256(i.to_be_bytes()))
}

/// The `k`th sender of the long tail of busy senders ([`Shape::hot_tail`]).
pub fn tail_sender(k: usize) -> Address {
    Address::from_word(keccak256([b"tail".as_slice(), &(k as u64).to_be_bytes()].concat()))
}

/// Which tail sender, if any, sends the `seq`th transaction: a multiplicative hash of `seq` spreads the choice
/// over the chain, its low 3 bits pick 1 in 8 and the number of trailing zeros above them the rank.
fn tail_rank(seq: u64, hot_tail: usize) -> Option<usize> {
    let mixed = seq.wrapping_mul(0x9e37_79b9_7f4a_7c15) >> 16;
    (hot_tail > 0 && mixed.is_multiple_of(8)).then(|| ((mixed >> 3).trailing_zeros() as usize).min(hot_tail - 1))
}

/// The recipient of the `seq`th transaction (its payee, or the receiver of its token transfer): a new address each.
pub fn recipient(seq: u64) -> Address {
    Address::from_word(keccak256([b"to".as_slice(), &seq.to_be_bytes()].concat()))
}

/// Hash of the `seq`th transaction of the chain (1-based, across blocks).
pub fn tx_hash(seq: u64) -> B256 {
    keccak256([b"tx".as_slice(), &seq.to_be_bytes()].concat())
}

fn block_hash(number: u64) -> B256 {
    keccak256([b"block".as_slice(), &number.to_be_bytes()].concat())
}

/// The three kinds of sender.
#[derive(Debug, Clone, Copy)]
enum Sender {
    Hot,
    Tail(usize),
    Plain(u64),
}

/// Generates blocks `from..from + count` of `shape`.
pub struct Chain {
    shape: Shape,
    next: u64,
    end: u64,
    nonces: Vec<u64>,
    hot_nonce: u64,
    tail_nonces: Vec<u64>,
    sequence: u64,
}

impl Chain {
    /// Blocks `from..from + count`, with every sender's nonce where blocks `0..from` left it (so a chain continued
    /// from `from` is the same chain).
    pub fn new(shape: Shape, from: u64, count: u64) -> Chain {
        let mut chain = Chain {
            shape,
            next: from,
            end: from + count,
            nonces: vec![0; SENDERS as usize],
            hot_nonce: 0,
            tail_nonces: vec![0; shape.hot_tail],
            sequence: from * shape.txs_per_block as u64,
        };
        for seq in 1..=chain.sequence {
            chain.take_nonce(seq);
        }
        chain
    }

    /// Who sends the `seq`th transaction, and its nonce (counted).
    fn take_nonce(&mut self, seq: u64) -> (Sender, u64) {
        let (sender, count) = if self.shape.hot_every > 0 && seq.is_multiple_of(self.shape.hot_every as u64) {
            (Sender::Hot, &mut self.hot_nonce)
        } else if let Some(rank) = tail_rank(seq, self.shape.hot_tail) {
            (Sender::Tail(rank), &mut self.tail_nonces[rank])
        } else {
            let s = seq % SENDERS;
            (Sender::Plain(s), &mut self.nonces[s as usize])
        };
        *count += 1;
        (sender, *count - 1)
    }

    fn tx(&mut self, index: usize, logs: &mut Vec<LogRecord>) -> TxRecord {
        self.sequence += 1;
        let seq = self.sequence;
        let hash = tx_hash(seq);
        let (who, nonce) = self.take_nonce(seq);
        let from = match who {
            Sender::Hot => HOT,
            Sender::Tail(rank) => tail_sender(rank),
            Sender::Plain(s) => sender(s),
        };
        let recipient = recipient(seq);
        let erc20 =
            self.shape.erc20_every > 0 && seq % self.shape.erc20_every as u64 == self.shape.erc20_every as u64 - 1;
        let first_log = logs.len() as u32;
        let (to, value, input, gas_used, log_count) = if erc20 {
            let amount = U256::from(seq % 1_000 + 1) * U256::from(10u64).pow(U256::from(18));
            let mut input = vec![0xa9, 0x05, 0x9c, 0xbb];
            input.extend_from_slice(recipient.into_word().as_slice());
            input.extend_from_slice(&amount.to_be_bytes::<32>());
            logs.push(LogRecord {
                address: TOKEN,
                topics: vec![TRANSFER, from.into_word(), recipient.into_word()],
                data: Bytes::from(amount.to_be_bytes::<32>().to_vec()),
                tx_index: index as u32,
                tx_hash: hash,
            });
            (TOKEN, U256::ZERO, Bytes::from(input), 34_481, 1)
        } else {
            (recipient, U256::from(10u64.pow(15) + seq), Bytes::new(), 21_000, 0)
        };
        TxRecord {
            body: TxBody {
                hash,
                from,
                to: Some(to),
                value,
                input,
                nonce,
                gas_limit: gas_used + gas_used / 2,
                gas_price: None,
                max_fee_per_gas: Some(3 * GWEI),
                max_priority_fee_per_gas: Some(GWEI),
                tx_type: 2,
            },
            status: Some(true),
            gas_used,
            effective_gas_price: 2 * GWEI,
            created: None,
            first_log,
            log_count,
            authorizations: Vec::new(),
            token_transfers: log_count,
            token_creation: false,
        }
    }
}

impl Iterator for Chain {
    type Item = Bundle;

    fn next(&mut self) -> Option<Bundle> {
        if self.next >= self.end {
            return None;
        }
        let number = self.next;
        self.next += 1;
        let mut logs = Vec::new();
        let txs: Vec<TxRecord> = (0..self.shape.txs_per_block).map(|i| self.tx(i, &mut logs)).collect();
        let gas_used: u64 = txs.iter().map(|t| t.gas_used).sum();
        let fees = U256::from(gas_used) * U256::from(2 * GWEI);
        let burnt = U256::from(gas_used) * U256::from(GWEI);
        let header = BlockRecord {
            number,
            hash: block_hash(number),
            parent_hash: number.checked_sub(1).map(block_hash).unwrap_or_default(),
            // ~400 ms blocks, as on the reference chain.
            timestamp: 1_767_225_600 + number * 2 / 5,
            miner: Address::new([0x0c; 20]),
            gas_used,
            gas_limit: 1_000_000_000,
            base_fee: Some(GWEI),
            size: Some(600 + 110 * txs.len() as u64),
            difficulty: U256::ZERO,
            total_difficulty: None,
            nonce: B64::ZERO,
            extra_data: Bytes::new(),
            uncles: Vec::new(),
            withdrawals_count: Some(0),
            blob_gas_used: Some(0),
            excess_blob_gas: Some(0),
            tx_count: txs.len() as u32,
            blob_tx_count: 0,
            log_count: logs.len() as u32,
            fees,
            burnt_fees: burnt,
            priority_fees: fees - burnt,
        };
        Some(Bundle { header, txs, logs, balances: Vec::new() })
    }
}

/// Splits blocks into the chunks the follower commits while catching up (`IndexerConfig::chunk_blocks` blocks
/// or `chunk_txs` transactions at most).
pub fn follower_chunks(blocks: &[Bundle], config: &IndexerConfig) -> Vec<std::ops::Range<usize>> {
    let mut out = Vec::new();
    let (mut start, mut txs) = (0, 0);
    for (i, block) in blocks.iter().enumerate() {
        if i > start && (i - start == config.chunk_blocks || txs + block.txs.len() > config.chunk_txs) {
            out.push(start..i);
            (start, txs) = (i, 0);
        }
        txs += block.txs.len();
    }
    out.push(start..blocks.len());
    out
}
