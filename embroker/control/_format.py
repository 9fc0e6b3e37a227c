"""How RabbitMQ 3.10.8's tools print values and rows (its ``table`` and ``json`` formatters).

The node sends each value as JSON, with a few tagged forms for the Erlang terms the tools print
in their own ways (:mod:`._ops` makes them):

- ``{"$table": [[key, type, value], ...]}``: an AMQP table as RabbitMQ keeps it (queue and
  consumer arguments, client properties); an array is ``{"$array": [[type, value], ...]}``;
- ``{"$pid": "<rabbit@host.1.2.0>"}``: an Erlang pid;
- ``{"$ip": "127.0.0.1"}``: an address (a tuple in Erlang);
- ``{"$atoms": [...]}``: a list of atoms (user tags, node names);
- ``{"$proplist": [[atom, atom], ...]}``: a list of pairs of atoms (``cluster_state``);
- ``{"$tuple": [...]}``: a tuple of integers (a connection's protocol, ``{0,9,1}``);
- ``{"$raw": "..."}``: a term a plugin's listing prints in its own way (``{'MQTT', N/A}``),
  printed as it is (a string in JSON).

The table formatter prints each as ``RabbitMQ.CLI.Formatters.FormatterHelpers`` does: an AMQP
table as Erlang's ``~tp`` of ``[{Key, Value}]`` (``[{"x-max-length",10}]``), atoms bare and
joined by ``", "`` in brackets, pairs as ``[{k, v}, ...]`` (each key as ``~p`` prints an
atom: quoted unless plain), ``true``/``false``; the JSON formatter
writes one object per row (``[`` and ``]`` on lines of their own, rows after the first starting
with ``,``) and turns tuples into lists, as Elixir's JSON encoder does.

Text a client chose is written as the management API writes it (:func:`_written`): a table's
string value that is no UTF-8 as ``"Not UTF-8, base64 is: ..."``, other such bytes as U+FFFD.
(RabbitMQ 3.10.8's tools fail on them, exit 70, with either formatter.)
"""

from __future__ import annotations

import csv
import io
import json
import re
from collections.abc import Sequence
from typing import Any

from .._untrusted import json_dumps, json_text, utf8_safe

__all__ = ["csv_rows", "json_rows", "pretty_table", "table_rows", "table_value"]


def _charlist(text: str) -> str:
    """A string as ``~tp`` prints a printable charlist: ``"..."`` with ``"`` and ``\\``
    escaped (control characters as ``\\n``...)."""
    escapes = {"\n": "\\n", "\t": "\\t", "\r": "\\r", "\x1b": "\\e", "\b": "\\b", "\f": "\\f",
               "\v": "\\v", "\x7f": "\\d"}
    out = []
    for char in text:
        if char in ('"', "\\"):
            out.append("\\" + char)
        elif char in escapes:
            out.append(escapes[char])
        elif ord(char) < 32:
            out.append(f"\\^{chr(ord(char) + 64)}")
        else:
            out.append(char)
    return '"' + "".join(out) + '"'


_PLAIN_ATOM = re.compile(r"[a-z][A-Za-z0-9_@]*")


def _atom(name: str) -> str:
    """An atom as ``~p`` prints it: bare when it may be (``rabbit@localhost``), else quoted
    (``'embroker-2@localhost'``)."""
    if _PLAIN_ATOM.fullmatch(name):
        return name
    return "'" + name.replace("\\", "\\\\").replace("'", "\\'") + "'"


def _term(value: Any) -> str:
    """A prettified AMQP value as ``~tp`` prints it."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if value is None:
        return "undefined"
    if isinstance(value, str):
        return _charlist(value)
    if isinstance(value, float):
        return repr(value)
    if isinstance(value, int):
        return str(value)
    if isinstance(value, dict) and "$table" in value:
        return "[" + ",".join("{" + _charlist(k) + "," + _term(v) + "}"
                              for k, _type, v in value["$table"]) + "]"
    if isinstance(value, dict) and "$array" in value:
        return "[" + ",".join(_term(v) for _type, v in value["$array"]) + "]"
    if isinstance(value, list):
        return "[" + ",".join(map(_term, value)) + "]"
    return json_dumps(value)


def _written(value: Any, *, in_table: bool = False) -> Any:
    """``value`` (a row's, from the node) with its strings as the management API writes what a
    client chose (:mod:`embroker._untrusted`): a string value of an AMQP table or array by
    ``utf8_safe``, any other string (a name, a key) by ``json_text``."""
    if isinstance(value, str):
        return utf8_safe(value) if in_table else json_text(value)
    if isinstance(value, list):
        return [_written(v, in_table=in_table) for v in value]
    if isinstance(value, dict):
        if "$table" in value:
            return {"$table": [[json_text(k), t, _written(v, in_table=True)]
                               for k, t, v in value["$table"]]}
        if "$array" in value:
            return {"$array": [[t, _written(v, in_table=True)] for t, v in value["$array"]]}
        return {json_text(k): _written(v, in_table=in_table) for k, v in value.items()}
    return value


def _rows_written(rows: Sequence[Sequence[Any]]) -> list[list[Any]]:
    return [[_written(v) for v in row] for row in rows]


def table_value(value: Any) -> str:
    """One value as the table formatter prints it (``format_info_item``)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if value is None:
        return "undefined"
    if isinstance(value, str):
        return value
    if isinstance(value, (int, float)):
        return repr(value) if isinstance(value, float) else str(value)
    if isinstance(value, dict):
        if "$table" in value:
            return _term(value) if value["$table"] else "[]"
        if "$array" in value:
            return _term(value)
        if "$pid" in value:
            return str(value["$pid"])
        if "$ip" in value:
            return str(value["$ip"])
        if "$atoms" in value:
            return "[" + ", ".join(value["$atoms"]) + "]"
        if "$proplist" in value:
            return "[" + ", ".join(f"{{{_atom(k)}, {v}}}" for k, v in value["$proplist"]) + "]"
        if "$tuple" in value:
            return "{" + ",".join(map(str, value["$tuple"])) + "}"
        if "$raw" in value:
            return str(value["$raw"])
        return "#{" + ", ".join(f"{k} => {table_value(v)}" for k, v in value.items()) + "}"
    if isinstance(value, list):
        return "[" + ", ".join(table_value(v) for v in value) + "]" if value else "[]"
    return str(value)


def _json_value(value: Any) -> Any:
    """One value as the JSON formatter writes it (tuples as lists)."""
    if isinstance(value, dict):
        if "$table" in value:
            return [[k, t, _json_value(v)] for k, t, v in value["$table"]]
        if "$array" in value:  # (a list of {Type, Value}: a proplist, so an object)
            return {t: _json_value(v) for t, v in value["$array"]}
        if "$pid" in value:
            return _pid_json(str(value["$pid"]))
        if "$ip" in value:
            address = str(value["$ip"])
            parts = address.split(".")
            return [int(p) for p in parts] if len(parts) == 4 and all(
                p.isdigit() for p in parts) else address
        if "$atoms" in value:
            return list(value["$atoms"])
        if "$proplist" in value:
            return {k: _json_value(v) for k, v in value["$proplist"]}
        if "$tuple" in value:
            return list(value["$tuple"])
        if "$raw" in value:
            return str(value["$raw"])
        return {k: _json_value(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_json_value(v) for v in value]
    return value


def _pid_json(pid: str) -> str:
    """``<rabbit@host.CREATION.N.S>`` as the JSON formatter writes a remote pid:
    ``#PID<INDEX.N.S>`` (Elixir's inspect of a pid of another node)."""
    parts = pid.strip("<>").rsplit(".", 3)
    if len(parts) == 4:
        return f"#PID<{int(parts[1]) % 32768}.{parts[2]}.{parts[3]}>"
    return pid


def table_rows(columns: Sequence[str], rows: Sequence[Sequence[Any]], *,
               headers: bool) -> list[str]:
    """The lines of the table formatter: a header (unless ``headers`` is false), then one
    tab-separated line per row."""
    lines = ["\t".join(columns)] if headers and rows else []
    lines += ["\t".join(table_value(v) for v in row) for row in _rows_written(rows)]
    return lines


def json_rows(columns: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    """The JSON formatter's text for rows (without its final newline)."""
    objects = [json.dumps({c: _json_value(v) for c, v in zip(columns, row, strict=True)},
                          separators=(",", ":"), ensure_ascii=False)
               for row in _rows_written(rows)]
    return "[\n" + "\n,".join(objects) + ("\n" if objects else "") + "]"


def csv_rows(columns: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    """The CSV formatter's text: a header, then each row, every field quoted (``""`` inside),
    values as the table formatter prints them."""
    out = io.StringIO()
    writer = csv.writer(out, quoting=csv.QUOTE_ALL, lineterminator="\n")
    writer.writerow(columns)
    writer.writerows([table_value(v) for v in row] for row in _rows_written(rows))
    return out.getvalue()


#: DEC special graphics: switched on and off around each run of line-drawing characters.
_DEC_ON, _DEC_OFF = "\x1b(0", "\x1b(B"
_BOLD, _PLAIN = "\x1b[1m", "\x1b[0m"


def pretty_table(columns: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    """The ``pretty_table`` formatter's text (``stdout_formatter`` with a cell padding of one
    space): boxes in DEC line-drawing characters (``lqwk``, ``x``, ``tqnu``, ``mqvj``), the
    titles in bold, a rule between every two rows; each value as the table formatter prints
    it. Nothing at all for no rows."""
    if not rows:
        return ""
    cells = [[table_value(v) for v in row] for row in _rows_written(rows)]
    widths = [max(len(c) for c in column) for column in zip(columns, *cells, strict=True)]

    def rule(left: str, middle: str, right: str) -> str:
        return _DEC_ON + left + middle.join("q" * (w + 2) for w in widths) + right + _DEC_OFF

    def line(values: Sequence[str], *, bold: bool = False) -> str:
        bar = f"{_DEC_ON}x{_DEC_OFF}"
        return bar + "".join(
            f" {_BOLD}{v}{_PLAIN}{' ' * (w - len(v))} {bar}" if bold else
            f" {v.ljust(w)} {bar}" for v, w in zip(values, widths, strict=True))

    lines = [rule("l", "w", "k"), line(columns, bold=True)]
    for row in cells:
        lines += [rule("t", "n", "u"), line(row)]
    lines.append(rule("m", "v", "j"))
    return "\n".join(lines) + "\n"

