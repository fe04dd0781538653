"""Reads rockscout's Etherscan-style API with blockparty (an independent client from PyPI) and prints what it got
as one JSON object, for tests/it/etherscan.rs to compare with the node.

Usage: etherscan_client.py BASE_URL CHAIN_ID ADDRESS TOKEN EMITTER
"""

import json
import os
import sys
import tempfile

from blockparty import SyncBlockpartyClient
from blockparty.registry.chain_registry import ChainRegistry

base, chain_id, address, token, emitter = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4], sys.argv[5]
registry_file = os.path.join(tempfile.mkdtemp(), "chains.json")
with open(registry_file, "w") as f:
    explorer = {"type": "blockscout", "api_url": base + "/api", "frontend_url": base}
    json.dump([{"chain_id": chain_id, "name": "rockscout", "is_testnet": True, "explorers": [explorer]}], f)
client = SyncBlockpartyClient(
    chain_id=chain_id, explorer_type="blockscout", registry=ChainRegistry.load(path=registry_file), cache_ttl=0
)

txs = client.get_normal_transactions(address, limit=1000, sort="asc").result
transfers = client.get_erc20_token_transfers(address=address, contract_address=token, limit=1000, sort="asc").result
logs = client.get_logs(address=emitter, from_block=0).result
print(json.dumps({
    "balance": str(client.get_balance(address).result),
    "txs": [[t.hash, t.block_number, t.gas_used, t.cumulative_gas_used, t.is_error] for t in txs],
    "transfers": [[t.hash, t.from_address, t.to_address, str(t.value)] for t in transfers],
    "token_balance": str(client.get_token_balance(token, address).result),
    "logs": [[l.transaction_hash, l.log_index, l.topics] for l in logs],
}))
