// SPDX-License-Identifier: MIT
pragma solidity ^0.8.24;

/// Logic behind the proxies.
contract Logic {
    uint256 public value;

    event ValueSet(uint256 value);

    function setValue(uint256 v) external {
        value = v;
        emit ValueSet(v);
    }
}

/// A second version of the logic, for an upgrade.
contract LogicV2 {
    uint256 public value;

    function double() external {
        value *= 2;
    }
}

/// An EIP-1967 proxy: the implementation in the standard slot, `Upgraded` on every change.
contract Proxy1967 {
    bytes32 private constant SLOT = 0x360894a13ba1a3210667c828492db98dca3e2076cc3735a920a3ca505d382bbc;

    event Upgraded(address indexed implementation);

    constructor(address logic) {
        _set(logic);
    }

    function upgradeTo(address logic) external {
        _set(logic);
    }

    function _set(address logic) private {
        assembly {
            sstore(SLOT, logic)
        }
        emit Upgraded(logic);
    }

    fallback() external payable {
        assembly {
            let impl := sload(SLOT)
            calldatacopy(0, 0, calldatasize())
            let ok := delegatecall(gas(), impl, 0, calldatasize(), 0, 0)
            returndatacopy(0, 0, returndatasize())
            switch ok
            case 0 { revert(0, returndatasize()) }
            default { return(0, returndatasize()) }
        }
    }
}

/// Makes EIP-1167 minimal proxies.
contract Cloner {
    event Cloned(address clone);

    function clone(address target) external returns (address result) {
        bytes20 t = bytes20(target);
        assembly {
            let p := mload(0x40)
            mstore(p, 0x3d602d80600a3d3981f3363d3d373d3d3d363d73000000000000000000000000)
            mstore(add(p, 0x14), t)
            mstore(add(p, 0x28), 0x5af43d82803e903d91602b57fd5bf30000000000000000000000000000000000)
            result := create(0, p, 0x37)
        }
        emit Cloned(result);
    }
}

/// An upgradeable beacon: proxies ask it for their logic; `Upgraded` when it changes.
contract Beacon {
    address public implementation;

    event Upgraded(address indexed implementation);

    constructor(address logic) {
        upgradeTo(logic);
    }

    function upgradeTo(address logic) public {
        implementation = logic;
        emit Upgraded(logic);
    }
}

/// An EIP-1967 beacon proxy: the beacon in the standard slot, the logic is the beacon's `implementation()`.
contract BeaconProxy1967 {
    bytes32 private constant SLOT = 0xa3f0ad74e5423aebfd80d3ef4346578335a9a72aeaee59ff6cb3582b35133d50;

    event BeaconUpgraded(address indexed beacon);

    constructor(address beacon) {
        assembly {
            sstore(SLOT, beacon)
        }
        emit BeaconUpgraded(beacon);
    }

    fallback() external payable {
        address impl = Beacon(_beacon()).implementation();
        assembly {
            calldatacopy(0, 0, calldatasize())
            let ok := delegatecall(gas(), impl, 0, calldatasize(), 0, 0)
            returndatacopy(0, 0, returndatasize())
            switch ok
            case 0 { revert(0, returndatasize()) }
            default { return(0, returndatasize()) }
        }
    }

    function _beacon() private view returns (address b) {
        assembly {
            b := sload(SLOT)
        }
    }
}

/// A token's logic, for a proxy: its name, symbol and decimals are the proxy's.
contract NamedTokenV1 {
    event Transfer(address indexed from, address indexed to, uint256 value);

    function name() external pure virtual returns (string memory) {
        return "Proxied Alpha";
    }

    function symbol() external pure virtual returns (string memory) {
        return "PXA";
    }

    function decimals() external pure virtual returns (uint8) {
        return 18;
    }

    function mint(address to, uint256 value) external {
        emit Transfer(address(0), to, value);
    }
}

/// The token's next logic: another name, symbol and decimals.
contract NamedTokenV2 is NamedTokenV1 {
    function name() external pure override returns (string memory) {
        return "Proxied Beta";
    }

    function symbol() external pure override returns (string memory) {
        return "PXB";
    }

    function decimals() external pure override returns (uint8) {
        return 9;
    }
}
