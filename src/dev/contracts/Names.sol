// SPDX-License-Identifier: Apache-2.0
pragma solidity ^0.8.24;

/// A name registry with ENS's interface and events: every node (a namehash) has an owner and a resolver; the owner
/// of a node creates its subnodes. The deployer owns the root.
contract NameRegistry {
    struct Record {
        address owner;
        address resolver;
    }

    mapping(bytes32 => Record) private records;

    event NewOwner(bytes32 indexed node, bytes32 indexed label, address owner);
    event Transfer(bytes32 indexed node, address owner);
    event NewResolver(bytes32 indexed node, address resolver);

    constructor() {
        records[bytes32(0)].owner = msg.sender;
    }

    modifier onlyOwnerOf(bytes32 node) {
        require(records[node].owner == msg.sender, "not the node's owner");
        _;
    }

    function owner(bytes32 node) external view returns (address) {
        return records[node].owner;
    }

    function resolver(bytes32 node) external view returns (address) {
        return records[node].resolver;
    }

    function setOwner(bytes32 node, address newOwner) external onlyOwnerOf(node) {
        records[node].owner = newOwner;
        emit Transfer(node, newOwner);
    }

    function setSubnodeOwner(bytes32 node, bytes32 label, address newOwner)
        external
        onlyOwnerOf(node)
        returns (bytes32 subnode)
    {
        subnode = keccak256(abi.encodePacked(node, label));
        records[subnode].owner = newOwner;
        emit NewOwner(node, label, newOwner);
    }

    function setResolver(bytes32 node, address newResolver) external onlyOwnerOf(node) {
        records[node].resolver = newResolver;
        emit NewResolver(node, newResolver);
    }
}

/// A resolver with ENS's `addr` and `name` records; a node's owner in the registry sets them.
contract NameResolver {
    NameRegistry public immutable registry;
    mapping(bytes32 => address) private addresses;
    mapping(bytes32 => string) private names;

    event AddrChanged(bytes32 indexed node, address a);
    event NameChanged(bytes32 indexed node, string name);

    constructor(NameRegistry registry_) {
        registry = registry_;
    }

    modifier onlyOwnerOf(bytes32 node) {
        require(registry.owner(node) == msg.sender, "not the node's owner");
        _;
    }

    function addr(bytes32 node) external view returns (address) {
        return addresses[node];
    }

    function setAddr(bytes32 node, address a) external onlyOwnerOf(node) {
        addresses[node] = a;
        emit AddrChanged(node, a);
    }

    function name(bytes32 node) external view returns (string memory) {
        return names[node];
    }

    function setName(bytes32 node, string calldata newName) external onlyOwnerOf(node) {
        names[node] = newName;
        emit NameChanged(node, newName);
    }
}

/// First come, first served registrar (and renewer) of the labels under one node (`dev` in `rockscout dev`), which it must own.
/// A registration points the name at its owner through the resolver and announces the plaintext label with the
/// event of ENS's registrar controller.
contract NameRegistrar {
    NameRegistry public immutable registry;
    NameResolver public immutable resolver;
    bytes32 public immutable baseNode;
    mapping(bytes32 => uint256) public expires;

    event NameRegistered(string name, bytes32 indexed label, address indexed owner, uint256 cost, uint256 expires);
    /// ENS's base registrar's renewal event (the id is the label hash).
    event NameRenewed(uint256 indexed id, uint256 expires);

    constructor(NameRegistry registry_, NameResolver resolver_, bytes32 baseNode_) {
        registry = registry_;
        resolver = resolver_;
        baseNode = baseNode_;
    }

    function register(string calldata label, address newOwner, uint256 duration) external returns (bytes32 node) {
        bytes32 labelHash = keccak256(bytes(label));
        require(expires[labelHash] < block.timestamp, "name not available");
        expires[labelHash] = block.timestamp + duration;
        node = registry.setSubnodeOwner(baseNode, labelHash, address(this));
        registry.setResolver(node, address(resolver));
        resolver.setAddr(node, newOwner);
        registry.setOwner(node, newOwner);
        emit NameRegistered(label, labelHash, newOwner, 0, block.timestamp + duration);
    }

    /// Extends a registration that has not expired by `duration` seconds (anyone may pay for a renewal, as in ENS).
    function renew(string calldata label, uint256 duration) external returns (uint256 newExpiry) {
        bytes32 labelHash = keccak256(bytes(label));
        require(expires[labelHash] >= block.timestamp, "name not registered");
        newExpiry = expires[labelHash] + duration;
        expires[labelHash] = newExpiry;
        emit NameRenewed(uint256(labelHash), newExpiry);
    }
}

/// The registrar of `addr.reverse` (which it must own): `setName` claims the sender's reverse node
/// (`<lowercase hex address>.addr.reverse`) and sets its name record, with ENS's `ReverseClaimed` event.
contract ReverseRegistrar {
    /// namehash("addr.reverse")
    bytes32 public constant ADDR_REVERSE_NODE = 0x91d1777781884d03a6757a803996e38de2a42967fb37eeaca72729271025a9e2;
    NameRegistry public immutable registry;
    NameResolver public immutable resolver;

    event ReverseClaimed(address indexed addr, bytes32 indexed node);

    constructor(NameRegistry registry_, NameResolver resolver_) {
        registry = registry_;
        resolver = resolver_;
    }

    function setName(string calldata newName) external returns (bytes32 node) {
        bytes32 label = hexLabel(msg.sender);
        node = registry.setSubnodeOwner(ADDR_REVERSE_NODE, label, address(this));
        emit ReverseClaimed(msg.sender, node);
        registry.setResolver(node, address(resolver));
        resolver.setName(node, newName);
    }

    function node(address a) external pure returns (bytes32) {
        return keccak256(abi.encodePacked(ADDR_REVERSE_NODE, hexLabel(a)));
    }

    /// keccak256 of the address as 40 lowercase hex digits.
    function hexLabel(address a) internal pure returns (bytes32) {
        bytes memory digits = "0123456789abcdef";
        bytes memory text = new bytes(40);
        uint160 value = uint160(a);
        for (uint256 i = 40; i > 0; i--) {
            text[i - 1] = digits[value & 0xf];
            value >>= 4;
        }
        return keccak256(text);
    }
}
