// SPDX-License-Identifier: MIT
pragma solidity ^0.8.24;

/// A counter with an immutable owner, a constructor argument, a custom error and an event: what local-artifact
/// matching and decoding are tested with.
contract Counter {
    address public immutable owner;
    uint256 public count;

    error TooLarge(uint256 value, uint256 limit);

    event Counted(address indexed by, uint256 value, uint256 total);

    constructor(uint256 start) {
        owner = msg.sender;
        count = start;
    }

    function add(uint256 value) external {
        if (value > 100) revert TooLarge(value, 100);
        count += value;
        emit Counted(msg.sender, value, count);
    }
}
