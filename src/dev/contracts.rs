//! Bindings of the contracts in `src/dev/contracts/` (Solidity sources compiled by `scripts/build-contracts.js`
//! with the pinned solc into the JSON artifacts next to them): a demo contract, one token of each standard, a
//! token that lies to indexers, a factory whose calls make internal transactions, and
//! an ENS-compatible name service (registry, resolver, registrars).
#![allow(missing_docs)]

alloy::sol!(
    #[sol(rpc)]
    Demo,
    "src/dev/contracts/Demo.json"
);

alloy::sol!(
    #[sol(rpc)]
    DemoToken,
    "src/dev/contracts/DemoToken.json"
);

alloy::sol!(
    #[sol(rpc)]
    DemoNft,
    "src/dev/contracts/DemoNft.json"
);

alloy::sol!(
    #[sol(rpc)]
    DemoMulti,
    "src/dev/contracts/DemoMulti.json"
);

alloy::sol!(
    #[sol(rpc)]
    LiarToken,
    "src/dev/contracts/LiarToken.json"
);

alloy::sol!(
    #[sol(rpc)]
    DemoFactory,
    "src/dev/contracts/DemoFactory.json"
);

alloy::sol!(
    #[sol(rpc)]
    DemoChild,
    "src/dev/contracts/DemoChild.json"
);

alloy::sol!(
    #[sol(rpc)]
    DemoUriNft,
    "src/dev/contracts/DemoUriNft.json"
);

/// The demo contracts as build artifacts, so `rockscout dev` names them and decodes their calls from the first
/// block.
pub fn demo_artifacts() -> Vec<std::sync::Arc<crate::contracts::artifacts::Artifact>> {
    crate::contracts::artifacts::ArtifactSet::from_documents(&[
        ("Demo", include_str!("contracts/Demo.json"), "Demo.sol", include_str!("contracts/Demo.sol")),
        (
            "DemoToken",
            include_str!("contracts/DemoToken.json"),
            "DemoToken.sol",
            include_str!("contracts/DemoToken.sol"),
        ),
        ("DemoNft", include_str!("contracts/DemoNft.json"), "DemoNft.sol", include_str!("contracts/DemoNft.sol")),
        (
            "DemoUriNft",
            include_str!("contracts/DemoUriNft.json"),
            "DemoUriNft.sol",
            include_str!("contracts/DemoUriNft.sol"),
        ),
        (
            "DemoMulti",
            include_str!("contracts/DemoMulti.json"),
            "DemoMulti.sol",
            include_str!("contracts/DemoMulti.sol"),
        ),
        (
            "LiarToken",
            include_str!("contracts/LiarToken.json"),
            "LiarToken.sol",
            include_str!("contracts/LiarToken.sol"),
        ),
        (
            "DemoFactory",
            include_str!("contracts/DemoFactory.json"),
            "DemoFactory.sol",
            include_str!("contracts/DemoFactory.sol"),
        ),
        (
            "DemoChild",
            include_str!("contracts/DemoChild.json"),
            "DemoFactory.sol",
            include_str!("contracts/DemoFactory.sol"),
        ),
        ("NameRegistry", include_str!("contracts/NameRegistry.json"), "Names.sol", include_str!("contracts/Names.sol")),
        ("NameResolver", include_str!("contracts/NameResolver.json"), "Names.sol", include_str!("contracts/Names.sol")),
        (
            "NameRegistrar",
            include_str!("contracts/NameRegistrar.json"),
            "Names.sol",
            include_str!("contracts/Names.sol"),
        ),
        (
            "ReverseRegistrar",
            include_str!("contracts/ReverseRegistrar.json"),
            "Names.sol",
            include_str!("contracts/Names.sol"),
        ),
    ])
    .all
}

alloy::sol!(
    #[sol(rpc)]
    NameRegistry,
    "src/dev/contracts/NameRegistry.json"
);

alloy::sol!(
    #[sol(rpc)]
    NameResolver,
    "src/dev/contracts/NameResolver.json"
);

alloy::sol!(
    #[sol(rpc)]
    NameRegistrar,
    "src/dev/contracts/NameRegistrar.json"
);

alloy::sol!(
    #[sol(rpc)]
    ReverseRegistrar,
    "src/dev/contracts/ReverseRegistrar.json"
);
