// @stomp/stompjs over Web-STOMP, with the ws package as its WebSocket (Node 20 has no global
// one in every mode): connect, subscribe to a queue with client-individual acks (waiting for
// the SUBSCRIBE's receipt), publish to it, receive the message, ack it (waiting for the ACK's
// receipt), disconnect. Prints what it saw as JSON on its last line.
const { Client } = require("@stomp/stompjs");
const WebSocket = require("ws");

function main() {
  const [url, queue] = process.argv.slice(2);
  const destination = `/queue/${queue}`;
  const seen = { protocol: null, version: null, server: null };
  const timer = setTimeout(() => fail("timed out"), 20000);

  function fail(reason) {
    clearTimeout(timer);
    console.log(JSON.stringify({ ...seen, error: String(reason) }));
    process.exit(1);
  }

  const client = new Client({
    webSocketFactory: () => {
      const socket = new WebSocket(url, ["v12.stomp", "v11.stomp", "v10.stomp"]);
      socket.on("open", () => { seen.protocol = socket.protocol; });
      return socket;
    },
    connectHeaders: { login: "guest", passcode: "guest", host: "/" },
    reconnectDelay: 0,
    heartbeatIncoming: 0,
    heartbeatOutgoing: 0,
    onStompError: (frame) => fail(`${frame.headers.message}: ${frame.body}`),
    onWebSocketError: (event) => fail(event.message || "websocket error"),
  });

  client.onConnect = (connected) => {
    seen.version = connected.headers.version;
    seen.server = connected.headers.server;
    client.watchForReceipt("subscribed", () => {
      client.publish({
        destination,
        body: "from stompjs",
        headers: { "content-type": "text/plain", "x-from": "node", receipt: "sent" },
      });
    });
    client.subscribe(destination, (message) => {
      seen.body = message.body;
      seen.headers = {
        destination: message.headers.destination,
        subscription: message.headers.subscription,
        "content-type": message.headers["content-type"],
        "x-from": message.headers["x-from"],
      };
      client.watchForReceipt("acked", () => {
        seen.acked = true;
        client.deactivate().then(() => {
          clearTimeout(timer);
          console.log(JSON.stringify(seen));
        }, fail);
      });
      message.ack({ receipt: "acked" });
    }, { id: "node-sub", ack: "client-individual", receipt: "subscribed" });
  };
  client.activate();
}

main();
