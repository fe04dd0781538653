// SPDX-License-Identifier: Apache-2.0
pragma solidity ^0.8.24;

/// A minimal ERC-1155 for demo traffic and tests: anyone may mint, holders may burn and move single ids or batches.
contract DemoMulti {
    mapping(uint256 => mapping(address => uint256)) private balances;
    mapping(address => mapping(address => bool)) public isApprovedForAll;

    event TransferSingle(address indexed operator, address indexed from, address indexed to, uint256 id, uint256 value);
    event TransferBatch(
        address indexed operator, address indexed from, address indexed to, uint256[] ids, uint256[] values
    );
    event ApprovalForAll(address indexed account, address indexed operator, bool approved);

    /// ERC-1155 `balanceOf(account, id)`.
    function balanceOf(address account, uint256 id) external view returns (uint256) {
        return balances[id][account];
    }

    function supportsInterface(bytes4 id) external pure returns (bool) {
        return id == 0xd9b67a26 || id == 0x01ffc9a7;
    }

    function uri(uint256) external pure returns (string memory) {
        return "https://example.invalid/{id}.json";
    }

    function mint(address to, uint256 id, uint256 value) external {
        balances[id][to] += value;
        emit TransferSingle(msg.sender, address(0), to, id, value);
    }

    function mintBatch(address to, uint256[] calldata ids, uint256[] calldata values) external {
        require(ids.length == values.length, "DemoMulti: lengths");
        for (uint256 i = 0; i < ids.length; i++) {
            balances[ids[i]][to] += values[i];
        }
        emit TransferBatch(msg.sender, address(0), to, ids, values);
    }

    function burn(uint256 id, uint256 value) external {
        require(balances[id][msg.sender] >= value, "DemoMulti: balance");
        balances[id][msg.sender] -= value;
        emit TransferSingle(msg.sender, msg.sender, address(0), id, value);
    }

    function setApprovalForAll(address operator, bool approved) external {
        isApprovedForAll[msg.sender][operator] = approved;
        emit ApprovalForAll(msg.sender, operator, approved);
    }

    function safeTransferFrom(address from, address to, uint256 id, uint256 value, bytes calldata) external {
        require(from == msg.sender || isApprovedForAll[from][msg.sender], "DemoMulti: not allowed");
        require(balances[id][from] >= value, "DemoMulti: balance");
        balances[id][from] -= value;
        balances[id][to] += value;
        emit TransferSingle(msg.sender, from, to, id, value);
    }

    function safeBatchTransferFrom(
        address from,
        address to,
        uint256[] calldata ids,
        uint256[] calldata values,
        bytes calldata
    ) external {
        require(from == msg.sender || isApprovedForAll[from][msg.sender], "DemoMulti: not allowed");
        require(ids.length == values.length, "DemoMulti: lengths");
        for (uint256 i = 0; i < ids.length; i++) {
            require(balances[ids[i]][from] >= values[i], "DemoMulti: balance");
            balances[ids[i]][from] -= values[i];
            balances[ids[i]][to] += values[i];
        }
        emit TransferBatch(msg.sender, from, to, ids, values);
    }
}
