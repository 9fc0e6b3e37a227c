// embroker's console: polls the broker that serves this page, one request a second
// (GET api/embroker/console: what the page shows, and nothing more).
"use strict";
let auth = sessionStorage.getItem("embroker-auth") || "Basic " + btoa("guest:guest");
let vhost = null, queue = null, seen = 0, busy = false;
const $ = (id) => document.getElementById(id);
const esc = (s) => String(s).replace(/[&<>"]/g, (c) => ({"&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;"}[c]));
const q = encodeURIComponent;

async function api(path) {
  const used = auth;
  const answer = await fetch("api/" + path, {headers: {Authorization: used}});
  if (answer.status === 401) {
    // (an answer to the credentials of before the login form was sent asks for nothing)
    if (used === auth) $("login").hidden = false;
    throw new Error("login");
  }
  if (!answer.ok) throw new Error(answer.status + " " + path);
  $("login").hidden = true;
  return answer.json();
}

$("login").addEventListener("submit", (event) => {
  event.preventDefault();
  auth = "Basic " + btoa($("user").value + ":" + $("password").value);
  sessionStorage.setItem("embroker-auth", auth);
  $("login").hidden = true;
  refresh();
});
$("vhost").addEventListener("change", () => {
  vhost = $("vhost").value; queue = null; seen = 0; $("trace").innerHTML = ""; refresh();
});

function graph(view) {
  const exchanges = view.exchanges, queues = view.queues;
  const rowH = 30, width = 680, xw = 190, qw = 290;
  const height = Math.max(exchanges.length, queues.length, 1) * rowH + 20;
  const xs = new Map(exchanges.map((x, i) => [x.name, 10 + i * rowH]));
  const qs = new Map(queues.map((x, i) => [x.name, 10 + i * rowH]));
  let svg = "";
  for (const b of view.bindings) {
    const y1 = xs.get(b.source) + 11;
    const target = b.destination_type === "queue" ? qs.get(b.destination) : xs.get(b.destination);
    if (target === undefined) continue;
    const x2 = b.destination_type === "queue" ? width - qw : 10, y2 = target + 11;
    svg += `<path class="edge" d="M${10 + xw},${y1} C${width / 2},${y1} ${width / 2},${y2} ${x2},${y2}"/>`;
    const lx = b.destination_type === "queue" ? x2 - 6 : 10 + xw + 6;  // by the arrow's end
    svg += `<text class="edge-label" text-anchor="${b.destination_type === "queue" ? "end" : "start"}" x="${lx}" y="${y2 - 3}">${esc(b.routing_key)}</text>`;
  }
  for (const x of exchanges) {
    svg += `<g class="exchange"><rect x="10" y="${xs.get(x.name)}" width="${xw}" height="22" rx="4"/>` +
      `<text x="16" y="${xs.get(x.name) + 15}">${esc(x.name)} (${esc(x.type)})</text></g>`;
  }
  for (const x of queues) {
    svg += `<g class="queue${x.name === queue ? " chosen" : ""}" data-queue="${esc(x.name)}"><rect x="${width - qw}" y="${qs.get(x.name)}" width="${qw}" height="22" rx="4"/>` +
      `<text x="${width - qw + 6}" y="${qs.get(x.name) + 15}">${esc(x.name)}: ${x.ready} ready, ${x.unacked} unacked, ${x.consumers} consumers</text></g>`;
  }
  $("graph").setAttribute("viewBox", `0 0 ${width} ${height}`);
  $("graph").style.height = height + "px";
  $("graph").innerHTML = svg;
  for (const node of document.querySelectorAll(".queue")) {
    node.addEventListener("click", () => { queue = node.dataset.queue; refresh(); });
  }
  const more = [];
  if (view.summary.exchanges > exchanges.length) more.push(`${view.summary.exchanges - exchanges.length} more exchanges`);
  if (view.summary.queues > queues.length) more.push(`${view.summary.queues - queues.length} more queues`);
  $("more").textContent = more.length ? `(and ${more.join(", ")}: the first by name are shown)` : "";
}

function trace(decisions) {
  for (const d of decisions) {
    if (d.id <= seen) continue;
    seen = d.id;
    if (d.vhost !== vhost) continue;
    const li = document.createElement("li");
    li.className = "decision";
    const summary = `<summary><span class="${esc(d.outcome)}">${esc(d.outcome)}</span> ` +
      `<b>${esc(d.exchange || "(default)")}</b> ${esc(d.routing_keys.join(", "))} → ${esc(d.queues.join(", ") || "no queue")}</summary>`;
    // (a message this user could not get: where it went, and that the rest is hidden)
    li.innerHTML = d.hidden ? `<details>${summary}<p class="hidden-note">${esc(d.explain)}</p></details>` :
      `<details>${summary}` +
      `<h3>Why</h3><pre class="explain">${esc(d.explain)}</pre>` +
      `<h3>What happened to the message</h3><pre class="history">${esc(d.history.join("\n") || "(nothing yet)")}</pre>` +
      `<h3>Body</h3><pre class="payload">${esc(d.payload)}</pre></details>`;
    $("trace").prepend(li);
  }
  while ($("trace").children.length > 200) $("trace").lastElementChild.remove();
}

function messages(view) {
  if (!queue) return;
  $("queue-name").textContent = queue;
  if (view.messages_refused) { $("messages").innerHTML = `<p>${esc(view.messages_refused)}</p>`; return; }
  const found = view.messages || [];
  $("messages").innerHTML = found.length ? found.map((m) =>
    `<pre>${esc(m.routing_key)} ${m.redelivered ? "(redelivered) " : ""}${esc(m.payload)}\n${esc(m.history.join("\n"))}</pre>`).join("") :
    "<p>no ready message</p>";
}

async function refresh() {
  if (busy) return;  // a slow answer: the next tick asks again
  busy = true;
  try {
    let path = "embroker/console?since=" + seen;
    if (vhost !== null) path += "&vhost=" + q(vhost);
    if (queue) path += "&queue=" + q(queue);
    const view = await api(path);
    if (vhost === null || view.vhost !== vhost) { vhost = view.vhost; }
    $("vhost").innerHTML = view.vhosts.map((n) => `<option ${n === vhost ? "selected" : ""}>${esc(n)}</option>`).join("");
    const t = view.summary;
    $("summary").textContent = `${t.connections} connections, ${t.queues} queues, ${t.messages} messages`;
    graph(view);
    trace(view.trace.decisions);
    seen = Math.max(seen, view.trace.total);
    messages(view);
    $("connections").innerHTML = "<tr><th>connection</th><th>client</th><th>user</th><th>vhost</th><th>channels</th></tr>" +
      view.connections.map((c) => `<tr><td>${esc(c.name)}</td><td>${esc(c.client)}</td>` +
        `<td>${esc(c.user)}</td><td>${esc(c.vhost)}</td><td>${c.channels.join(", ")}</td></tr>`).join("");
    $("status").textContent = "updated " + new Date().toLocaleTimeString();
  } catch (error) {
    if (error.message !== "login") $("status").textContent = String(error);
  } finally {
    busy = false;
  }
}
refresh();
setInterval(refresh, 1000);
