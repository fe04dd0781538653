// rockscout explorer pages: theme toggle, relative times, quick search suggestions, read-only contract calls and
// live updates of the home page over the Phoenix V2 WebSocket. Plain JS, no build step. Chain data is only ever
// written with textContent, never parsed as HTML.
"use strict";

(function theme() {
  var root = document.documentElement;
  var saved = null;
  try { saved = localStorage.getItem("theme"); } catch (e) { saved = null; }
  if (saved === "light" || saved === "dark") root.setAttribute("data-theme", saved);
  var button = document.getElementById("theme-toggle");
  if (!button) return;
  function isDark() {
    return root.getAttribute("data-theme") === "dark" ||
      (!root.getAttribute("data-theme") && window.matchMedia("(prefers-color-scheme: dark)").matches);
  }
  // The button is a toggle of the dark theme: screen readers hear whether it is on.
  button.setAttribute("aria-pressed", String(isDark()));
  button.addEventListener("click", function () {
    var next = isDark() ? "light" : "dark";
    root.setAttribute("data-theme", next);
    button.setAttribute("aria-pressed", String(next === "dark"));
    try { localStorage.setItem("theme", next); } catch (e) { /* private mode */ }
  });
})();

function ago(seconds) {
  if (seconds < 0) return "just now";
  if (seconds < 60) return Math.floor(seconds) + "s ago";
  if (seconds < 3600) return Math.floor(seconds / 60) + "m ago";
  if (seconds < 86400) return Math.floor(seconds / 3600) + "h ago";
  return Math.floor(seconds / 86400) + "d ago";
}

function refreshTimes() {
  var now = Date.now() / 1000;
  document.querySelectorAll("time[datetime]").forEach(function (t) {
    var at = Date.parse(t.getAttribute("datetime"));
    if (!isNaN(at)) t.textContent = ago(now - at / 1000);
  });
}
setInterval(refreshTimes, 10000);

function el(tag, text, href) {
  var node = document.createElement(tag);
  if (href) {
    var a = document.createElement("a");
    a.href = href;
    a.textContent = text;
    node.appendChild(a);
  } else if (text !== undefined) {
    node.textContent = text;
  }
  return node;
}

function short(hash) {
  return hash && hash.length > 14 ? hash.slice(0, 8) + "…" + hash.slice(-6) : hash || "";
}

// A table cell for an API address object, as the server renders it: its name (or short hash), then its ENS name.
function addressCell(address) {
  var hash = address && address.hash;
  if (!hash) return el("td", "—");
  var cell = el("td", address.name || short(hash), "/address/" + hash);
  cell.firstChild.className = "mono";
  cell.firstChild.title = hash;
  cell.firstChild.setAttribute("data-hash", hash);
  if (address.ens_domain_name) {
    var ens = document.createElement("span");
    ens.className = "ens";
    ens.textContent = "(" + address.ens_domain_name + ")";
    cell.appendChild(ens);
  }
  return cell;
}

(function search() {
  var input = document.getElementById("search-q");
  var list = document.getElementById("suggestions");
  if (!input || !list) return;
  var timer = null;
  var asked = 0;
  input.addEventListener("input", function () {
    clearTimeout(timer);
    var q = input.value.trim();
    if (q.length < 3) { list.replaceChildren(); return; }
    timer = setTimeout(function () {
      var mine = ++asked;
      fetch("/api/v2/search/quick?q=" + encodeURIComponent(q))
        .then(function (r) { return r.ok ? r.json() : []; })
        .then(function (items) {
          if (mine !== asked) return;
          list.replaceChildren();
          (Array.isArray(items) ? items : []).slice(0, 8).forEach(function (item) {
            var href = null, label = null;
            if (item.type === "block") { href = "/block/" + item.block_number; label = "Block " + item.block_number; }
            else if (item.type === "transaction") { href = "/tx/" + item.transaction_hash; label = "Tx " + short(item.transaction_hash); }
            else if (item.type === "token") { href = "/token/" + item.address_hash; label = (item.name || "") + " (" + (item.symbol || "") + ") " + short(item.address_hash); }
            else if (item.address_hash) {
              // A name-service match carries its name in ens_info (its `name` is the contract's, usually null).
              var name = item.name || (item.ens_info && item.ens_info.name);
              href = "/address/" + item.address_hash; label = (name ? name + " " : "") + short(item.address_hash);
            }
            if (href) list.appendChild(el("li", label, href));
          });
        })
        .catch(function () { list.replaceChildren(); });
    }, 200);
  });
})();

(function contractReads() {
  // The server encodes the arguments and decodes the answer with the contract's ABI; the page only shows text.
  var forms = document.querySelectorAll("form.call");
  forms.forEach(function (form) {
    form.addEventListener("submit", function (event) {
      event.preventDefault();
      var out = form.querySelector("output");
      var args = Array.prototype.map.call(form.querySelectorAll("input.arg"), function (i) { return i.value; });
      var body = { method_id: form.getAttribute("data-selector"), args: args, contract_type: "regular" };
      var url = "/api/v2/smart-contracts/" + form.getAttribute("data-to") + "/query-read-method";
      fetch(url, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(body) })
        .then(function (r) { return r.json(); })
        .then(function (answer) {
          if (!answer.result) {
            var detail = answer.errors && answer.errors[0] ? answer.errors[0].detail : answer.message;
            out.textContent = "error: " + (detail || "no answer");
            return;
          }
          if (answer.is_error) { out.textContent = "error: " + answer.result.message; return; }
          out.textContent = answer.result.output.map(function (o) {
            return typeof o.value === "string" ? o.value : JSON.stringify(o.value);
          }).join(", ");
        })
        .catch(function (e) { out.textContent = "error: " + e; });
    });
  });
})();

// A small Phoenix V2 client: [join_ref, ref, topic, event, payload] frames, joins, heartbeats, reconnects.
function Phoenix(url, onMessage) {
  this.url = url;
  this.onMessage = onMessage;
  this.ref = 0;
  this.topics = [];
  this.connect();
}
Phoenix.prototype.connect = function () {
  var self = this;
  var socket = new WebSocket(this.url);
  this.socket = socket;
  socket.onopen = function () {
    self.topics.forEach(function (topic) { self.send(topic, "phx_join", {}, true); });
    // What happened while no socket was joined (since the page was rendered, or during a reconnect) is read again.
    if (self.onJoined) self.onJoined();
    self.heartbeat = setInterval(function () { self.send("phoenix", "heartbeat", {}, false); }, 30000);
    document.body.setAttribute("data-live", "connected");
  };
  socket.onmessage = function (event) {
    var frame;
    try { frame = JSON.parse(event.data); } catch (e) { return; }
    if (Array.isArray(frame) && frame.length === 5) self.onMessage(frame[2], frame[3], frame[4]);
  };
  socket.onclose = function () {
    clearInterval(self.heartbeat);
    document.body.setAttribute("data-live", "disconnected");
    setTimeout(function () { self.connect(); }, 3000);
  };
};
Phoenix.prototype.send = function (topic, event, payload, join) {
  if (this.socket.readyState !== WebSocket.OPEN) return;
  var ref = String(++this.ref);
  this.socket.send(JSON.stringify([join ? ref : null, ref, topic, event, payload]));
};
Phoenix.prototype.join = function (topic) {
  this.topics.push(topic);
  this.send(topic, "phx_join", {}, true);
};

(function live() {
  var blocks = document.getElementById("latest-blocks");
  var txs = document.getElementById("latest-txs");
  if (!blocks || !txs || !window.WebSocket) return;
  var scheme = location.protocol === "https:" ? "wss://" : "ws://";
  var client = new Phoenix(scheme + location.host + "/socket/v2/websocket?vsn=2.0.0", function (topic, event, payload) {
    if (event === "new_block" && payload && payload.block) addBlock(payload.block);
    if (event === "transaction") reloadTransactions();
  });
  client.join("blocks:new_block");
  client.join("transactions:new_transaction");
  client.onJoined = function () { reloadBlocks(); reloadTransactions(); };
  // As many rows as the server rendered.
  var blockRows = blocks.children.length || 6;
  var txRows = txs.children.length || 6;

  // A block that follows the newest row is added; one that replaces a row (a reorg) or leaves a gap (a missed push)
  // has the list read again.
  function addBlock(block) {
    var shown = blocks.querySelector('[data-height="' + Number(block.height) + '"]');
    if (shown && shown.getAttribute("data-hash") === block.hash) return;
    var top = blocks.firstElementChild ? Number(blocks.firstElementChild.getAttribute("data-height")) : NaN;
    if (shown || Number(block.height) !== top + 1) { reloadBlocks(); return; }
    blocks.insertBefore(blockRow(block), blocks.firstChild);
    while (blocks.children.length > blockRows) blocks.removeChild(blocks.lastChild);
    var height = document.getElementById("tile-height");
    if (height) height.textContent = Number(block.height).toLocaleString("en-US");
    reloadTiles();
  }

  // The newest blocks from /main-page/blocks, replacing the rows (one request at a time).
  var blocksAsked = false;
  function reloadBlocks() {
    if (blocksAsked) return;
    blocksAsked = true;
    fetch("/api/v2/main-page/blocks")
      .then(function (r) { return r.ok ? r.json() : []; })
      .then(function (items) {
        var rows = (Array.isArray(items) ? items : []).slice(0, blockRows).map(blockRow);
        if (rows.length) blocks.replaceChildren.apply(blocks, rows);
        var height = document.getElementById("tile-height");
        if (height && rows.length) height.textContent = Number(items[0].height).toLocaleString("en-US");
        reloadTiles();
      })
      .catch(function () { /* the next block retries */ })
      .then(function () { blocksAsked = false; });
  }

  function blockRow(block) {
    var row = document.createElement("tr");
    row.setAttribute("data-height", String(Number(block.height)));
    row.setAttribute("data-hash", String(block.hash));
    row.appendChild(el("td", String(block.height), "/block/" + Number(block.height)));
    var when = el("td");
    var time = document.createElement("time");
    time.setAttribute("datetime", block.timestamp);
    time.setAttribute("title", block.timestamp);
    time.textContent = ago(Date.now() / 1000 - Date.parse(block.timestamp) / 1000);
    when.appendChild(time);
    row.appendChild(when);
    row.appendChild(el("td", String(block.transactions_count)));
    row.appendChild(addressCell(block.miner));
    return row;
  }

  // The counters of the tiles, from /stats (at most once per second; a block within that second is counted by one
  // reload at its end, so the tiles never stay behind the last block of a burst).
  var tilesAsked = 0;
  var tilesLater = null;
  function reloadTiles() {
    var wait = tilesAsked + 1000 - Date.now();
    if (wait > 0) {
      if (!tilesLater) tilesLater = setTimeout(function () { tilesLater = null; reloadTiles(); }, wait);
      return;
    }
    tilesAsked = Date.now();
    fetch("/api/v2/stats")
      .then(function (r) { return r.ok ? r.json() : null; })
      .then(function (stats) {
        if (!stats) return;
        [["tile-blocks", "total_blocks"], ["tile-transactions", "total_transactions"],
          ["tile-today", "transactions_today"], ["tile-addresses", "total_addresses"]].forEach(function (pair) {
          var tile = document.getElementById(pair[0]);
          var value = Number(stats[pair[1]]);
          if (tile && isFinite(value)) tile.textContent = value.toLocaleString("en-US");
        });
      })
      .catch(function () { /* the next block retries */ });
  }

  function reloadTransactions() {
    fetch("/api/v2/main-page/transactions")
      .then(function (r) { return r.ok ? r.json() : []; })
      .then(function (items) {
        var rows = (Array.isArray(items) ? items : []).slice(0, txRows).map(function (tx) {
          var row = document.createElement("tr");
          var hashCell = el("td", short(tx.hash), "/tx/" + tx.hash);
          hashCell.firstChild.className = "mono";
          hashCell.firstChild.setAttribute("data-hash", tx.hash);
          row.appendChild(hashCell);
          row.appendChild(addressCell(tx.from));
          row.appendChild(addressCell(tx.to));
          row.appendChild(el("td", String(tx.block_number), "/block/" + tx.block_number));
          return row;
        });
        if (rows.length) txs.replaceChildren.apply(txs, rows);
      })
      .catch(function () { /* the next event retries */ });
  }
})();
