//! Bindings of the contracts in `src/dev/contracts/` (Solidity sources compiled by `scripts/build-contracts.js`
//! with the pinned solc into the JSON artifacts next to them).
#![allow(missing_docs)]

alloy::sol!(
    #[sol(rpc)]
    Demo,
    "src/dev/contracts/Demo.json"
);
