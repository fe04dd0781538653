// SPDX-License-Identifier: MIT
pragma solidity ^0.8.24;

/// A library with a public function: contracts that use it call it with DELEGATECALL at an address linked in.
library Tally {
    function add(uint256 a, uint256 b) public pure returns (uint256) {
        return a + b;
    }
}

/// Uses the linked library.
contract Adder {
    uint256 public total;

    function bump(uint256 by) external {
        total = Tally.add(total, by);
    }
}
