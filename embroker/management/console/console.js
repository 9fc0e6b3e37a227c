// embroker's console: polls the broker that serves this page, one request a second
// (GET api/embroker/console: what the page shows, and nothing more).
"use strict";
const $ = (id) => document.getElementById(id);
const esc = (s) => String(s).replace(/[&<>"]/g, (c) => ({"&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;"}[c]));
const q = encodeURIComponent;
// The page's address without the credentials it may carry (http://user:pass@host/): fetch
// refuses a URL with credentials, and a relative one takes them from the page's.
const base = location.origin + location.pathname;

// Basic credentials in UTF-8, as RabbitMQ reads them (btoa alone takes Latin-1 only).
const basic = (user, password) =>
  "Basic " + btoa(String.fromCharCode(...new TextEncoder().encode(user + ":" + password)));

// Who the console asks as: the login of this tab, else the credentials in the page's address,
// else guest (which RabbitMQ lets in from this machine unless it was removed or changed).
let login = JSON.parse(sessionStorage.getItem("embroker-login") || "null");
const address = new URL(document.URL);  // (Chromium keeps credentials there, not in location)
if (!login && address.username) {
  const user = decodeURIComponent(address.username);
  login = {user, auth: basic(user, decodeURIComponent(address.password)), how: "address"};
}
if (!login) login = {user: "guest", auth: basic("guest", "guest"), how: "default"};
let vhost = null, queue = null, seen = 0, busy = false;
const byName = new Set();  // queues the trace saw reached through the default exchange

async function api(path) {
  const used = login;
  const answer = await fetch(new URL("api/" + path, base), {headers: {Authorization: used.auth}});
  return answered(used, path, answer.status, await answer.text());
}

// The same request, answered before it returns: the first poll only. The page's load event
// waits for it, so that the page is drawn with the broker's data when it says it is loaded (a
// screenshot taken then showed empty panels while the first answer was on its way).
function apiNow(path) {
  const used = login;
  const request = new XMLHttpRequest();
  request.open("GET", new URL("api/" + path, base), false);
  request.setRequestHeader("Authorization", used.auth);
  request.send();
  return answered(used, path, request.status, request.responseText);
}

function answered(used, path, status, text) {
  if (status === 401) {
    let body = {};
    try { body = JSON.parse(text); } catch (_) { /* (no reason given) */ }
    if (used === login) refused(used, body);
    throw new Error("login");
  }
  if (status < 200 || status > 299) throw new Error(status + " " + path);
  return JSON.parse(text);
}

function refused(used, body) {
  // (guest refused without being asked for says nothing: the form is the first the user sees)
  const why = body.reason || "refused";
  $("login-error").textContent = used.how === "default" ? "" :
    used.how === "address" ? `The user in the page's address, '${used.user}', was refused: ${why}` :
    `Login refused for '${used.user}': ${why}`;
  login = null;
  sessionStorage.removeItem("embroker-login");
  showLogin(true);
}

function showLogin(shown) {
  $("login").hidden = !shown;
  $("who").hidden = shown;
  document.querySelector("main").hidden = shown;
  if (shown) $("user").focus();
}

$("login").addEventListener("submit", (event) => {
  event.preventDefault();
  const user = $("user").value;
  login = {user, auth: basic(user, $("password").value), how: "form"};
  sessionStorage.setItem("embroker-login", JSON.stringify(login));
  $("password").value = "";
  $("login-error").textContent = "";
  showLogin(false);
  refresh();
});
$("logout").addEventListener("click", () => {
  login = null;
  sessionStorage.removeItem("embroker-login");
  $("login-error").textContent = "";
  showLogin(true);
});
$("vhost").addEventListener("change", () => {
  vhost = $("vhost").value; queue = null; seen = 0; byName.clear(); $("trace").innerHTML = ""; refresh();
});

// -- the graph: exchanges on the left, queues on the right; bindings, dead letters ------------

const measure = document.createElement("canvas").getContext("2d");
function width(text, px) {
  measure.font = `${px}px system-ui, sans-serif`;
  return measure.measureText(text).width;
}
// A label cut to `room` pixels with an ellipsis (the whole of it is the node's title).
function fitted(text, px, room) {
  if (width(text, px) <= room) return text;
  let cut = text;
  while (cut.length > 1 && width(cut + "…", px) > room) cut = cut.slice(0, -1);
  return cut + "…";
}
const count = (n, one, many = one + "s") => `${n} ${n === 1 ? one : many}`;
const exchangeLabel = (x) => (x.name === "" ? "(AMQP default)" : x.name) + ` (${x.type})`;
const queueCounts = (x) => `${x.ready} ready, ${x.unacked} unacked, ${count(x.consumers, "consumer")}`;

// The layout keeps every label clear of the other edges. Each edge that reaches a queue (a
// binding, the default exchange's route) or leaves it (its dead letters) has a slot of its
// own on the queue's left, one under the other (a queue grows with its slots), ordered by the
// height of the exchange at the other end; every edge runs straight and level across a band
// left of the queues, at its slot's height, and curves only left of that band. In the band, a
// label sits above its own line and under the line of the slot above it: two bindings of one
// queue (one per region: eu.*, us.*) have two labels one above the other, and no edge runs
// through another's label. Edges ordered so, on curves of one shape, do not cross near the
// queues either.
const SLOT = 16;  // a slot's height: an 11px label and its line under it

function graph(view) {
  const exchanges = view.exchanges, queues = view.queues;
  const xRow = 30, pad = 14, minGap = 200, qGap = 6;
  // Both columns as wide as their labels, within the panel: a name too long for it is cut
  // with an ellipsis rather than by the panel's edge.
  const panel = Math.max(520, $("topology-panel").clientWidth - 30);
  let xw = Math.max(120, ...exchanges.map((x) => width(exchangeLabel(x), 12) + pad));
  let qw = Math.max(170, ...queues.map((x) => Math.max(width(x.name, 12), width(queueCounts(x), 11)) + pad));
  const room = panel - minGap - 20;
  if (xw + qw > room) {
    xw = Math.min(xw, Math.max(120, room * 0.4, room - qw));
    qw = Math.min(qw, room - xw);
  }
  const gap = Math.max(minGap, Math.min(300, panel - 20 - xw - qw));
  const qx = 10 + xw + gap, full = qx + qw + 10;
  const right = 10 + xw;

  // Exchanges: a row each, taller for the labels of exchange-to-exchange bindings into it.
  const into = new Map(exchanges.map((x) => [x.name, []]));
  for (const b of view.bindings) {
    if (b.destination_type !== "queue" && into.has(b.destination) && into.has(b.source)) into.get(b.destination).push(b);
  }
  const xs = new Map();  // middles
  let xBottom = 10;
  for (const x of exchanges) {
    xs.set(x.name, xBottom + 11);
    xBottom += xRow + Math.max(0, into.get(x.name).length - 1) * 14;
  }

  // Queues: each edge's slot, then a row each, as tall as its slots.
  const slots = new Map(queues.map((x) => [x.name, []]));
  for (const b of view.bindings) {
    if (b.destination_type === "queue" && slots.has(b.destination) && xs.has(b.source)) {
      slots.get(b.destination).push({cls: "binding", end: xs.get(b.source), label: b.routing_key, out: false});
    }
  }
  // The default exchange routes to the queue its routing key names: drawn where the key is
  // known (a dead-letter routing key) or the trace saw it.
  const viaDefault = new Set(byName);
  for (const x of queues) {
    if (x.dead_letter_exchange === undefined) continue;
    const key = x.dead_letter_routing_key;
    if (xs.has(x.dead_letter_exchange)) {
      slots.get(x.name).push({cls: "dead-letter", end: xs.get(x.dead_letter_exchange),
                              label: "dead letters" + (key ? " → " + key : ""), out: true});
    }
    if (x.dead_letter_exchange === "" && key) viaDefault.add(key);
  }
  if (xs.has("")) {
    for (const name of viaDefault) {
      if (slots.has(name)) slots.get(name).push({cls: "default-route", end: xs.get(""), label: "", out: false});
    }
  }
  const rank = {"binding": 0, "default-route": 1, "dead-letter": 2};
  const qs = new Map();  // queue name -> its row's top and height
  let qBottom = 10;
  for (const x of queues) {
    const mine = slots.get(x.name).sort((a, b) => a.end - b.end || rank[a.cls] - rank[b.cls] ||
                                                   (a.label < b.label ? -1 : a.label > b.label ? 1 : 0));
    const height = Math.max(34, mine.length * SLOT + 4);
    const first = qBottom + (height - mine.length * SLOT) / 2;
    mine.forEach((slot, i) => { slot.y = first + i * SLOT + SLOT - 1.5; });
    qs.set(x.name, {top: qBottom, height});
    qBottom += height + qGap;
  }
  const height = Math.max(xBottom, qBottom, 40) + 10;

  // The band of labels: as wide as the longest label needs, leaving the curves 80 pixels.
  const labels = [...slots.values()].flat().map((slot) => slot.label).filter((label) => label);
  const band = Math.min(Math.max(40, ...labels.map((label) => width(label, 11) + 16)), gap - 80);
  const bx = qx - band, bend = (bx - right) / 2;
  let edges = "";
  const edge = (cls, d) => { edges += `<path class="${cls}" d="${d}" marker-end="url(#arrow-${cls})"/>`; };
  const label = (text, x, y, anchor) => {
    if (!text) return;
    const shown = fitted(text, 11, band - 14);  // (cut: whole in its title)
    edges += `<text class="edge-label" text-anchor="${anchor}" x="${x}" y="${y}">` +
      (shown === text ? "" : `<title>${esc(text)}</title>`) + `${esc(shown)}</text>`;
  };
  for (const mine of slots.values()) {
    for (const slot of mine) {
      const y = slot.y;
      if (slot.out) {  // the queue's dead letters, to their exchange
        edge(slot.cls, `M${qx},${y} L${bx},${y} C${bx - bend},${y} ${right + bend},${slot.end} ${right + 2},${slot.end}`);
      } else {
        edge(slot.cls, `M${right},${slot.end} C${right + bend},${slot.end} ${bx - bend},${y} ${bx},${y} L${qx - 2},${y}`);
      }
      label(slot.label, qx - 6, y - 4.5, "end");
    }
  }
  // exchange to exchange: a loop on the right of the exchanges' column, its label under the
  // destination (one under the other when several reach it)
  for (const [name, bindings] of into) {
    bindings.forEach((b, i) => {
      const y1 = xs.get(b.source), y2 = xs.get(name);
      edge("binding", `M${right},${y1} C${right + 70},${y1} ${right + 70},${y2} ${right + 2},${y2}`);
      label(b.routing_key, right + 8, y2 + 14 + i * 14, "start");
    });
  }
  let nodes = "";
  for (const x of exchanges) {
    const label = exchangeLabel(x), y = xs.get(x.name) - 11;
    nodes += `<g class="exchange" data-exchange="${esc(x.name)}"><title>${esc(label)}</title>` +
      `<rect x="10" y="${y}" width="${xw}" height="22" rx="4"/>` +
      `<text x="17" y="${y + 15}">${esc(fitted(label, 12, xw - pad))}</text></g>`;
  }
  for (const x of queues) {
    const {top: y, height: h} = qs.get(x.name);
    nodes += `<g class="queue${x.name === queue ? " chosen" : ""}" data-queue="${esc(x.name)}"><title>${esc(x.name)}</title>` +
      `<rect x="${qx}" y="${y}" width="${qw}" height="${h}" rx="4"/>` +
      `<text x="${qx + 7}" y="${y + 14}">${esc(fitted(x.name, 12, qw - pad))}</text>` +
      `<text class="counts" x="${qx + 7}" y="${y + 28}">${esc(fitted(queueCounts(x), 11, qw - pad))}</text></g>`;
  }
  const defs = ["binding", "dead-letter", "default-route"].map((cls) =>
    `<marker id="arrow-${cls}" class="${cls}" viewBox="0 0 8 8" refX="8" refY="4" markerWidth="7" markerHeight="7" orient="auto"><path d="M0,0 L8,4 L0,8 z"/></marker>`).join("");
  const svg = $("graph");
  svg.setAttribute("viewBox", `0 0 ${full} ${height}`);
  svg.setAttribute("width", full);
  svg.setAttribute("height", height);
  svg.innerHTML = `<defs>${defs}</defs>${edges}${nodes}`;
  for (const node of svg.querySelectorAll(".queue")) {
    node.addEventListener("click", () => { queue = node.dataset.queue; refresh(); });
  }
  const more = [];
  if (view.summary.exchanges > exchanges.length) more.push(`${count(view.summary.exchanges - exchanges.length, "more exchange", "more exchanges")}`);
  if (view.summary.queues > queues.length) more.push(`${count(view.summary.queues - queues.length, "more queue", "more queues")}`);
  $("more").textContent = more.length ? `(and ${more.join(", ")}: the first by name are shown)` : "";
}

// -- the trace: newest first, each numbered by its decision's id ---------------------------

function trace(decisions) {
  $("trace").querySelector(".empty")?.remove();
  for (const d of decisions) {
    if (d.id <= seen) continue;
    seen = d.id;
    if (d.vhost !== vhost) continue;
    if (d.exchange === "") for (const name of d.queues) byName.add(name);
    const li = document.createElement("li");
    li.className = "decision";
    li.value = d.id;
    li.dataset.id = d.id;
    const summary = `<summary><span class="${esc(d.outcome)}">${esc(d.outcome)}</span> ` +
      `<b>${esc(d.exchange || "(AMQP default)")}</b> ${esc(d.routing_keys.join(", "))} → ${esc(d.queues.join(", ") || "no queue")}</summary>`;
    // (a message this user could not get: where it went, and that the rest is hidden)
    li.innerHTML = d.hidden ? `<details>${summary}<p class="hidden-note">${esc(d.explain)}</p></details>` :
      `<details>${summary}` +
      `<h3>Why</h3><pre class="explain">${esc(d.explain)}</pre>` +
      `<h3>What happened to the message</h3><pre class="history">${esc(d.history.join("\n") || "(nothing yet)")}</pre>` +
      `<h3>Body</h3><pre class="payload">${esc(d.payload)}</pre></details>`;
    $("trace").prepend(li);
  }
  while ($("trace").children.length > 200) $("trace").lastElementChild.remove();
  if (!$("trace").children.length) {
    $("trace").innerHTML = `<li class="empty">No routing decision in vhost ${esc(vhost)} yet: a message published there shows here.</li>`;
  }
}

// -- the chosen queue's messages, as RabbitMQ's management UI shows a message it got ----------

// A property or header value: tables as tables, arrays as lists, the rest as text.
function value(v) {
  if (Array.isArray(v)) {
    if (v.every((x) => x === null || typeof x !== "object")) return esc(v.join(", "));
    return `<ul class="array">${v.map((x) => `<li>${value(x)}</li>`).join("")}</ul>`;
  }
  if (v !== null && typeof v === "object") return table(v);
  return esc(v);
}
function table(o) {
  const rows = Object.entries(o).map(([k, v]) => `<tr><th>${esc(k)}</th><td>${value(v)}</td></tr>`).join("");
  return `<table class="fields">${rows}</table>`;
}

function message(m) {
  const fields = {"Exchange": m.exchange === "" ? "(AMQP default)" : m.exchange, "Routing key": m.routing_key, "Redelivered": m.redelivered ? "●" : "○"};
  const held = m.consumer === undefined ? "" :
    `<p class="held">delivery tag ${m.delivery_tag} on channel ${m.channel} of ${esc(m.connection)}, ` +
    (m.consumer === null ? "taken by basic.get" : `consumer ${esc(m.consumer)}`) + "</p>";
  const payload = `${m.payload_bytes} bytes` + (m.payload_bytes > m.payload.length ? " (the start shown)" : "");
  return `<div class="message">${held}<table class="fields">` +
    Object.entries(fields).map(([k, v]) => `<tr><th>${k}</th><td>${esc(v)}</td></tr>`).join("") +
    `<tr><th>Properties</th><td>${Object.keys(m.properties).length ? table(m.properties) : ""}</td></tr>` +
    `<tr><th>Payload</th><td><small>${payload}</small><pre class="payload">${esc(m.payload)}</pre></td></tr>` +
    (m.history.length ? `<tr><th>History</th><td><pre class="history">${esc(m.history.join("\n"))}</pre></td></tr>` : "") +
    `</table></div>`;
}

function messages(view) {
  if (!queue) {
    $("messages").innerHTML = `<p class="empty">Click a queue in the topology to see its messages.</p>`;
    return;
  }
  $("queue-name").textContent = queue;
  if (view.messages_refused) { $("messages").innerHTML = `<p>${esc(view.messages_refused)}</p>`; return; }
  const found = view.messages || {ready: [], unacked: []};
  const counts = view.queues.find((x) => x.name === queue) || {ready: 0, unacked: 0};
  const heading = (what, count, shown) =>
    `<h3>${what}: ${count}${count > shown.length ? ` (the first ${shown.length} shown)` : ""}</h3>`;
  $("messages").innerHTML =
    heading("Ready", counts.ready, found.ready) + found.ready.map(message).join("") +
    heading("Unacknowledged", counts.unacked, found.unacked) + found.unacked.map(message).join("");
}

// What one poll asks for: the vhost and queue shown, the decisions after the last one seen.
function poll() {
  let path = "embroker/console?since=" + seen;
  if (vhost !== null) path += "&vhost=" + q(vhost);
  if (queue) path += "&queue=" + q(queue);
  return path;
}

function show(view) {
  showLogin(false);
  $("who-name").textContent = login.user;
  if (vhost === null || view.vhost !== vhost) { vhost = view.vhost; }
  $("vhost").innerHTML = view.vhosts.map((n) => `<option ${n === vhost ? "selected" : ""}>${esc(n)}</option>`).join("");
  const t = view.summary;
  $("summary").textContent = `${count(t.connections, "connection")}, ${count(t.queues, "queue")}, ${count(t.messages, "message")}`;
  trace(view.trace.decisions);
  seen = Math.max(seen, view.trace.total);
  graph(view);
  messages(view);
  $("connections").innerHTML = "<tr><th>connection</th><th>client</th><th>user</th><th>vhost</th><th>channels</th></tr>" +
    (view.connections.length ? view.connections.map((c) => `<tr><td>${esc(c.name)}</td><td>${esc(c.client)}</td>` +
      `<td>${esc(c.user)}</td><td>${esc(c.vhost)}</td><td>${c.channels.join(", ")}</td></tr>`).join("") :
      `<tr><td class="empty" colspan="5">No client is connected.</td></tr>`);
  $("status").textContent = "updated " + new Date().toLocaleTimeString();
  document.querySelector("main").classList.add("drawn");
}

function failed(error) {
  if (error.message !== "login") $("status").textContent = String(error);
}

async function refresh() {
  if (busy || !login) return;  // a slow answer: the next tick asks again
  busy = true;
  try {
    show(await api(poll()));
  } catch (error) {
    failed(error);
  } finally {
    busy = false;
  }
}

if (login) {
  try { show(apiNow(poll())); } catch (error) { failed(error); }
}
setInterval(refresh, 1000);
