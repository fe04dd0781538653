// SPDX-License-Identifier: Apache-2.0
pragma solidity ^0.8.24;

/// A minimal ERC-1155 for demo traffic and tests: anyone may mint, holders may burn and move single ids or batches.
contract DemoMulti {
    mapping(uint256 => mapping(address => uint256)) public balanceOf;
    mapping(address => mapping(address => bool)) public isApprovedForAll;

    event TransferSingle(address indexed operator, address indexed from, address indexed to, uint256 id, uint256 value);
    event TransferBatch(
        address indexed operator, address indexed from, address indexed to, uint256[] ids, uint256[] values
    );
    event ApprovalForAll(address indexed account, address indexed operator, bool approved);

    function supportsInterface(bytes4 id) external pure returns (bool) {
        return id == 0xd9b67a26 || id == 0x01ffc9a7;
    }

    function uri(uint256) external pure returns (string memory) {
        return "https://example.invalid/{id}.json";
    }

    function mint(address to, uint256 id, uint256 value) external {
        balanceOf[id][to] += value;
        emit TransferSingle(msg.sender, address(0), to, id, value);
    }

    function mintBatch(address to, uint256[] calldata ids, uint256[] calldata values) external {
        require(ids.length == values.length, "DemoMulti: lengths");
        for (uint256 i = 0; i < ids.length; i++) {
            balanceOf[ids[i]][to] += values[i];
        }
        emit TransferBatch(msg.sender, address(0), to, ids, values);
    }

    function burn(uint256 id, uint256 value) external {
        require(balanceOf[id][msg.sender] >= value, "DemoMulti: balance");
        balanceOf[id][msg.sender] -= value;
        emit TransferSingle(msg.sender, msg.sender, address(0), id, value);
    }

    function setApprovalForAll(address operator, bool approved) external {
        isApprovedForAll[msg.sender][operator] = approved;
        emit ApprovalForAll(msg.sender, operator, approved);
    }

    function safeTransferFrom(address from, address to, uint256 id, uint256 value, bytes calldata) external {
        require(from == msg.sender || isApprovedForAll[from][msg.sender], "DemoMulti: not allowed");
        require(balanceOf[id][from] >= value, "DemoMulti: balance");
        balanceOf[id][from] -= value;
        balanceOf[id][to] += value;
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
            require(balanceOf[ids[i]][from] >= values[i], "DemoMulti: balance");
            balanceOf[ids[i]][from] -= values[i];
            balanceOf[ids[i]][to] += values[i];
        }
        emit TransferBatch(msg.sender, from, to, ids, values);
    }
}
