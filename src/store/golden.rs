//! Golden bytes of every stored value type: one sample value per table (every variant of `meta`), encoded by the
//! codec and compared with the bytes pinned here. Adding, removing, reordering or retyping a field of a stored
//! record changes stored bytes, fails this test, and so forces a schema-version decision (see docs/schema.md).

use super::codec::encode;
use super::records::*;
use super::tables::*;
use alloy::primitives::{Address, Bytes, B256, B64, U256};

fn address(n: u8) -> Address {
    Address::repeat_byte(n)
}

fn hash(n: u8) -> B256 {
    B256::repeat_byte(n)
}

pub(super) fn sample_block() -> BlockRecord {
    BlockRecord {
        number: 7,
        hash: hash(1),
        parent_hash: hash(2),
        timestamp: 1_700_000_000,
        miner: address(3),
        gas_used: 21_000,
        gas_limit: 30_000_000,
        base_fee: Some(1_000_000_007),
        size: Some(612),
        difficulty: U256::from(2),
        total_difficulty: Some(U256::from(14)),
        nonce: B64::repeat_byte(4),
        extra_data: Bytes::from_static(&[5, 6]),
        uncles: vec![hash(7)],
        withdrawals_count: Some(1),
        blob_gas_used: Some(131_072),
        excess_blob_gas: None,
        tx_count: 2,
        blob_tx_count: 1,
        log_count: 3,
        fees: U256::from(10u64.pow(15)),
        burnt_fees: U256::from(21_000u64 * 1_000_000_007),
        priority_fees: U256::from(9),
    }
}

fn sample_body() -> TxBody {
    TxBody {
        hash: hash(8),
        from: address(9),
        to: Some(address(10)),
        value: U256::from(10u64.pow(18)),
        input: Bytes::from_static(&[0xa9, 0x05, 0x9c, 0xbb]),
        nonce: 11,
        gas_limit: 100_000,
        gas_price: None,
        max_fee_per_gas: Some(2_000_000_000),
        max_priority_fee_per_gas: Some(1_000_000_000),
        tx_type: 2,
    }
}

fn sample_authorization() -> AuthorizationRecord {
    AuthorizationRecord {
        chain_id: U256::from(713_714),
        address: address(12),
        nonce: 3,
        y_parity: 1,
        r: U256::from(13),
        s: U256::from(14),
        authority: Some(address(15)),
        status: Some(AuthorizationStatus::InvalidNonce),
    }
}

pub(crate) fn sample_tx() -> TxRecord {
    TxRecord {
        body: sample_body(),
        status: Some(true),
        gas_used: 51_234,
        effective_gas_price: 1_500_000_000,
        created: None,
        first_log: 1,
        log_count: 2,
        authorizations: vec![sample_authorization()],
        token_transfers: 1,
        token_creation: false,
    }
}

fn sample_pending() -> PendingTxRecord {
    PendingTxRecord { body: sample_body(), first_seen_ms: 1_700_000_000_123 }
}

/// `(table, hex of the encoded sample)` for every sample.
fn sample_credential(expires_ms: Option<u64>) -> CredentialRecord {
    CredentialRecord {
        owner: address(40),
        name: "ci".into(),
        secret_hash: hash(46),
        created_ms: 1_700_000_000_000,
        expires_ms,
    }
}

fn encoded() -> Vec<(&'static str, String)> {
    fn row<T: Table>(value: &T::Value) -> (&'static str, String) {
        (T::NAME, alloy::hex::encode(encode(value).expect("samples encode")))
    }
    let seen = Seen { block: 5, timestamp: 1_700_000_000 };
    let tip = Tip { number: 9, hash: hash(16) };
    vec![
        row::<MetaTable>(&Meta::SchemaVersion(1)),
        row::<MetaTable>(&Meta::DbState(DbState::Clean)),
        row::<MetaTable>(&Meta::ChainId(713_714)),
        row::<MetaTable>(&Meta::Genesis(hash(17))),
        row::<MetaTable>(&Meta::Tip(tip)),
        row::<MetaTable>(&Meta::Counters(Counters { blocks: 10, txs: 20, addresses: 30, gas_used: 40 })),
        row::<MetaTable>(&Meta::TraceTip(tip)),
        row::<MetaTable>(&Meta::BalanceTip(tip)),
        row::<MetaTable>(&Meta::NameRegistry(Some(address(19)))),
        row::<Headers>(&sample_block()),
        row::<BlockHashes>(&7),
        row::<Transactions>(&sample_tx()),
        row::<TxHashes>(&()),
        row::<Logs>(&LogRecord {
            address: address(18),
            topics: vec![hash(19), hash(20)],
            data: Bytes::from_static(&[1, 2, 3]),
            tx_index: 1,
            tx_hash: hash(8),
        }),
        row::<AddressTxs>(&(role::FROM | role::CREATED)),
        row::<AddressLogs>(&()),
        row::<Accounts>(&AccountRecord {
            first_seen: seen,
            last_seen: Seen { block: 6, timestamp: 1_700_000_001 },
            tx_count: 3,
            gas_used: 63_000,
            gas_received: 42_000,
            blocks_mined: 1,
            log_count: 2,
            token_transfer_count: 4,
            creation: Some(Creation { creator: address(21), tx: hash(22), success: true }),
        }),
        row::<Reorged>(&sample_block()),
        row::<Transfers>(&TokenTransferRecord {
            token: address(23),
            from: Address::ZERO,
            to: address(24),
            kind: TokenKind::Erc1155,
            token_id: Some(U256::from(25)),
            amount: U256::from(26),
            tx_index: 1,
            tx_hash: hash(8),
        }),
        row::<AddressTransfers>(&2),
        row::<TokenTransfers>(&()),
        row::<Tokens>(&TokenRecord {
            kind: TokenKind::Erc721,
            holders: 27,
            transfers: 28,
            total_supply: U256::from(29),
            first_block: 30,
        }),
        row::<TokenRanks>(&()),
        row::<TokenBalances>(&Amount(U256::from(31))),
        row::<TokenHolders>(&Amount(U256::from(10u64.pow(18)))),
        row::<HolderRanks>(&()),
        row::<NftInstances>(&InstanceRecord { owner: Some(address(32)), supply: U256::from(1) }),
        row::<TokenMetadatas>(&TokenMetadata {
            name: Some("Demo Token".into()),
            symbol: Some("DEMO".into()),
            decimals: Some(18),
        }),
        row::<TokenSearch>(&()),
        row::<InternalTxs>(&InternalTxRecord {
            tx_hash: hash(8),
            kind: CallKind::Create2,
            from: address(33),
            to: None,
            created: Some(address(34)),
            value: U256::from(35),
            gas: 36_000,
            gas_used: 37_000,
            error: Some("out of gas".into()),
            success: false,
            depth: 2,
        }),
        row::<AddressInternal>(&role::TO),
        row::<InternalCreations>(&InternalCreation { creator: address(38), tx: hash(39), success: true }),
        row::<TraceBlocks>(&TraceSummary { txs: vec![(0, false), (3, true)] }),
        row::<Daily>(&DayStats { blocks: 40, txs: 41, gas_used: 42 }),
        row::<Pending>(&sample_pending()),
        row::<PendingByTime>(&()),
        row::<UndoLog>(&Undo {
            rows: vec![
                UndoRow { table: Accounts::ID, key: vec![1, 2], before: Some(vec![3]) },
                UndoRow { table: Daily::ID, key: vec![4], before: None },
            ],
        }),
        row::<Code>(&Bytes::from_static(&[0x60, 0x80, 0x60, 0x40])),
        row::<Contracts>(&ContractRecord {
            code_hash: hash(43),
            creation_tx: hash(44),
            block: 45,
            proxy: Some(ProxyRecord {
                kind: ProxyKind::Eip1967Beacon,
                implementation: address(46),
                beacon: Some(address(47)),
            }),
        }),
        row::<VerifiedSources>(&VerifiedSource {
            code_hash: hash(53),
            name: "V".into(),
            file_path: "v.sol".into(),
            abi: "[]".into(),
            sources: vec![("v.sol".into(), "c".into())],
            compiler_version: "0.8".into(),
            settings: "{}".into(),
            full_match: true,
            constructor_args: Bytes::from_static(&[7]),
            license: Some("MIT".into()),
            verified_at: 50,
        }),
        row::<VerificationJobs>(&VerificationJob {
            address: address(51),
            compiler_version: "0.8".into(),
            contract_name: "V".into(),
            input: "{}".into(),
            state: JobState::Failed("no".into()),
            created_ms: 52,
        }),
        row::<CoinBalances>(&Amount(U256::from(10u64.pow(18)) * U256::from(54))),
        row::<CoinBalanceNow>(&CoinBalance { block: 55, value: U256::from(56) }),
        row::<CoinRanks>(&()),
        row::<Users>(&UserRecord { created_ms: 1_700_000_000_000, tokens: vec![48, 49] }),
        row::<UserTokens>(&sample_credential(Some(1_700_000_060_000))),
        row::<ApiKeys>(&sample_credential(None)),
        row::<AccountItems>(&AccountItem::AddressTag { address: address(41), name: "cold".into() }),
        row::<AccountItems>(&AccountItem::TransactionTag { hash: hash(42), name: "pay".into() }),
        row::<AccountItems>(&AccountItem::Watch {
            address: address(43),
            name: "w".into(),
            flags: watch_flags::NATIVE_IN | watch_flags::ERC721_OUT,
            email: true,
        }),
        row::<AccountItems>(&AccountItem::ApiKey { key_id: 44, name: "k".into() }),
        row::<AccountItems>(&AccountItem::CustomAbi { address: address(47), name: "a".into(), abi: "[]".into() }),
        row::<ItemOwners>(&ItemOwner { owner: address(45), kind: ItemKind::Watch }),
        row::<BeaconProxies>(&()),
        row::<VerifiedCode>(&address(0x39)),
        row::<Names>(&NameRecord {
            name: Some("alice.dev".into()),
            owner: address(46),
            resolver: address(47),
            resolved: Some(address(48)),
            expires: Some(1_800_000_000),
            reverse_of: None,
            first_block: 12,
        }),
        row::<NameLabels>(&"alice".to_owned()),
        row::<NameSearch>(&()),
        row::<ReverseNames>(&"alice.dev".to_owned()),
        row::<AddressNames>(&()),
        row::<ResolverAddrs>(&address(0x49)),
        row::<ResolverNames>(&"alice.dev".to_owned()),
    ]
}

/// The bytes of every sample, as schema version 3 stores them.
#[rustfmt::skip]
const PINNED: &[(&str, &str)] = &[
    ("meta", "0001"),
    ("meta", "0101"),
    ("meta", "02fcf2e30a00"),
    ("meta", "03201111111111111111111111111111111111111111111111111111111111111111"),
    ("meta", "0409201010101010101010101010101010101010101010101010101010101010101010"),
    ("meta", "050a141e28"),
    ("meta", "0609201010101010101010101010101010101010101010101010101010101010101010"),
    ("meta", "0709201010101010101010101010101010101010101010101010101010101010101010"),
    ("meta", "0801141313131313131313131313131313131313131313"),
    ("headers", "07200101010101010101010101010101010101010101010101010101010101010101200202020202020202020202020202020202020202020202020202020202020202fc00f15365140303030303030303030303030303030303030303fb0852fc80c3c90101fc07ca9a3b01fb6402010201010e08040404040404040402050601200707070707070707070707070707070707070707070707070707070707070707010101fc000002000002010307038d7ea4c68000061319718c8e380109"),
    ("block_hashes", "07"),
    ("txs", "20080808080808080808080808080808080808080808080808080808080808080814090909090909090909090909090909090909090901140a0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a080de0b6b3a764000004a9059cbb0bfca08601000001fc0094357701fc00ca9a3b020101fb22c8fc002f685900010201030ae3f2140c0c0c0c0c0c0c0c0c0c0c0c0c0c0c0c0c0c0c0c0301010d010e01140f0f0f0f0f0f0f0f0f0f0f0f0f0f0f0f0f0f0f0f01030100"),
    ("tx_hashes", ""),
    ("logs", "141212121212121212121212121212121212121212022013131313131313131313131313131313131313131313131313131313131313132014141414141414141414141414141414141414141414141414141414141414140301020301200808080808080808080808080808080808080808080808080808080808080808"),
    ("address_txs", "05"),
    ("address_logs", ""),
    ("accounts", "05fc00f1536506fc01f1536503fb18f6fb10a40102040114151515151515151515151515151515151515151520161616161616161616161616161616161616161616161616161616161616161601"),
    ("reorged", "07200101010101010101010101010101010101010101010101010101010101010101200202020202020202020202020202020202020202020202020202020202020202fc00f15365140303030303030303030303030303030303030303fb0852fc80c3c90101fc07ca9a3b01fb6402010201010e08040404040404040402050601200707070707070707070707070707070707070707070707070707070707070707010101fc000002000002010307038d7ea4c68000061319718c8e380109"),
    ("transfers", "14171717171717171717171717171717171717171714000000000000000000000000000000000000000014181818181818181818181818181818181818181802010119011a01200808080808080808080808080808080808080808080808080808080808080808"),
    ("address_transfers", "02"),
    ("token_transfers", ""),
    ("tokens", "011b1c011d1e"),
    ("token_ranks", ""),
    ("token_balances", "011f"),
    ("token_holders", "080de0b6b3a7640000"),
    ("holder_ranks", ""),
    ("nft_instances", "011420202020202020202020202020202020202020200101"),
    ("token_metadata", "010a44656d6f20546f6b656e010444454d4f0112"),
    ("token_search", ""),
    ("internal_txs", "2008080808080808080808080808080808080808080808080808080808080808080514212121212121212121212121212121212121212100011422222222222222222222222222222222222222220123fba08cfb8890010a6f7574206f66206761730002"),
    ("address_internal", "02"),
    ("internal_creations", "14262626262626262626262626262626262626262620272727272727272727272727272727272727272727272727272727272727272701"),
    ("trace_blocks", "0200000301"),
    ("daily", "28292a"),
    ("pending", "20080808080808080808080808080808080808080808080808080808080808080814090909090909090909090909090909090909090901140a0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a080de0b6b3a764000004a9059cbb0bfca08601000001fc0094357701fc00ca9a3b02fd7b68e5cf8b010000"),
    ("pending_by_time", ""),
    ("undo", "020802010201010319010400"),
    ("code", "0460806040"),
    ("contracts", "202b2b2b2b2b2b2b2b2b2b2b2b2b2b2b2b2b2b2b2b2b2b2b2b2b2b2b2b2b2b2b2b202c2c2c2c2c2c2c2c2c2c2c2c2c2c2c2c2c2c2c2c2c2c2c2c2c2c2c2c2c2c2c2c2d0101142e2e2e2e2e2e2e2e2e2e2e2e2e2e2e2e2e2e2e2e01142f2f2f2f2f2f2f2f2f2f2f2f2f2f2f2f2f2f2f2f"),
    ("verified_sources", "203535353535353535353535353535353535353535353535353535353535353535015605762e736f6c025b5d0105762e736f6c016303302e38027b7d01010701034d495432"),
    ("verification_jobs", "14333333333333333333333333333333333333333303302e380156027b7d03026e6f34"),
    ("coin_balances", "0902ed6689e54f180000"),
    ("coin_balance_now", "370138"),
    ("coin_ranks", ""),
    ("users", "fd0068e5cf8b010000023031"),
    ("user_tokens", "142828282828282828282828282828282828282828026369202e2e2e2e2e2e2e2e2e2e2e2e2e2e2e2e2e2e2e2e2e2e2e2e2e2e2e2e2e2e2e2efd0068e5cf8b01000001fd6052e6cf8b010000"),
    ("api_keys", "142828282828282828282828282828282828282828026369202e2e2e2e2e2e2e2e2e2e2e2e2e2e2e2e2e2e2e2e2e2e2e2e2e2e2e2e2e2e2e2efd0068e5cf8b01000000"),
    ("account_items", "0014292929292929292929292929292929292929292904636f6c64"),
    ("account_items", "01202a2a2a2a2a2a2a2a2a2a2a2a2a2a2a2a2a2a2a2a2a2a2a2a2a2a2a2a2a2a2a2a03706179"),
    ("account_items", "02142b2b2b2b2b2b2b2b2b2b2b2b2b2b2b2b2b2b2b2b01772101"),
    ("account_items", "032c016b"),
    ("account_items", "04142f2f2f2f2f2f2f2f2f2f2f2f2f2f2f2f2f2f2f2f0161025b5d"),
    ("item_owners", "142d2d2d2d2d2d2d2d2d2d2d2d2d2d2d2d2d2d2d2d02"),
    ("beacon_proxies", ""),
    ("verified_code", "143939393939393939393939393939393939393939"),
    ("names", "0109616c6963652e646576142e2e2e2e2e2e2e2e2e2e2e2e2e2e2e2e2e2e2e2e142f2f2f2f2f2f2f2f2f2f2f2f2f2f2f2f2f2f2f2f0114303030303030303030303030303030303030303001fc00d2496b000c"),
    ("name_labels", "05616c696365"),
    ("name_search", ""),
    ("reverse_names", "09616c6963652e646576"),
    ("address_names", ""),
    ("resolver_addrs", "144949494949494949494949494949494949494949"),
    ("resolver_names", "09616c6963652e646576"),
];

#[test]
fn stored_bytes_are_pinned() {
    let got = encoded();
    for def in ALL {
        assert!(got.iter().any(|(name, _)| *name == def.name), "no golden sample for table `{}`", def.name);
    }
    let pinned: Vec<(&str, String)> = PINNED.iter().map(|(n, h)| (*n, h.to_string())).collect();
    assert_eq!(got, pinned, "stored bytes changed: bump SCHEMA_VERSION and update the pins (docs/schema.md)");
}

/// Schema 1 stored both transaction records flat. `TxBody` is nested in them now: bincode writes a nested struct
/// as its fields in order, so the bytes are the same as the flat layout's (which this test keeps as a copy).
#[test]
fn nested_transaction_bodies_encode_like_the_flat_layout() {
    use super::codec::amount;
    use serde::Serialize;

    #[derive(Serialize)]
    struct FlatTx {
        hash: B256,
        from: Address,
        to: Option<Address>,
        #[serde(with = "amount")]
        value: U256,
        input: Bytes,
        nonce: u64,
        gas_limit: u64,
        gas_price: Option<u128>,
        max_fee_per_gas: Option<u128>,
        max_priority_fee_per_gas: Option<u128>,
        tx_type: u8,
        status: Option<bool>,
        gas_used: u64,
        effective_gas_price: u128,
        created: Option<Address>,
        first_log: u32,
        log_count: u32,
        authorizations: Vec<AuthorizationRecord>,
        token_transfers: u32,
        token_creation: bool,
    }
    #[derive(Serialize)]
    struct FlatPending {
        hash: B256,
        from: Address,
        to: Option<Address>,
        #[serde(with = "amount")]
        value: U256,
        input: Bytes,
        nonce: u64,
        gas_limit: u64,
        gas_price: Option<u128>,
        max_fee_per_gas: Option<u128>,
        max_priority_fee_per_gas: Option<u128>,
        tx_type: u8,
        first_seen_ms: u64,
    }
    let b = sample_body();
    let t = sample_tx();
    let flat_tx = FlatTx {
        hash: b.hash,
        from: b.from,
        to: b.to,
        value: b.value,
        input: b.input.clone(),
        nonce: b.nonce,
        gas_limit: b.gas_limit,
        gas_price: b.gas_price,
        max_fee_per_gas: b.max_fee_per_gas,
        max_priority_fee_per_gas: b.max_priority_fee_per_gas,
        tx_type: b.tx_type,
        status: t.status,
        gas_used: t.gas_used,
        effective_gas_price: t.effective_gas_price,
        created: t.created,
        first_log: t.first_log,
        log_count: t.log_count,
        authorizations: t.authorizations.clone(),
        token_transfers: t.token_transfers,
        token_creation: t.token_creation,
    };
    assert_eq!(encode(&t).unwrap(), encode(&flat_tx).unwrap());
    let p = sample_pending();
    let flat_pending = FlatPending {
        hash: b.hash,
        from: b.from,
        to: b.to,
        value: b.value,
        input: b.input,
        nonce: b.nonce,
        gas_limit: b.gas_limit,
        gas_price: b.gas_price,
        max_fee_per_gas: b.max_fee_per_gas,
        max_priority_fee_per_gas: b.max_priority_fee_per_gas,
        tx_type: b.tx_type,
        first_seen_ms: p.first_seen_ms,
    };
    assert_eq!(encode(&p).unwrap(), encode(&flat_pending).unwrap());
}
