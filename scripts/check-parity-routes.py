#!/usr/bin/env python3
"""Validates the Blockscout parity routes of issue 17 (part A) against the Blockscout OpenAPI schema, with the
conformance checker's own schema loading and validation (../shared/conformance/check_api.py, imported, not copied).
The checker's crawl does not visit these routes; this one does, starting from what the API lists.

    python3 scripts/check-parity-routes.py --base http://127.0.0.1:4000

Prints one line per failing request and 'N passed, M failed'; exits 0 only when nothing failed.
"""
import argparse
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
CHECKER = os.path.join(HERE, "..", "..", "shared", "conformance")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--base", default="http://127.0.0.1:4000")
    ap.add_argument("--checker", default=CHECKER, help="folder of check_api.py")
    ap.add_argument("-v", "--verbose", action="store_true")
    args = ap.parse_args()
    sys.path.insert(0, args.checker)
    import check_api as checker

    c = checker.Crawl(args.base, checker.Schema(checker.DEFAULT_SCHEMA), args.verbose, set())
    c.get("transactions", "/v2/transactions/stats", "/api/v2/transactions/stats")
    c.get("stats", "/v2/stats/charts/market", "/api/v2/stats/charts/market")
    top = c.get("addresses", "/v2/addresses", "/api/v2/addresses", {"items_count": 5}) or {}
    checker.next_page(c, "addresses", "/v2/addresses", "/api/v2/addresses", top)
    transfers = c.get("tokens", "/v2/token-transfers", "/api/v2/token-transfers") or {}
    checker.next_page(c, "tokens", "/v2/token-transfers", "/api/v2/token-transfers", transfers)
    for kind in ["ERC-20", "ERC-721", "ERC-1155"]:
        c.get("tokens", "/v2/token-transfers", "/api/v2/token-transfers", {"type": kind})
    addresses = checker.hashes_of(checker.items(top), "hash")[:3]
    for t in checker.items(transfers):
        for side in ("from", "to"):
            addresses += [a for a in checker.hashes_of([t], side) if a not in addresses]
    blocks = c.get("blocks", "/v2/blocks", "/api/v2/blocks", {"items_count": 1}) or {}
    addresses += [m for m in checker.hashes_of(checker.items(blocks), "miner") if m not in addresses]
    for a in addresses[:8]:
        for sub in ["coin-balance-history", "coin-balance-history-by-day", "blocks-validated", "nft",
                    "nft/collections"]:
            template = "/v2/addresses/{address_hash_param}/" + sub
            page = c.get("addresses", template, f"/api/v2/addresses/{a}/{sub}", {"items_count": 2})
            if isinstance(page, dict) and "next_page_params" in page:
                checker.next_page(c, "addresses", template, f"/api/v2/addresses/{a}/{sub}", page, {"items_count": 2})
    nfts = [t for t in checker.items(transfers) if t.get("token_type") in ("ERC-721", "ERC-1155")]
    for t in nfts[:4]:
        token, token_id = t["token"]["address_hash"], (t.get("total") or {}).get("token_id")
        if token_id is None:
            continue
        base = f"/api/v2/tokens/{token}/instances/{token_id}"
        c.get("tokens", "/v2/tokens/{address_hash_param}/instances/{token_id_param}", base)
        for sub in ["transfers", "transfers-count", "holders"]:
            c.get("tokens", "/v2/tokens/{address_hash_param}/instances/{token_id_param}/" + sub, f"{base}/{sub}")
    print(f"parity routes: {c.passed} passed, {c.failed} failed")
    sys.exit(0 if c.failed == 0 and c.passed > 0 else 1)


if __name__ == "__main__":
    main()
