// mqtt.js (the mqtt package) over MQTT (mqtt://HOST:PORT) or Web-MQTT (ws://HOST:PORT/ws, with
// the ws package as its WebSocket): connect (clean session), subscribe at QoS 1, publish at
// QoS 1 (waiting for its PUBACK), receive the message, end. Prints what it saw as JSON on its
// last line.
//
//   node mqttjs.js URL TOPIC CLIENT_ID [PROTOCOL_VERSION (4: MQTT 3.1.1, the default; 5)]
const mqtt = require("mqtt");
const WebSocket = require("ws");

function main() {
  const [url, topic, clientId, version = "4"] = process.argv.slice(2);
  const seen = { sessionPresent: null, granted: null, published: false };
  const timer = setTimeout(() => fail("timed out"), 20000);

  function fail(reason) {
    clearTimeout(timer);
    console.log(JSON.stringify({ ...seen, error: String(reason) }));
    process.exit(1);
  }

  const client = mqtt.connect(url, {
    protocolVersion: Number(version),
    clientId,
    username: "guest",
    password: "guest",
    clean: true,
    reconnectPeriod: 0,
    createWebsocket: (address, protocols, options) => {  // (its own, to see the subprotocol)
      const socket = new WebSocket(address, protocols, options.wsOptions);
      socket.on("open", () => { seen.protocol = socket.protocol; });
      return socket;
    },
  });
  client.on("error", fail);
  client.on("connect", (connack) => {
    seen.sessionPresent = connack.sessionPresent;
    client.subscribe(topic, { qos: 1 }, (err, granted) => {
      if (err) return fail(err);
      seen.granted = granted.map((g) => g.qos);
      client.publish(topic, "from mqtt.js", { qos: 1 }, (error) => {
        if (error) return fail(error);
        seen.published = true;
      });
    });
  });
  client.on("message", (got, payload, packet) => {
    seen.message = { topic: got, payload: payload.toString(), qos: packet.qos,
                     retain: packet.retain };
    // End once this delivery's PUBACK is written: mqtt.js writes it after this event, and a
    // DISCONNECT before it leaves the PUBACK to a socket the broker may have closed already
    // (over WebSocket: EPIPE as the client's close frame follows). ("packetsend" comes just
    // before the write: the end waits for the loop's next turn.)
    client.on("packetsend", function acked(sent) {
      if (sent.cmd !== "puback" || sent.messageId !== packet.messageId) return;
      client.removeListener("packetsend", acked);
      setImmediate(() => client.end(false, {}, () => {
        clearTimeout(timer);
        console.log(JSON.stringify(seen));
      }));
    });
  });
}

main();
