// Drives headless Chromium (playwright-core) over rockscout's pages for tests/it/ui.rs. Usage:
//   node ui_browser.js '<json: {base, rpc, shots, chromium, tx, address, token, hostile, hostileName,
//   hostileSymbol, nft, nftId, selectors: {name, symbol, decimals}}>'
// Checks every page against the node's own answers (asked here over JSON-RPC), follows links, watches for console
// errors and dialogs, runs axe-core, mines a block and waits for it on the home page without a reload, and writes
// one screenshot per page into `shots`. Prints a JSON report; exits 1 when any check failed.
"use strict";
const path = require("path");
const fs = require("fs");
const tools = path.join(__dirname, "..", "..", "scripts", "tools", "node_modules");
const { chromium } = require(path.join(tools, "playwright-core"));
const axeSource = fs.readFileSync(path.join(tools, "axe-core", "axe.min.js"), "utf8");

const input = JSON.parse(process.argv[2]);
const failures = [];
const checked = [];
function check(ok, what) {
  checked.push(what);
  if (!ok) failures.push(what);
}

async function rpc(method, params) {
  const r = await fetch(input.rpc, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ jsonrpc: "2.0", id: 1, method, params }),
  });
  const body = await r.json();
  if (body.error) throw new Error(method + ": " + body.error.message);
  return body.result;
}

async function main() {
  fs.mkdirSync(input.shots, { recursive: true });
  // A fresh profile each run (playwright passes it as --user-data-dir).
  const context = await chromium.launchPersistentContext(fs.mkdtempSync(path.join(input.shots, "profile-")), {
    executablePath: input.chromium,
    headless: true,
    viewport: { width: 1280, height: 900 },
    args: ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
      "--disable-background-networking", "--disable-component-update", "--disable-sync"],
  });
  const page = await context.newPage();
  const consoleErrors = [];
  const dialogs = [];
  const offOrigin = [];
  page.on("console", (m) => { if (m.type() === "error") consoleErrors.push(page.url() + ": " + m.text()); });
  page.on("pageerror", (e) => consoleErrors.push(page.url() + ": " + e.message));
  page.on("dialog", async (d) => { dialogs.push(d.message()); await d.dismiss(); });
  page.on("request", (r) => { if (!r.url().startsWith(input.base)) offOrigin.push(r.url()); });

  const visitedLinks = new Set();
  async function visit(name, url) {
    const response = await page.goto(input.base + url, { waitUntil: "load" });
    check(response.status() === 200, `${name}: ${url} answers 200 (got ${response.status()})`);
    // Headless Chromium's capture can fail once on a loaded machine ("Unable to capture screenshot"): one retry.
    const shot = { path: path.join(input.shots, name + ".png"), fullPage: true };
    await page.screenshot(shot).catch(() => page.screenshot(shot));
    await page.evaluate(axeSource);
    const result = await page.evaluate(() => window.axe.run(document, { resultTypes: ["violations"] }));
    const serious = result.violations.filter((v) => v.impact === "serious" || v.impact === "critical");
    check(serious.length === 0,
      `${name}: no serious accessibility violations (${serious.map((v) => v.id + " " + v.nodes.length).join(", ")})`);
    // Links lead where they say: every internal link answers 200, and one naming a hash goes to that hash's page.
    const links = await page.$$eval("a[href]", (as) => as.map((a) => ({
      href: a.href, hash: a.getAttribute("data-hash"), text: a.textContent })));
    for (const link of links) {
      if (!link.href.startsWith(input.base) || visitedLinks.has(link.href) || visitedLinks.size > 400) continue;
      visitedLinks.add(link.href);
      const r = await context.request.get(link.href);
      check(r.status() === 200, `${name}: link ${link.href} answers 200 (got ${r.status()})`);
      if (link.hash) {
        check(link.href.toLowerCase().includes(link.hash.toLowerCase()), `${name}: link ${link.href} goes to ${link.hash}`);
      }
    }
  }
  const text = async (selector) => (await page.textContent(selector)).trim();
  const attr = (selector, name) => page.getAttribute(selector, name);

  // Home, then a new block appears without a reload.
  await visit("home", "/");
  await page.evaluate(() => { window.notReloaded = true; });
  const head = Number(await rpc("eth_blockNumber", []));
  check(Number(await attr("#latest-blocks tr", "data-height")) === head, "home: the newest block row is the node's head");
  await page.waitForFunction(() => document.body.getAttribute("data-live") === "connected", null, { timeout: 15000 });
  const accounts = await rpc("eth_accounts", []);
  const liveTx = await rpc("eth_sendTransaction", [{ from: accounts[3], to: accounts[4], value: "0x1" }]);
  await rpc("evm_mine", []);
  try {
    await page.waitForSelector(`#latest-blocks tr[data-height="${head + 1}"]`, { timeout: 20000 });
    await page.waitForSelector(`#latest-txs a[data-hash="${liveTx}"]`, { timeout: 20000 });
    check(await page.evaluate(() => window.notReloaded === true), "home: the new block and transaction arrived without a reload");
    const stats = await (await fetch(input.base + "/api/v2/stats")).json();
    const total = Number(stats.total_blocks).toLocaleString("en-US");
    await page.waitForFunction((want) => document.getElementById("tile-blocks").textContent === want, total, { timeout: 15000 })
      .then(() => check(true, "home: the total blocks tile follows live"))
      .catch(() => check(false, "home: the total blocks tile follows live (want " + total + ")"));
  } catch (e) {
    check(false, "home: mined block " + (head + 1) + " and its transaction appear live: " + e.message);
  }
  await page.screenshot({ path: path.join(input.shots, "home-live.png"), fullPage: true });

  // Block page against eth_getBlockByNumber.
  const tx = await rpc("eth_getTransactionByHash", [input.tx]);
  const receipt = await rpc("eth_getTransactionReceipt", [input.tx]);
  const block = await rpc("eth_getBlockByNumber", [tx.blockNumber, false]);
  await visit("block", "/block/" + Number(block.number));
  check(await text("#block-hash") === block.hash, "block: hash equals the node's");
  check(await text("#block-tx-count") === String(block.transactions.length), "block: transaction count equals the node's");
  check((await text("#block-gas-used")).startsWith(Number(block.gasUsed).toLocaleString("en-US")), "block: gas used equals the node's");
  await visit("blocks", "/blocks");

  // Transaction page against the transaction and its receipt.
  await visit("transaction", "/tx/" + input.tx);
  check(await text("#tx-hash") === tx.hash, "tx: hash");
  check(BigInt(await attr("#tx-value", "data-wei")) === BigInt(tx.value), "tx: value equals the node's");
  const fee = BigInt(receipt.gasUsed) * BigInt(receipt.effectiveGasPrice);
  check(BigInt(await attr("#tx-fee", "data-wei")) === fee, "tx: fee equals gasUsed × effectiveGasPrice");
  check(await text("#tx-block") === String(Number(receipt.blockNumber)), "tx: block number");
  check((await text("#tx-status")) === (receipt.status === "0x1" ? "Success" : "Failed"), "tx: status");
  check((await text("#tx-gas")).startsWith(Number(receipt.gasUsed).toLocaleString("en-US")), "tx: gas used");
  check(await text("#tx-nonce") === String(Number(tx.nonce)), "tx: nonce");
  for (const tab of ["internal", "logs", "state", "raw_trace"]) await visit("transaction-" + tab, `/tx/${input.tx}?tab=${tab}`);
  await visit("transactions", "/txs");
  await visit("pending", "/txs?tab=pending");

  // Address page against eth_getBalance and the nonce.
  await visit("address", "/address/" + input.address);
  const balance = BigInt(await rpc("eth_getBalance", [input.address, "latest"]));
  check(BigInt(await attr("#address-balance", "data-wei")) === balance, "address: balance equals the node's");
  for (const tab of ["token_transfers", "tokens", "internal_txns", "logs"]) {
    await visit("address-" + tab, `/address/${input.address}?tab=${tab}`);
  }
  await visit("contract", `/address/${input.token}?tab=contract`);
  check(await text("#contract-name") === "DemoToken", "contract: name from the matched artifact");
  check((await text("#contract-source")).includes("contract DemoToken"), "contract: source shown");
  // Read-only calls: the page posts the arguments to query-read-method, the server encodes, calls and decodes.
  const holderWord = input.address.slice(2).toLowerCase().padStart(64, "0");
  const held = BigInt(await rpc("eth_call", [{ to: input.token, data: input.selectors.balanceOf + holderWord }, "latest"]));
  const reads = [["name", "Page Token"], ["symbol", "PAGE"], ["decimals", "18"], ["balanceOf", held.toString(), input.address]];
  for (const [fn, expected, argument] of reads) {
    const form = `form.call[data-selector="${input.selectors[fn]}"]`;
    if (argument) await page.fill(`${form} input.arg`, argument);
    await page.click(`${form} button`);
    try {
      await page.waitForFunction((f) => document.querySelector(f + " output").textContent !== "", form, { timeout: 10000 });
      check(await text(`${form} output`) === expected, `contract: ${fn}(${argument || ""}) reads ${expected}`);
    } catch (e) {
      check(false, `contract: ${fn}() answers: ${e.message}`);
    }
  }

  // Tokens; the hostile token's name and symbol render as text and run nothing.
  await visit("tokens", "/tokens");
  await visit("token", "/token/" + input.token);
  await visit("token-holders", `/token/${input.token}?tab=holders`);
  await visit("hostile-token", "/token/" + input.hostile);
  check(await text("#token-name") === input.hostileName, "hostile token: the name shows as text");
  check(await text("#token-symbol") === input.hostileSymbol, "hostile token: the symbol shows as text");
  check(await page.isVisible("#token-name"), "hostile token: the name is visible");
  check(await page.$$eval("main img, main script", (n) => n.length) === 0, "hostile token: no element was injected");
  await visit("nft-inventory", `/token/${input.nft}?tab=inventory`);
  await visit("nft-instance", `/token/${input.nft}/instance/${input.nftId}`);
  const owner = "0x" + (await rpc("eth_call", [{ to: input.nft, data: "0x6352211e" + BigInt(input.nftId).toString(16).padStart(64, "0") }, "latest"])).slice(26);
  check((await attr("#instance-owner a", "data-hash")).toLowerCase() === owner.toLowerCase(), "nft: owner equals ownerOf");
  // The instance's transfers: one row per Transfer log of this id on the node (ERC-721: the id is topic 3).
  const idTopic = "0x" + BigInt(input.nftId).toString(16).padStart(64, "0");
  const transferTopic = "0xddf252ad1be2c89b69c2b068fc378daa952ba7f163c4a11628f55a4df523b3ef";
  const moves = await rpc("eth_getLogs", [{ address: input.nft, fromBlock: "0x0", toBlock: "latest", topics: [transferTopic, null, null, idTopic] }]);
  const rows = await page.$$eval("#instance-transfers tbody tr", (n) => n.length);
  check(moves.length > 0 && rows === moves.length, `nft: ${rows} transfer rows for the node's ${moves.length} Transfer logs of the id`);
  await visit("search", "/search-results?q=Page");
  check((await page.textContent("#results")).includes("Page Token"), "search: finds the token by name");
  await page.goto(input.base + "/search-results?q=" + input.tx);
  check(new URL(page.url()).pathname === "/tx/" + input.tx, "search: an exact hash leads to its page");

  // Quick search suggestions from the header box.
  await page.goto(input.base + "/");
  await page.fill("#search-q", "Page");
  try {
    await page.waitForSelector("#suggestions li a", { timeout: 10000 });
    check(true, "search: suggestions appear");
  } catch (e) {
    check(false, "search: suggestions appear: " + e.message);
  }
  // A name-service match is labelled with its name.
  await page.fill("#search-q", "pagename.de");
  try {
    await page.waitForSelector("#suggestions li a:has-text('pagename.dev')", { timeout: 10000 });
    check(true, "search: a name's suggestion shows the name");
  } catch (e) {
    check(false, "search: a name's suggestion shows the name: " + (await page.textContent("#suggestions")));
  }

  // Dark theme from the toggle, kept across pages.
  await page.goto(input.base + "/");
  const lightBackground = await page.evaluate(() => getComputedStyle(document.body).backgroundColor);
  await page.click("#theme-toggle");
  const theme = await page.evaluate(() => document.documentElement.getAttribute("data-theme"));
  await page.goto(input.base + "/blocks");
  check(await page.evaluate(() => document.documentElement.getAttribute("data-theme")) === theme, "theme: the choice is kept");
  const toggledBackground = await page.evaluate(() => getComputedStyle(document.body).backgroundColor);
  check(toggledBackground !== lightBackground, "theme: the toggle changes the colours");
  const pressed = await page.getAttribute("#theme-toggle", "aria-pressed");
  check(pressed === String(theme === "dark"), `theme: the toggle says whether dark is on (${pressed}, ${theme})`);
  // The first Tab reaches the skip link, which moves the focus to the page's content.
  await page.keyboard.press("Tab");
  check(await page.evaluate(() => document.activeElement.className) === "skip-link", "keyboard: a skip link comes first");
  await page.keyboard.press("Enter");
  check(await page.evaluate(() => document.activeElement.id) === "main", "keyboard: the skip link focuses the content");
  await page.screenshot({ path: path.join(input.shots, "blocks-" + theme + ".png"), fullPage: true });

  // Phone width: nothing wider than the screen (wide tables scroll inside their panel).
  await page.setViewportSize({ width: 375, height: 800 });
  for (const [name, url] of [["home", "/"], ["transaction", "/tx/" + input.tx], ["address", "/address/" + input.address]]) {
    await page.goto(input.base + url);
    const wide = await page.evaluate(() => document.documentElement.scrollWidth);
    check(wide <= 375, `phone: ${name} fits 375 px (${wide})`);
    await page.screenshot({ path: path.join(input.shots, name + "-phone.png"), fullPage: true });
  }
  await page.setViewportSize({ width: 1280, height: 900 });

  // Home again: a reorg replaces the newest block, and its row shows the new block (the push names a height the
  // list already shows, so the list is read again).
  await page.goto(input.base + "/");
  await page.waitForFunction(() => document.body.getAttribute("data-live") === "connected", null, { timeout: 15000 });
  const before = await rpc("eth_getBlockByNumber", ["latest", false]);
  await rpc("anvil_reorg", [1, []]);
  const after = await rpc("eth_getBlockByNumber", ["latest", false]);
  check(after.hash !== before.hash && after.number === before.number, "reorg: the node replaced its newest block");
  await page.waitForSelector(`#latest-blocks tr[data-height="${Number(after.number)}"][data-hash="${after.hash}"]`, { timeout: 20000 })
    .then(() => check(true, "home: a block replaced by a reorg shows as the new block"))
    .catch(() => check(false, "home: the row of block " + Number(after.number) + " shows " + after.hash));

  // Unknown pages are an HTML 404.
  const missing = await page.goto(input.base + "/no/such/page");
  check(missing.status() === 404, "unknown page: 404");
  await page.screenshot({ path: path.join(input.shots, "not-found.png"), fullPage: true });
  const expected404 = input.base + "/no/such/page: ";
  consoleErrors.splice(0, consoleErrors.length, ...consoleErrors.filter((e) => !e.startsWith(expected404)));

  check(consoleErrors.length === 0, "no console errors: " + JSON.stringify(consoleErrors));
  check(dialogs.length === 0, "no dialog opened: " + JSON.stringify(dialogs));
  check(offOrigin.length === 0, "no request to another origin: " + JSON.stringify(offOrigin.slice(0, 5)));
  await context.close();
  console.log(JSON.stringify({ checked: checked.length, links: visitedLinks.size, failures, shots: input.shots }, null, 1));
  process.exit(failures.length ? 1 : 0);
}

main().catch((e) => {
  console.log(JSON.stringify({ error: String(e && e.stack || e), failures }));
  process.exit(1);
});
