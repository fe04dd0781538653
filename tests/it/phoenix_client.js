// The real `phoenix` npm client (with `ws` as its transport) against rockscout: joins the seed's three topics,
// heartbeats every 500 ms, prints what it receives, and exits 0 once a new_block and a transaction count have
// arrived (1 on an error or after 30 s). Run by tests/it/ws.rs with NODE_PATH=scripts/tools/node_modules.
const { Socket } = require("phoenix");
const WebSocket = require("ws");

const [url, address] = process.argv.slice(2);
const socket = new Socket(url, { transport: WebSocket, heartbeatIntervalMs: 500, timeout: 5000 });
socket.onError((e) => console.log("socket_error " + String(e && e.message)));
socket.connect();

const got = { block: false, count: false };
function finishWhenDone() {
  if (got.block && got.count) socket.disconnect(() => process.exit(0));
}
function join(topic, events) {
  const channel = socket.channel(topic);
  for (const [event, onEvent] of Object.entries(events)) channel.on(event, onEvent);
  channel
    .join()
    .receive("ok", () => console.log("joined " + topic))
    .receive("error", (e) => {
      console.log("join_error " + topic + " " + JSON.stringify(e));
      process.exit(1);
    })
    .receive("timeout", () => {
      console.log("join_timeout " + topic);
      process.exit(1);
    });
}

join("blocks:new_block", {
  new_block: (payload) => {
    console.log("new_block " + JSON.stringify(payload));
    got.block = true;
    finishWhenDone();
  },
});
join("transactions:new_transaction", {
  transaction: (payload) => {
    console.log("transaction " + JSON.stringify(payload));
    got.count = true;
    finishWhenDone();
  },
});
join("addresses:" + address, {
  transaction: (payload) => console.log("address_transaction " + payload.transactions.length),
});
setTimeout(() => {
  console.log("timeout");
  process.exit(1);
}, 30000);
