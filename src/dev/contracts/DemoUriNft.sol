// SPDX-License-Identifier: Apache-2.0
pragma solidity ^0.8.24;

/// An ERC-721 whose minter chooses each id's token URI, so tests can serve metadata from data: URIs, local HTTP
/// servers and hostile places alike.
contract DemoUriNft {
    string public name = "Demo URI NFT";
    string public symbol = "DURI";
    uint256 public nextId = 1;
    mapping(uint256 => address) public ownerOf;
    mapping(address => uint256) public balanceOf;
    mapping(uint256 => string) private uris;

    event Transfer(address indexed from, address indexed to, uint256 indexed tokenId);

    function supportsInterface(bytes4 id) external pure returns (bool) {
        return id == 0x80ac58cd || id == 0x01ffc9a7 || id == 0x5b5e139f;
    }

    function mint(address to, string calldata uri) external returns (uint256 id) {
        id = nextId++;
        ownerOf[id] = to;
        balanceOf[to] += 1;
        uris[id] = uri;
        emit Transfer(address(0), to, id);
    }

    function transferFrom(address from, address to, uint256 id) external {
        require(ownerOf[id] == from && msg.sender == from, "not owner");
        ownerOf[id] = to;
        balanceOf[from] -= 1;
        balanceOf[to] += 1;
        emit Transfer(from, to, id);
    }

    function tokenURI(uint256 id) external view returns (string memory) {
        require(ownerOf[id] != address(0), "no such token");
        return uris[id];
    }
}
