// amqplib over amqps, with its own TLS options (ca, cert, key): declare a queue, publish to
// it, read the message back; prints what it got as JSON.
const amqp = require("amqplib");
const fs = require("fs");

async function main() {
  const [url, ca, cert, key] = process.argv.slice(2);
  const options = { ca: [fs.readFileSync(ca)], servername: "localhost" };
  if (cert) {
    options.cert = fs.readFileSync(cert);
    options.key = fs.readFileSync(key);
  }
  const connection = await amqp.connect(url, options);
  const channel = await connection.createChannel();
  await channel.assertQueue("node-tls");
  channel.sendToQueue("node-tls", Buffer.from("from node"));
  let message = false;
  for (let i = 0; i < 50 && !message; i++) {
    message = await channel.get("node-tls", { noAck: true });
    if (!message) await new Promise((resolve) => setTimeout(resolve, 100));
  }
  console.log(JSON.stringify({ body: message ? message.content.toString() : null }));
  await connection.close();
}

main().catch((error) => {
  console.log(JSON.stringify({ error: String(error) }));
  process.exit(1);
});
