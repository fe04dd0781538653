#!/usr/bin/env node
// Compiles Solidity files with the pinned solc (scripts/tools, solcjs) and writes the output in Foundry's `out/`
// layout: out/<File>.sol/<Contract>.json ({abi, bytecode, deployedBytecode, metadata, id}) and
// out/build-info/<id>.json ({id, source_id_to_path, language, solcVersion, solcLongVersion, input, output}).
// Used by the tests of local-artifact matching (forge itself is not installed: this writes what `forge build
// --build-info` writes, from the same compiler output).
// Usage: foundry-out.js OUT_DIR FILE.sol...
const fs = require("fs");
const path = require("path");
const crypto = require("crypto");
const solc = require(path.join(__dirname, "tools", "node_modules", "solc"));

const [outDir, ...files] = process.argv.slice(2);
if (!outDir || files.length === 0) {
  console.error("usage: foundry-out.js OUT_DIR FILE.sol...");
  process.exit(2);
}
const sources = {};
for (const f of files) sources[`src/${path.basename(f)}`] = { content: fs.readFileSync(f, "utf8") };
const input = {
  language: "Solidity",
  sources,
  settings: {
    optimizer: { enabled: true, runs: 200 },
    evmVersion: "cancun",
    outputSelection: {
      "*": {
        "*": [
          "abi",
          "metadata",
          "evm.bytecode.object",
          "evm.bytecode.linkReferences",
          "evm.deployedBytecode.object",
          "evm.deployedBytecode.linkReferences",
          "evm.deployedBytecode.immutableReferences",
        ],
      },
    },
  },
};
const output = JSON.parse(solc.compile(JSON.stringify(input)));
const errors = (output.errors || []).filter((e) => e.severity === "error");
if (errors.length) {
  for (const e of errors) console.error(e.formattedMessage);
  process.exit(1);
}
const id = crypto.createHash("sha256").update(JSON.stringify(input)).digest("hex").slice(0, 32);
const long = solc.version().replace(/\.Emscripten.*$/, "");
// A rebuild replaces the build info, as forge prunes stale build-info files.
fs.rmSync(path.join(outDir, "build-info"), { recursive: true, force: true });
fs.mkdirSync(path.join(outDir, "build-info"), { recursive: true });
const sourceIds = Object.fromEntries(Object.keys(sources).map((p, i) => [String(i), p]));
const buildInfo = { id, source_id_to_path: sourceIds, language: "Solidity", solcVersion: long.split("+")[0],
  solcLongVersion: long, input, output };
fs.writeFileSync(path.join(outDir, "build-info", `${id}.json`), JSON.stringify(buildInfo));
for (const [file, contracts] of Object.entries(output.contracts)) {
  const dir = path.join(outDir, path.basename(file));
  fs.mkdirSync(dir, { recursive: true });
  for (const [name, c] of Object.entries(contracts)) {
    const artifact = {
      abi: c.abi,
      bytecode: { object: "0x" + c.evm.bytecode.object, linkReferences: c.evm.bytecode.linkReferences },
      deployedBytecode: {
        object: "0x" + c.evm.deployedBytecode.object,
        linkReferences: c.evm.deployedBytecode.linkReferences,
        immutableReferences: c.evm.deployedBytecode.immutableReferences,
      },
      metadata: JSON.parse(c.metadata),
      rawMetadata: c.metadata,
      id: Number(Object.keys(sourceIds).find((k) => sourceIds[k] === file)),
    };
    fs.writeFileSync(path.join(dir, `${name}.json`), JSON.stringify(artifact));
  }
}
console.log(`wrote ${outDir}`);
