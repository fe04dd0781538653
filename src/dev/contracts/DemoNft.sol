// SPDX-License-Identifier: Apache-2.0
pragma solidity ^0.8.24;

/// A minimal ERC-721 for demo traffic and tests: sequential ids, anyone may mint, owners may burn.
contract DemoNft {
    string public name;
    string public symbol;
    uint256 public totalSupply;
    uint256 public nextId = 1;
    mapping(uint256 => address) public ownerOf;
    mapping(address => uint256) public balanceOf;
    mapping(uint256 => address) public getApproved;
    mapping(address => mapping(address => bool)) public isApprovedForAll;

    event Transfer(address indexed from, address indexed to, uint256 indexed tokenId);
    event Approval(address indexed owner, address indexed approved, uint256 indexed tokenId);
    event ApprovalForAll(address indexed owner, address indexed operator, bool approved);

    constructor(string memory name_, string memory symbol_) {
        name = name_;
        symbol = symbol_;
    }

    function supportsInterface(bytes4 id) external pure returns (bool) {
        return id == 0x80ac58cd || id == 0x01ffc9a7 || id == 0x5b5e139f;
    }

    function mint(address to) external returns (uint256 id) {
        id = nextId++;
        ownerOf[id] = to;
        balanceOf[to] += 1;
        totalSupply += 1;
        emit Transfer(address(0), to, id);
    }

    function burn(uint256 id) external {
        address owner = ownerOf[id];
        require(owner == msg.sender, "DemoNft: not owner");
        delete ownerOf[id];
        delete getApproved[id];
        balanceOf[owner] -= 1;
        totalSupply -= 1;
        emit Transfer(owner, address(0), id);
    }

    function approve(address to, uint256 id) external {
        require(ownerOf[id] == msg.sender, "DemoNft: not owner");
        getApproved[id] = to;
        emit Approval(msg.sender, to, id);
    }

    function setApprovalForAll(address operator, bool approved) external {
        isApprovedForAll[msg.sender][operator] = approved;
        emit ApprovalForAll(msg.sender, operator, approved);
    }

    function transferFrom(address from, address to, uint256 id) public {
        require(ownerOf[id] == from, "DemoNft: wrong owner");
        require(to != address(0), "DemoNft: to zero");
        require(
            msg.sender == from || getApproved[id] == msg.sender || isApprovedForAll[from][msg.sender],
            "DemoNft: not allowed"
        );
        delete getApproved[id];
        balanceOf[from] -= 1;
        balanceOf[to] += 1;
        ownerOf[id] = to;
        emit Transfer(from, to, id);
    }

    function safeTransferFrom(address from, address to, uint256 id) external {
        transferFrom(from, to, id);
    }
}
