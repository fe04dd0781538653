// SPDX-License-Identifier: Apache-2.0
pragma solidity ^0.8.24;

/// A small contract for rockscout's demo traffic and tests: it keeps a counter, emits two kinds of events (so a
/// filter by topic has something to leave out), holds ether and reverts with a reason on demand.
contract Demo {
    uint256 public count;

    event Poked(address indexed by, uint256 indexed count, string note);
    event Added(address indexed by, uint256 indexed amount, uint256 total);

    /// Increments the counter and logs who did it.
    function poke(string calldata note) external {
        count += 1;
        emit Poked(msg.sender, count, note);
    }

    /// Adds `x` to the counter, reverting with a reason when `x` is a multiple of five; a success logs a poke and
    /// then the addition.
    function mayFail(uint256 x) external {
        require(x % 5 != 0, "Demo: multiple of five");
        count += x;
        emit Poked(msg.sender, count, "mayFail");
        emit Added(msg.sender, x, count);
    }

    receive() external payable {}
}
