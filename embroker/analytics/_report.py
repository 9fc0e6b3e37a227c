"""``report.html``: the page a person reads first. One self-contained file (inline CSS and SVG
charts drawn here; no script, no external resource)."""

from __future__ import annotations

import datetime
import html
from collections.abc import Sequence
from typing import Any

__all__ = ["render_report"]

_COLORS = ("#3b6ea8", "#e0803a", "#4b9b5d", "#b0485a", "#7a5fa8", "#8c7a4b", "#3b9ea8", "#999999")

_CSS = """
body{font:14px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;color:#1f2328;margin:0;
background:#f6f8fa}
main{max-width:1100px;margin:0 auto;padding:24px 28px 48px;background:#fff;min-height:100vh}
h1{font-size:22px;margin:0 0 4px}h2{font-size:17px;margin:32px 0 10px;padding-bottom:4px;
border-bottom:1px solid #d0d7de}.sub{color:#59636e;margin:0 0 18px}
.cards{display:flex;flex-wrap:wrap;gap:10px}.card{border:1px solid #d0d7de;border-radius:8px;
padding:10px 14px;min-width:120px}.card b{display:block;font-size:22px}.card span{color:#59636e;
font-size:12px}.good b{color:#1a7f37}.bad b{color:#cf222e}.warn b{color:#9a6700}
table{border-collapse:collapse;width:100%;margin:6px 0 10px;font-size:13px}
th,td{text-align:left;padding:4px 8px;border-bottom:1px solid #eaeef2;vertical-align:top}
th{background:#f6f8fa;font-weight:600}td.n,th.n{text-align:right;font-variant-numeric:tabular-nums}
code{font:12px ui-monospace,SFMono-Regular,Menlo,monospace;background:#f6f8fa;padding:1px 4px;
border-radius:4px;word-break:break-all}.muted{color:#59636e}.ok{color:#1a7f37}.no{color:#cf222e}
.legend span{display:inline-block;margin-right:14px;font-size:12px}.legend i{display:inline-block;
width:10px;height:10px;margin-right:4px;border-radius:2px}ul.notes{color:#59636e;font-size:13px}
"""


def _e(value: Any) -> str:
    return html.escape(str(value), quote=True)


def _n(value: Any) -> str:
    return f"{int(value or 0):,}"


def _bytes(value: Any) -> str:
    size = float(value or 0)
    for unit in ("B", "KB", "MB", "GB", "TB"):
        if size < 1024 or unit == "TB":
            return f"{size:,.0f} {unit}" if unit == "B" else f"{size:,.1f} {unit}"
        size /= 1024
    return f"{size:,.1f} TB"


def _pct(part: Any, whole: Any) -> str:
    return f"{100.0 * (part or 0) / whole:.1f} %" if whole else "—"


def _queue_label(row: dict[str, Any], vhosts: int) -> str:
    return row["queue"] if vhosts <= 1 else f"{row['vhost']} / {row['queue']}"


def hbar_chart(labels: Sequence[str], series: Sequence[tuple[str, Sequence[float]]],
               *, width: int = 760) -> str:
    """Horizontal bars, one group per label and one bar per series, as inline SVG."""
    if not labels:
        return '<p class="muted">No data.</p>'
    label_w, value_w, bar_h, gap = 220, 80, 14, 8
    group_h = bar_h * len(series) + gap
    plot_w = width - label_w - value_w
    top = max((v for _n_, vals in series for v in vals), default=0) or 1
    height = group_h * len(labels) + 6
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
           f'viewBox="0 0 {width} {height}" role="img" font-size="12" '
           'font-family="system-ui,sans-serif">']
    for i, label in enumerate(labels):
        y0 = i * group_h + 3
        short = label if len(label) <= 32 else label[:30] + "…"
        out.append(f'<text x="{label_w - 8}" y="{y0 + group_h / 2 + 2:.1f}" text-anchor="end" '
                   f'fill="#1f2328"><title>{_e(label)}</title>{_e(short)}</text>')
        for j, (name, values) in enumerate(series):
            value = values[i]
            w = max(plot_w * value / top, 1 if value else 0)
            y = y0 + j * bar_h
            out.append(f'<rect x="{label_w}" y="{y}" width="{w:.1f}" height="{bar_h - 2}" '
                       f'fill="{_COLORS[j % len(_COLORS)]}"><title>{_e(name)}: {_n(value)}'
                       '</title></rect>')
            out.append(f'<text x="{label_w + w + 4:.1f}" y="{y + bar_h - 4}" fill="#59636e">'
                       f'{_n(value)}</text>')
    out.append("</svg>")
    legend = "".join(f'<span><i style="background:{_COLORS[j % len(_COLORS)]}"></i>{_e(name)}</span>'
                     for j, (name, _v) in enumerate(series)) if len(series) > 1 else ""
    return (f'<div class="legend">{legend}</div>' if legend else "") + "".join(out)


def line_chart(times: Sequence[str], series: Sequence[tuple[str, Sequence[float]]],
               *, width: int = 760, height: int = 220) -> str:
    """Lines over time windows, as inline SVG."""
    if len(times) < 2:
        return '<p class="muted">All the traffic falls in one time window.</p>'
    left, right, top_pad, bottom = 60, 12, 10, 28
    plot_w, plot_h = width - left - right, height - top_pad - bottom
    top = _nice(max((v for _n_, vals in series for v in vals), default=0))
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
           f'viewBox="0 0 {width} {height}" role="img" font-size="11" '
           'font-family="system-ui,sans-serif">']
    for k in range(5):
        y = top_pad + plot_h * k / 4
        out.append(f'<line x1="{left}" x2="{width - right}" y1="{y:.1f}" y2="{y:.1f}" '
                   'stroke="#eaeef2"/>')
        out.append(f'<text x="{left - 6}" y="{y + 4:.1f}" text-anchor="end" fill="#59636e">'
                   f'{_n(top * (4 - k) / 4)}</text>')
    step = plot_w / (len(times) - 1)
    for k in sorted({0, len(times) // 2, len(times) - 1}):
        anchor = "start" if k == 0 else "end" if k == len(times) - 1 else "middle"
        out.append(f'<text x="{left + step * k:.1f}" y="{height - 8}" text-anchor="{anchor}" '
                   f'fill="#59636e">{_e(times[k])}</text>')
    for j, (name, values) in enumerate(series):
        points = " ".join(f"{left + step * i:.1f},{top_pad + plot_h * (1 - v / top):.1f}"
                          for i, v in enumerate(values))
        out.append(f'<polyline fill="none" stroke="{_COLORS[j % len(_COLORS)]}" stroke-width="2" '
                   f'points="{points}"><title>{_e(name)}</title></polyline>')
    out.append("</svg>")
    legend = "".join(f'<span><i style="background:{_COLORS[j % len(_COLORS)]}"></i>{_e(name)}</span>'
                     for j, (name, _v) in enumerate(series))
    return f'<div class="legend">{legend}</div>' + "".join(out)


def _nice(value: float) -> float:
    """The smallest of 4, 8, 12, 20, 40, 80, 120, 200... at or above ``value`` (whole ticks at
    quarters)."""
    scale = 1
    while True:
        for m in (4, 8, 12, 20):
            if m * scale >= value:
                return float(m * scale)
        scale *= 10


def _table(headers: Sequence[str], rows: Sequence[Sequence[str]], numeric: Sequence[int] = ()) -> str:
    head = "".join(f'<th class="n">{h}</th>' if i in numeric else f"<th>{h}</th>"
                   for i, h in enumerate(headers))
    body = "".join("<tr>" + "".join(f'<td class="n">{c}</td>' if i in numeric else f"<td>{c}</td>"
                                    for i, c in enumerate(row)) + "</tr>" for row in rows)
    return f"<table><tr>{head}</tr>{body}</table>"


def _keys(keys: Sequence[str]) -> str:
    return ", ".join(f"<code>{_e(k)}</code>" for k in keys) or "<code></code>"


def _queues(queues: Sequence[str] | None) -> str:
    if queues is None:
        return '<span class="muted">—</span>'
    return ", ".join(f"<code>{_e(q)}</code>" for q in queues) or '<span class="muted">none</span>'


def _exchange(name: str) -> str:
    return f"<code>{_e(name)}</code>" if name else '<code>""</code> <span class="muted">(default)</span>'


def render_report(summary: dict[str, Any], *, traffic: str, generated: datetime.datetime | None = None,
                  ) -> str:
    """The report page for a summary from ``analyze_replay``."""
    s = summary
    when = (generated or datetime.datetime.now(datetime.timezone.utc)).strftime("%Y-%m-%d %H:%M UTC")
    against = s.get("against")
    parts = [f"<!doctype html><html lang=en><head><meta charset=utf-8><title>Routing analysis — "
             f"{_e(traffic)}</title><meta name=viewport content='width=device-width,initial-scale=1'>"
             f"<style>{_CSS}</style></head><body><main>",
             "<h1>Routing analysis</h1>",
             f'<p class="sub">Traffic <code>{_e(traffic)}</code> replayed through '
             f"<code>{_e(s['topology'])}</code>"
             + (f" and <code>{_e(against)}</code>" if against else "")
             + f" with embroker's routing model · {when}</p>"]

    recorded = s["recorded"]
    cards = [("Messages", _n(s["messages"]), _bytes(s["bytes"]), ""),
             ("Distinct routing inputs", _n(s["inputs"]), "each routed once", "")]
    if recorded:
        good = s["disagreeing"] == 0
        cards.append(("Agree with production", _pct(s["agreeing"], recorded),
                      f"{_n(s['agreeing'])} of {_n(recorded)} recorded", "good" if good else "bad"))
    cards.append(("Reach no queue", _n(s["unroutable"]),
                  _pct(s["unroutable"], s["messages"])
                  + (f", {_n(s['returned'])} returned (mandatory)" if s.get("returned") else ""),
                  "warn" if s["unroutable"] else ""))
    cards.append(("Via an alternate exchange", _n(s["via_alternate"]),
                  _pct(s["via_alternate"], s["messages"]), ""))
    if s["refused"]:
        cards.append(("Refused by the topology", _n(s["refused"]), "unknown exchange or vhost", "bad"))
    if against:
        cards.append(("Change destination", _n(s["changed"]), f"with {_e(against)}",
                      "warn" if s["changed"] else "good"))
        cards.append(("Newly unroutable", _n(s["new_unroutable"]), "",
                      "bad" if s["new_unroutable"] else "good"))
    parts.append('<div class="cards">' + "".join(
        f'<div class="card {cls}"><span>{_e(title)}</span><b>{value}</b><span>{sub}</span></div>'
        for title, value, sub, cls in cards) + "</div>")

    vhosts = len({q["vhost"] for q in s["queues"]})
    parts.append("<h2>Agreement with production</h2>")
    if not recorded:
        parts.append('<p class="muted">The traffic did not record where RabbitMQ routed it '
                     "(no <code>routed_queues</code>), so there is nothing to compare.</p>")
    elif not s["disagreements"]:
        parts.append(f'<p class="ok">The model routes all {_n(recorded)} recorded messages to '
                     "exactly the queues RabbitMQ recorded.</p>")
    else:
        parts.append(f'<p><b class="no">{_n(s["disagreeing"])}</b> of {_n(recorded)} recorded messages '
                     "went elsewhere in production than the definitions say. Grouped by cause:</p>")
        rows = []
        for d in s["disagreements"][:30]:
            example = (f"line {d['line']}: {_exchange(d['exchange'])} keys {_keys(d['routing_keys'])}"
                       + (f" headers <code>{_e(d['headers'])}</code>" if d["headers"] else "")
                       + f"<br>recorded {_queues(d['recorded_queues'])}; model {_queues(d['model_queues'])}"
                       + "".join(f'<br><span class="muted">{_e(x)}</span>' for x in d["details"][:3]))
            rows.append((_e(d["cause"]), _n(d["messages"]), example))
        parts.append(_table(("Cause", "Messages", "Example"), rows, numeric=(1,)))
    if s["phantom"]:
        parts.append(f'<p class="muted">{_n(s["phantom"])} message(s) went to the default exchange with a '
                     "key naming no queue of the definitions; RabbitMQ's trace lists such a queue as "
                     "routed anyway, so it is not counted as a disagreement.</p>")

    if against:
        parts.append(f"<h2>What changes with <code>{_e(against)}</code></h2>")
        changes = s["queue_changes"]
        if not changes:
            parts.append('<p class="ok">Every message reaches the same queues under both topologies.</p>')
        else:
            top = changes[:15]
            parts.append(hbar_chart([_queue_label(r, vhosts) for r in top],
                                    [("messages gained", [r["gained"] for r in top]),
                                     ("messages lost", [r["lost"] for r in top])]))
            changed_rows = [(_exchange(r["exchange"]), _keys(r["routing_keys"]), _queues(r["queues_before"]),
                     _queues(r["queues_after"]) + (f' <span class="no">{_e(r["error_after"])}</span>'
                                                   if r.get("error_after") else ""),
                     _n(r["messages"]), str(r["example_line"]))
                    for r in s["changed_routes"]]
            parts.append(f"<p>{_n(s['changed'])} messages change destination "
                         f"({_n(s['changed_inputs'])} distinct routing inputs; the most frequent):</p>")
            parts.append(_table(("Exchange", "Routing keys", "Before", "After", "Messages", "Line"),
                                changed_rows, numeric=(4, 5)))

    parts.append("<h2>Traffic per queue</h2>")
    busy = [q for q in s["queues"] if q["messages"] or q.get("messages_after")][:20]
    series: list[tuple[str, Sequence[float]]] = [("before" if against else "messages",
                                                  [q["messages"] for q in busy])]
    if against:
        series.append(("after", [q.get("messages_after", 0) for q in busy]))
    parts.append(hbar_chart([_queue_label(q, vhosts) for q in busy], series))

    windows = s.get("windows") or []
    if windows:
        first = datetime.datetime.fromisoformat(min(w["window_start"] for w in windows))
        last = datetime.datetime.fromisoformat(max(w["window_start"] for w in windows))
        step = datetime.timedelta(seconds=s["window_seconds"])
        times = [(first + step * i).isoformat() for i in range(int((last - first) / step) + 1)]
        totals: dict[str, int] = {}
        for w in windows:
            totals[w["queue"]] = totals.get(w["queue"], 0) + w["messages"]
        top_queues = sorted(totals, key=lambda q: -totals[q])[:6]
        index = {t: i for i, t in enumerate(times)}
        lines = []
        for q in top_queues:
            values = [0.0] * len(times)
            for w in windows:
                if w["queue"] == q:
                    values[index[w["window_start"]]] += w["messages"]
            lines.append((q, values))
        parts.append(f"<h2>Over time</h2><p class='muted'>Messages per queue per "
                     f"{_e(_duration(s['window_seconds']))} window (busiest queues).</p>")
        parts.append(line_chart([t[:16].replace("T", " ") for t in times], lines))

    parts.append("<h2>Never matched</h2>")
    unused = s["unused_bindings"]
    parts.append(f"<p>{_n(len(unused))} of {_n(s['bindings'])} bindings matched no message"
                 + (":" if unused else ".") + "</p>")
    if unused:
        parts.append(_table(("Source", "Destination", "Key", "Arguments"), [
            (_exchange(b["source"]), f"{_e(b['destination_type'])} <code>{_e(b['destination'])}</code>",
             f"<code>{_e(b['routing_key'])}</code>",
             f"<code>{_e(b['arguments'])}</code>" if b["arguments"] != "{}" else "")
            for b in unused[:100]]))
    if s["unused_queues"]:
        parts.append("<p>Queues that received nothing: " + _queues(
            [_queue_label(q, vhosts) for q in s["unused_queues"][:100]]) + "</p>")
    if s["unused_exchanges"]:
        parts.append("<p>Exchanges nothing passed through: " + ", ".join(
            f"<code>{_e(x['exchange'])}</code>" for x in s["unused_exchanges"][:100]) + "</p>")

    parts.append("<h2>Hottest routing keys</h2>")
    parts.append(_table(("Exchange", "Routing key", "Messages", "Bytes"), [
        (_exchange(k["exchange"]), f"<code>{_e(k['routing_key'])}</code>" if k["routing_key"]
         else '<span class="muted">(empty)</span>', _n(k["messages"]),
         _bytes(k["bytes"])) for k in s["hot_keys"]], numeric=(2, 3)))
    notes = list(s.get("notes", [])) + [f"{s['against']}: {n}" for n in s.get("against_notes", [])]
    if notes:
        parts.append("<h2>How the definitions were read</h2><ul class=notes>"
                     + "".join(f"<li>{_e(n)}</li>" for n in notes) + "</ul>")
    parts.append('<p class="muted">Files next to this page: routes.jsonl (per message), '
                 "inputs, queues, bindings, exchanges, routing_keys, windows, disagreements"
                 + (", changes, changed_routes" if against else "") + " (.parquet), summary.json.</p>")
    parts.append("</main></body></html>\n")
    return "".join(parts)


def _duration(seconds: int | None) -> str:
    if not seconds:
        return "—"
    for unit, size in (("day", 86400), ("hour", 3600), ("minute", 60)):
        if seconds % size == 0:
            count = seconds // size
            return f"{count} {unit}{'s' if count > 1 else ''}" if count > 1 else unit
    return f"{seconds} seconds" if seconds > 1 else "second"
