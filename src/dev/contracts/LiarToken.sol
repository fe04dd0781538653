// SPDX-License-Identifier: Apache-2.0
pragma solidity ^0.8.24;

/// A contract that lies to token indexers: `name()` reverts, `symbol()` is a bytes32 (MKR-style), `decimals()`
/// answers an out-of-range number, and `lie` emits transfer-like events of the wrong shape next to one real
/// ERC-20 transfer. An indexer must index the real transfer and skip the rest without breaking.
contract LiarToken {
    mapping(address => uint256) public balanceOf;
    uint256 public totalSupply;

    event Transfer(address indexed from, address indexed to, uint256 value);

    function name() external pure returns (string memory) {
        revert("no name for you");
    }

    function symbol() external pure returns (bytes32) {
        return "LIAR";
    }

    function decimals() external pure returns (uint256) {
        return 1000;
    }

    function lie(address to, uint256 value) external {
        bytes32 sig = keccak256("Transfer(address,address,uint256)");
        bytes32 sender = bytes32(uint256(uint160(msg.sender)));
        bytes32 recipient = bytes32(uint256(uint160(to)));
        assembly {
            // Transfer with two topics.
            mstore(0, value)
            log2(0, 32, sig, sender)
            // Transfer with short data.
            log3(0, 5, sig, sender, recipient)
            // Transfer whose address topic has dirty high bytes.
            log3(0, 32, sig, not(0), recipient)
        }
        // TransferBatch with arrays of different lengths.
        bytes32 batch = keccak256("TransferBatch(address,address,address,uint256[],uint256[])");
        bytes memory data = abi.encode(new uint256[](2), new uint256[](1));
        assembly {
            log4(add(data, 32), mload(data), batch, sender, sender, recipient)
        }
        // And one real transfer (a mint).
        balanceOf[to] += value;
        totalSupply += value;
        emit Transfer(address(0), to, value);
    }
}
