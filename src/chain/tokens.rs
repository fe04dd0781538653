//! Token transfers decoded from logs (pure): ERC-20 and ERC-721 `Transfer` (3 or 4 topics, or 1 with everything in the
//! data as early ERC-721 contracts emit it), ERC-1155
//! `TransferSingle` and `TransferBatch` (split into items). A log that does not have exactly the standard shape
//! (topic count, data length, clean address topics, matching batch arrays) yields nothing: a contract that emits
//! malformed events never breaks indexing or poisons a block.

use crate::store::records::{LogRecord, TokenKind, TokenTransferRecord};
use alloy::primitives::{b256, Address, B256, U256};
use alloy::sol_types::SolValue;

/// `Transfer(address,address,uint256)`.
pub const TRANSFER: B256 = b256!("ddf252ad1be2c89b69c2b068fc378daa952ba7f163c4a11628f55a4df523b3ef");
/// `TransferSingle(address,address,address,uint256,uint256)`.
pub const TRANSFER_SINGLE: B256 = b256!("c3d58168c5ae7397731d063d5bbf3d657854427343f4c083240f7aacaa2d0f62");
/// `TransferBatch(address,address,address,uint256[],uint256[])`.
pub const TRANSFER_BATCH: B256 = b256!("4a39dc06d4c0dbc64b70af90fd698a233a518aa5d07e595d983b8c0526c8f7fb");

/// Most items taken from one `TransferBatch` (an item's index in its log is 16 bits); a larger batch is treated as
/// malformed.
pub const MAX_BATCH_ITEMS: usize = 1 << 16;

/// An address topic: 12 zero bytes, then the address.
fn topic_address(topic: &B256) -> Option<Address> {
    topic[..12].iter().all(|b| *b == 0).then(|| Address::from_slice(&topic[12..]))
}

fn word(data: &[u8], index: usize) -> U256 {
    U256::from_be_slice(&data[index * 32..(index + 1) * 32])
}

/// The transfers one log carries (none when it is not a well-formed transfer event).
pub fn decode(log: &LogRecord) -> Vec<TokenTransferRecord> {
    let transfer = |from, to, kind, token_id, amount| TokenTransferRecord {
        token: log.address,
        from,
        to,
        kind,
        token_id,
        amount,
        tx_index: log.tx_index,
        tx_hash: log.tx_hash,
    };
    let topics = &log.topics;
    let data = &log.data[..];
    match topics.first() {
        Some(t) if *t == TRANSFER && topics.len() == 3 && data.len() == 32 => {
            match (topic_address(&topics[1]), topic_address(&topics[2])) {
                (Some(from), Some(to)) => vec![transfer(from, to, TokenKind::Erc20, None, word(data, 0))],
                _ => vec![],
            }
        }
        Some(t) if *t == TRANSFER && topics.len() == 4 && data.is_empty() => {
            match (topic_address(&topics[1]), topic_address(&topics[2])) {
                (Some(from), Some(to)) => {
                    let id = U256::from_be_bytes(topics[3].0);
                    vec![transfer(from, to, TokenKind::Erc721, Some(id), U256::from(1))]
                }
                _ => vec![],
            }
        }
        // ERC-721 before the standard indexed its parameters (CryptoKitties): all three in the data.
        Some(t) if *t == TRANSFER && topics.len() == 1 && data.len() == 96 => {
            let address = |index: usize| topic_address(&B256::from_slice(&data[index * 32..(index + 1) * 32]));
            match (address(0), address(1)) {
                (Some(from), Some(to)) => {
                    vec![transfer(from, to, TokenKind::Erc721, Some(word(data, 2)), U256::from(1))]
                }
                _ => vec![],
            }
        }
        Some(t) if *t == TRANSFER_SINGLE && topics.len() == 4 && data.len() == 64 => {
            match (topic_address(&topics[2]), topic_address(&topics[3])) {
                (Some(from), Some(to)) => {
                    vec![transfer(from, to, TokenKind::Erc1155, Some(word(data, 0)), word(data, 1))]
                }
                _ => vec![],
            }
        }
        Some(t) if *t == TRANSFER_BATCH && topics.len() == 4 => {
            let (Some(from), Some(to)) = (topic_address(&topics[2]), topic_address(&topics[3])) else {
                return vec![];
            };
            match <(Vec<U256>, Vec<U256>)>::abi_decode_params(data) {
                Ok((ids, values)) if ids.len() == values.len() && ids.len() <= MAX_BATCH_ITEMS => ids
                    .into_iter()
                    .zip(values)
                    .map(|(id, value)| transfer(from, to, TokenKind::Erc1155, Some(id), value))
                    .collect(),
                _ => vec![],
            }
        }
        _ => vec![],
    }
}

/// Blockscout's transfer type: minting (from zero), burning (to zero), spawning (both), or a plain transfer.
pub fn transfer_type(t: &TokenTransferRecord) -> &'static str {
    match (t.from.is_zero(), t.to.is_zero()) {
        (true, true) => "token_spawning",
        (true, false) => "token_minting",
        (false, true) => "token_burning",
        (false, false) => "token_transfer",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloy::primitives::{keccak256, Bytes};

    fn log(topics: Vec<B256>, data: Vec<u8>) -> LogRecord {
        LogRecord {
            address: Address::repeat_byte(0x70),
            topics,
            data: Bytes::from(data),
            tx_index: 1,
            tx_hash: B256::repeat_byte(1),
        }
    }

    fn addr_topic(a: Address) -> B256 {
        a.into_word()
    }

    #[test]
    fn signatures_are_the_keccak_of_the_events() {
        assert_eq!(TRANSFER, keccak256("Transfer(address,address,uint256)"));
        assert_eq!(TRANSFER_SINGLE, keccak256("TransferSingle(address,address,address,uint256,uint256)"));
        assert_eq!(TRANSFER_BATCH, keccak256("TransferBatch(address,address,address,uint256[],uint256[])"));
    }

    #[test]
    fn decodes_each_standard() {
        let (a, b) = (Address::repeat_byte(0xa), Address::repeat_byte(0xb));
        let erc20 = decode(&log(vec![TRANSFER, addr_topic(a), addr_topic(b)], U256::from(500).to_be_bytes_vec()));
        assert_eq!(
            (erc20[0].kind, erc20[0].from, erc20[0].to, erc20[0].amount),
            (TokenKind::Erc20, a, b, U256::from(500))
        );
        let erc721 =
            decode(&log(vec![TRANSFER, addr_topic(Address::ZERO), addr_topic(b), B256::with_last_byte(7)], vec![]));
        assert_eq!(
            (erc721[0].kind, erc721[0].token_id, transfer_type(&erc721[0])),
            (TokenKind::Erc721, Some(U256::from(7)), "token_minting")
        );
        let mut single = U256::from(3).to_be_bytes_vec();
        single.extend(U256::from(40).to_be_bytes_vec());
        let erc1155 =
            decode(&log(vec![TRANSFER_SINGLE, addr_topic(a), addr_topic(a), addr_topic(Address::ZERO)], single));
        assert_eq!(
            (erc1155[0].token_id, erc1155[0].amount, transfer_type(&erc1155[0])),
            (Some(U256::from(3)), U256::from(40), "token_burning")
        );
        let legacy = decode(&log(vec![TRANSFER], (a, b, U256::from(77)).abi_encode_params()));
        assert_eq!(
            (legacy[0].kind, legacy[0].from, legacy[0].to, legacy[0].token_id, legacy[0].amount),
            (TokenKind::Erc721, a, b, Some(U256::from(77)), U256::from(1))
        );
        let batch_data = (vec![U256::from(1), U256::from(2)], vec![U256::from(10), U256::from(20)]).abi_encode_params();
        let batch = decode(&log(vec![TRANSFER_BATCH, addr_topic(a), addr_topic(a), addr_topic(b)], batch_data));
        assert_eq!(
            batch.iter().map(|t| (t.token_id.unwrap(), t.amount)).collect::<Vec<_>>(),
            vec![(U256::from(1), U256::from(10)), (U256::from(2), U256::from(20))]
        );
    }

    #[test]
    fn malformed_events_yield_nothing() {
        let (a, b) = (Address::repeat_byte(0xa), Address::repeat_byte(0xb));
        let cases = [
            log(vec![TRANSFER, addr_topic(a)], U256::from(1).to_be_bytes_vec()),
            log(vec![TRANSFER, addr_topic(a), addr_topic(b)], vec![1, 2, 3]),
            log(vec![TRANSFER, B256::repeat_byte(0xff), addr_topic(b)], U256::from(1).to_be_bytes_vec()),
            log(vec![TRANSFER, addr_topic(a), addr_topic(b), B256::ZERO], vec![0; 32]),
            log(vec![TRANSFER], [vec![0xff; 32], vec![0; 64]].concat()),
            log(vec![TRANSFER], vec![0; 64]),
            log(vec![TRANSFER_SINGLE, addr_topic(a), addr_topic(a), addr_topic(b)], vec![0; 32]),
            log(vec![TRANSFER_BATCH, addr_topic(a), addr_topic(a), addr_topic(b)], vec![0xff; 100]),
            log(
                vec![TRANSFER_BATCH, addr_topic(a), addr_topic(a), addr_topic(b)],
                (vec![U256::from(1)], Vec::<U256>::new()).abi_encode_params(),
            ),
            log(
                vec![TRANSFER_BATCH, addr_topic(a), addr_topic(a), addr_topic(b)],
                (vec![U256::from(1); MAX_BATCH_ITEMS + 1], vec![U256::from(1); MAX_BATCH_ITEMS + 1])
                    .abi_encode_params(),
            ),
            log(vec![], vec![]),
        ];
        for (i, l) in cases.iter().enumerate() {
            assert!(decode(l).is_empty(), "case {i}");
        }
        let largest = (vec![U256::from(1); MAX_BATCH_ITEMS], vec![U256::from(1); MAX_BATCH_ITEMS]).abi_encode_params();
        let largest = decode(&log(vec![TRANSFER_BATCH, addr_topic(a), addr_topic(a), addr_topic(b)], largest));
        assert_eq!(largest.len(), MAX_BATCH_ITEMS, "the largest batch whose item indexes fit 16 bits");
    }
}
