#!/usr/bin/env node
// Compiles every src/dev/contracts/*.sol with the pinned solc (scripts/tools) into <Name>.json next to it:
// {"abi": [...], "bytecode": "0x...", "deployedBytecode": {"object": "0x...", "immutableReferences": {...}}} (the
// runtime code and its immutable positions let `rockscout dev` match its deployed demo contracts by code). With --check, compiles in memory and exits 1 if a checked-in artifact differs.
const fs = require("fs");
const path = require("path");
const solc = require(path.join(__dirname, "tools", "node_modules", "solc"));

const dir = path.join(__dirname, "..", "src", "dev", "contracts");
const check = process.argv.includes("--check");
const sources = {};
for (const f of fs.readdirSync(dir).filter((f) => f.endsWith(".sol")).sort()) {
  sources[f] = { content: fs.readFileSync(path.join(dir, f), "utf8") };
}
const input = {
  language: "Solidity",
  sources,
  settings: {
    optimizer: { enabled: true, runs: 200 },
    evmVersion: "cancun",
    metadata: { bytecodeHash: "none", appendCBOR: false },
    outputSelection: {
      "*": { "*": ["abi", "evm.bytecode.object", "evm.deployedBytecode.object", "evm.deployedBytecode.immutableReferences"] },
    },
  },
};
const out = JSON.parse(solc.compile(JSON.stringify(input)));
const errors = (out.errors || []).filter((e) => e.severity === "error");
if (errors.length) {
  for (const e of errors) console.error(e.formattedMessage);
  process.exit(1);
}
let stale = 0;
for (const file of Object.keys(out.contracts)) {
  for (const [name, c] of Object.entries(out.contracts[file])) {
    const deployed = c.evm.deployedBytecode;
    const artifact =
      JSON.stringify(
        {
          abi: c.abi,
          bytecode: "0x" + c.evm.bytecode.object,
          deployedBytecode: { object: "0x" + deployed.object, immutableReferences: deployed.immutableReferences },
        },
        null,
        1,
      ) + "\n";
    const target = path.join(dir, `${name}.json`);
    if (check) {
      const current = fs.existsSync(target) ? fs.readFileSync(target, "utf8") : "";
      if (current !== artifact) {
        console.error(`${target} is stale: run scripts/build-contracts.js`);
        stale++;
      }
    } else {
      fs.writeFileSync(target, artifact);
      console.log(`wrote ${path.relative(process.cwd(), target)}`);
    }
  }
}
process.exit(stale ? 1 : 0);
