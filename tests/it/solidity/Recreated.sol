// SPDX-License-Identifier: MIT
pragma solidity ^0.8.24;

/// A token a factory creates with CREATE2: same salt, same address, whatever name the factory gives it.
contract NamedChild {
    event Transfer(address indexed from, address indexed to, uint256 value);

    string public name;

    constructor() {
        name = NamingFactory(msg.sender).pendingName();
        emit Transfer(address(0), tx.origin, 1);
    }

    function symbol() external pure returns (string memory) {
        return "KID";
    }

    function decimals() external pure returns (uint8) {
        return 0;
    }
}

/// Creates a `NamedChild` at the address its salt gives, named `name`.
contract NamingFactory {
    string public pendingName;

    function make(bytes32 salt, string calldata name) external returns (NamedChild child) {
        pendingName = name;
        child = new NamedChild{salt: salt}();
    }
}
