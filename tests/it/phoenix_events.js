// The real `phoenix` npm client (with `ws` as its transport) listening on the topics given after the socket URL:
// prints "joined <topic>" per join, then one JSON line {"topic","event","payload"} per broadcast it receives, and
// exits 0 when its stdin closes (1 on a join error or timeout, or after 120 s). Run by tests/it/support/phoenix.rs
// with NODE_PATH=scripts/tools/node_modules.
const { Socket } = require("phoenix");
const WebSocket = require("ws");

const [url, ...topics] = process.argv.slice(2);
// A heartbeat not answered before the next one makes the client reconnect and rejoin, losing the pushes of the gap:
// room enough for a machine loaded by the whole test suite.
const socket = new Socket(url, { transport: WebSocket, heartbeatIntervalMs: 10000, timeout: 30000 });
socket.onError((e) => console.log("socket_error " + String(e && e.message)));
socket.onClose((e) => console.log("socket_close " + String(e && e.code)));
socket.connect();

const control = new Set(["phx_reply", "phx_close", "phx_error", "phx_join", "phx_leave"]);
for (const topic of topics) {
  const channel = socket.channel(topic);
  channel.onMessage = (event, payload) => {
    if (!control.has(event) && !event.startsWith("chan_reply_")) {
      console.log(JSON.stringify({ topic, event, payload }));
    }
    return payload;
  };
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
process.stdin.on("end", () => socket.disconnect(() => process.exit(0)));
process.stdin.resume();
setTimeout(() => {
  console.log("timeout");
  process.exit(1);
}, 120000);
