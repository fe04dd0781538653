// SPDX-License-Identifier: Apache-2.0
pragma solidity ^0.8.24;

/// A contract made by `DemoFactory`: holds a value, can revert on demand, and can self-destruct.
contract DemoChild {
    uint256 public value;

    constructor() payable {}

    /// Stores `v`.
    function set(uint256 v) external {
        value = v;
    }

    /// Always reverts.
    function boom() external pure {
        revert("DemoChild: boom");
    }

    /// Sends the balance to `to` (since Cancun the code stays).
    function close(address payable to) external {
        selfdestruct(to);
    }

    receive() external payable {}
}

/// Contracts calling contracts, for internal-transaction traffic and tests: creations (CREATE and CREATE2) inside
/// calls, nested calls that revert (caught and not), value moved by inner calls, static and delegate calls, and a
/// self-destruct.
contract DemoFactory {
    /// Slot 0 is what a delegate call to `DemoChild.set` writes.
    uint256 public delegated;
    DemoChild public last;

    event Spawned(address child, bool salted);

    /// Creates a child with the value sent, then calls it.
    function spawn(uint256 v) external payable returns (DemoChild child) {
        child = new DemoChild{value: msg.value}();
        child.set(v);
        last = child;
        emit Spawned(address(child), false);
    }

    /// Creates a child at a salted address.
    function spawn2(bytes32 salt) external returns (DemoChild child) {
        child = new DemoChild{salt: salt}();
        last = child;
        emit Spawned(address(child), true);
    }

    /// A nested call that reverts and is caught, then one that succeeds: the transaction succeeds.
    function tryBoom(DemoChild child) external returns (bool ok) {
        try child.boom() {
            ok = true;
        } catch {
            ok = false;
        }
        child.set(7);
    }

    /// A successful call, then a nested revert that is not caught: the whole transaction fails.
    function boom(DemoChild child) external {
        child.set(1);
        child.boom();
    }

    /// Creates a contract, then reverts: the creation is undone.
    function spawnAndRevert() external {
        new DemoChild();
        revert("DemoFactory: undone");
    }

    /// Forwards the value sent to `to`, then reads the child (a static call).
    function relay(DemoChild child, address payable to) external payable returns (uint256) {
        (bool sent,) = to.call{value: msg.value}("");
        require(sent, "DemoFactory: send failed");
        return child.value();
    }

    /// Runs `DemoChild.set` on this contract's storage.
    function delegate(DemoChild child, uint256 v) external {
        (bool ok,) = address(child).delegatecall(abi.encodeCall(DemoChild.set, (v)));
        require(ok, "DemoFactory: delegate failed");
    }

    /// Has the child send its balance to `to`.
    function destroy(DemoChild child, address payable to) external {
        child.close(to);
    }
}
