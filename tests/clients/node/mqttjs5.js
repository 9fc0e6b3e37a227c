// mqtt.js (the mqtt package) at MQTT 5.0 over MQTT (mqtt://HOST:PORT) or Web-MQTT
// (ws://HOST:PORT/ws, with the ws package as its WebSocket), one step after another, each
// waiting for what says it is done:
//   1. connect (clean start) with a Topic Alias Maximum of its own (the broker may alias the
//      topics it sends) and autoAssignTopicAlias (mqtt.js aliases the topics it publishes to,
//      up to the broker's Topic Alias Maximum);
//   2. subscribe to TOPIC at QoS 1 with Subscription Identifier 7;
//   3. publish to TOPIC at QoS 1 with user properties (one name twice), a response topic,
//      correlation data, a content type, a payload format indicator and a Message Expiry
//      Interval of 60 s; wait for its PUBACK and for its delivery;
//   4. publish to TOPIC again, no properties (both ways the topic is an alias now); the same;
//   5. publish at QoS 1 to NOWHERE, which nobody subscribes to: its PUBACK;
//   6. end.
// Prints what it saw as JSON on its last line: packets as they came and went on the wire
// ("packetreceive" and "packetsend" are mqtt.js's events before it reads or writes one), and
// what mqtt.js made of them.
//
//   node mqttjs5.js URL TOPIC NOWHERE CLIENT_ID
const mqtt = require("mqtt");
const WebSocket = require("ws");

const [url, topic, nowhere, clientId] = process.argv.slice(2);
const seen = { sent: [], pubacks: [] };
const timer = setTimeout(() => fail("timed out"), 20000);

function fail(reason) {
  clearTimeout(timer);
  console.log(JSON.stringify({ ...seen, error: String(reason) }));
  process.exit(1);
}

function plain(properties) {  // (Buffers as text, for JSON)
  const out = {};
  for (const [name, value] of Object.entries(properties || {})) {
    out[name] = Buffer.isBuffer(value) ? value.toString() : value;
  }
  return out;
}

async function main() {
  const client = mqtt.connect(url, {
    protocolVersion: 5,
    clientId,
    username: "guest",
    password: "guest",
    clean: true,
    reconnectPeriod: 0,
    properties: { topicAliasMaximum: 4 },
    autoAssignTopicAlias: true,
    createWebsocket: (address, protocols, options) =>
      new WebSocket(address, protocols, options.wsOptions),
  });
  client.on("error", fail);
  let wire = null;  // the PUBLISH mqtt.js is reading, as it came (it fills in an alias's topic)
  const deliveries = [];  // not yet waited for
  let deliver = null;
  client.on("packetreceive", (packet) => {
    if (packet.cmd === "publish") {
      wire = { topic: packet.topic, topicAlias: packet.properties?.topicAlias };
    } else if (packet.cmd === "puback") {
      seen.pubacks.push(packet.reasonCode);
    }
  });
  client.on("packetsend", (packet) => {
    if (packet.cmd === "publish") {
      seen.sent.push({ topic: packet.topic, topicAlias: packet.properties?.topicAlias });
    }
  });
  client.on("message", (got, payload, packet) => {
    deliveries.push({ wire, topic: got, payload: payload.toString(), qos: packet.qos,
                      retain: packet.retain, properties: plain(packet.properties) });
    if (deliver) deliver(deliveries.shift());
  });
  const delivery = () => (deliveries.length ? Promise.resolve(deliveries.shift())
    : new Promise((resolve) => { deliver = (got) => { deliver = null; resolve(got); }; }));

  const connack = await new Promise((resolve) => client.once("connect", resolve));
  seen.connack = { sessionPresent: connack.sessionPresent, reasonCode: connack.reasonCode,
                   properties: plain(connack.properties) };
  seen.granted = (await client.subscribeAsync(topic, {
    qos: 1, properties: { subscriptionIdentifier: 7 } })).map((g) => g.qos);
  [, seen.first] = await Promise.all([client.publishAsync(topic, "first", { qos: 1, properties: {
    userProperties: { "x-from": "mqtt.js", twice: ["one", "two"] },
    responseTopic: "embroker/replies", correlationData: Buffer.from("request-1"),
    contentType: "text/plain", payloadFormatIndicator: true, messageExpiryInterval: 60 } }),
  delivery()]);
  [, seen.second] = await Promise.all([client.publishAsync(topic, "second", { qos: 1 }),
    delivery()]);

  // PUBACK 0x10 (no matching subscribers): mqtt.js takes it as success, and its callback
  // gets no error and the PUBLISH it sent (not the PUBACK).
  const stored = await client.publishAsync(nowhere, "to nobody", { qos: 1 });
  seen.nowhere = { callback: stored && stored.cmd };

  await client.endAsync();
  clearTimeout(timer);
  console.log(JSON.stringify(seen));
}

main().catch(fail);
