"""Generate ``_methods.py`` from the method table in ``_spec.py``.

Run ``python -m embroker.amqp091._codegen`` after changing the table; ``tests/amqp091`` fails
while the generated module and the table disagree.

For each method the generator writes a slotted ``@final`` class (typed ``__init__`` with the
table's defaults, class attributes, an ``encode()`` specialised to the method's arguments) and a
decoder function. Runs of fixed-size arguments (octets, shorts, longs, long-longs, packed bits)
become one precompiled ``struct.Struct`` each, which is what makes the generated code several
times faster than a loop over the argument list. A short string of a method without content is
read strictly, and one that is no UTF-8 goes to ``checked_shortstr`` (RabbitMQ's
``assert_utf8``); the strings of a content method are read as they come (``surrogateescape``).
"""

from __future__ import annotations

import sys
from dataclasses import dataclass, field
from pathlib import Path

from embroker.amqp091._spec import METHODS, ArgumentSpec, MethodSpec

__all__ = ["main", "render"]

_FIXED_FORMAT = {"octet": "B", "short": "H", "long": "I", "longlong": "Q", "timestamp": "Q"}
_FIXED_SIZE = {"B": 1, "H": 2, "I": 4, "Q": 8}
_PY_TYPE = {"bit": "bool", "octet": "int", "short": "int", "long": "int", "longlong": "int",
            "timestamp": "int", "shortstr": "str", "longstr": "str", "table": "FieldTable"}
_WIDTH = 100


@dataclass
class _Fixed:
    """A run of fixed-size arguments, packed with one struct."""

    #: (format char, argument) or (format char, [bit arguments]) in order.
    items: list[tuple[str, ArgumentSpec | list[ArgumentSpec]]] = field(default_factory=list)

    @property
    def format(self) -> str:
        return "".join(char for char, _ in self.items)

    @property
    def size(self) -> int:
        return sum(_FIXED_SIZE[char] for char, _ in self.items)


_Segment = _Fixed | ArgumentSpec


def _segments(spec: MethodSpec) -> list[_Segment]:
    segments: list[_Segment] = []
    for argument in spec.arguments:
        if argument.type in ("shortstr", "longstr", "table"):
            segments.append(argument)
            continue
        if not segments or not isinstance(segments[-1], _Fixed):
            segments.append(_Fixed())
        run = segments[-1]
        assert isinstance(run, _Fixed)
        if argument.type == "bit":
            last = run.items[-1] if run.items else None
            if last is not None and isinstance(last[1], list) and len(last[1]) < 8:
                last[1].append(argument)
            else:
                run.items.append(("B", [argument]))
        else:
            run.items.append((_FIXED_FORMAT[argument.type], argument))
    return segments


def _struct_name(fmt: str) -> str:
    return f"_S_{fmt}"


def _wrap_call(head: str, items: list[str], tail: str, indent: str) -> list[str]:
    """``head + ", ".join(items) + tail`` on one line if it fits, else one item per line."""
    line = f"{indent}{head}{', '.join(items)}{tail}"
    if len(line) <= _WIDTH:
        return [line]
    inner = indent + "    "
    return [f"{indent}{head}", *(f"{inner}{item}," for item in items), f"{indent}{tail.lstrip()}"]


def _default_literal(argument: ArgumentSpec) -> str:
    value = argument.default_value
    return "None" if value is None else repr(value)


def _bits_expression(bits: list[ArgumentSpec]) -> str:
    if len(bits) == 1:
        return f"1 if self.{bits[0].attribute} else 0"
    return " | ".join(f"({1 << i} if self.{bit.attribute} else 0)" for i, bit in enumerate(bits))


class _Writer:
    def __init__(self) -> None:
        self.structs: set[str] = set()
        self.lines: list[str] = []

    def emit(self, *lines: str) -> None:
        self.lines.extend(lines)

    def struct(self, fmt: str) -> str:
        self.structs.add(fmt)
        return _struct_name(fmt)

    # -- one class ---------------------------------------------------------------------------

    def method_class(self, number: int, spec: MethodSpec) -> None:
        name = spec.python_name
        attributes = [argument.attribute for argument in spec.arguments]
        kind = "Synchronous" if spec.synchronous else "Asynchronous"
        if spec.replies:
            kind += f", answered by {' or '.join(f'``{r}``' for r in spec.replies)}"
        if spec.content:
            kind += "; carries content"
        self.emit("", "", "@final", f"class {name}(Method):",
                  f'    """``{spec.name}`` ({spec.class_id}, {spec.method_id}): {spec.doc}', "",
                  f"    {kind}.")
        if spec.arguments:
            self.emit("", "    Args:")
            for argument in spec.arguments:
                self.emit(f"        {argument.attribute}: {argument.type}, default "
                          f"{_default_literal(argument).replace('None', 'empty')}.")
        self.emit('    """', "")
        self.emit(*_wrap_call("__slots__ = (", [repr(a) for a in sorted(attributes)],
                              ")" if len(attributes) != 1 else ",)", "    "))
        self.emit(*_wrap_call("__match_args__ = (", [repr(a) for a in attributes],
                              ")" if len(attributes) != 1 else ",)", "    "))
        self.emit(f"    CLASS_ID = {spec.class_id}", f"    METHOD_ID = {spec.method_id}",
                  f"    INDEX = 0x{spec.index:08X}", f"    NAME = {spec.name!r}",
                  f"    SYNCHRONOUS = {spec.synchronous}", f"    HAS_CONTENT = {spec.content}",
                  f"    ARGUMENTS = _SPECS[{number}].arguments")
        if not spec.replies:
            self.emit("    REPLIES = ()")
        if spec.arguments:
            self.emit("")
            for argument in spec.arguments:
                self.emit(f"    {argument.attribute}: {_PY_TYPE[argument.type]}")
            self.init(spec)
        self.encoder(spec)
        self.decoder(spec)

    def init(self, spec: MethodSpec) -> None:
        params = []
        for argument in spec.arguments:
            annotation = _PY_TYPE[argument.type]
            if argument.type == "table":
                annotation += " | None"
            params.append(f"{argument.attribute}: {annotation} = {_default_literal(argument)}")
        self.emit("", *_wrap_call("def __init__(self, ", params, ") -> None:", "    "))
        if self.lines[-1].strip() == ") -> None:":
            # one parameter per line: put ``self`` on its own line too
            start = len(self.lines) - len(params) - 2
            self.lines[start] = "    def __init__("
            self.lines.insert(start + 1, "        self,")
        for argument in spec.arguments:
            attr = argument.attribute
            if argument.type == "table":
                self.emit(f"        self.{attr} = {{}} if {attr} is None else {attr}")
            else:
                self.emit(f"        self.{attr} = {attr}")

    def encoder(self, spec: MethodSpec) -> None:
        prefix_bytes = "".join(f"\\x{b:02x}" for b in
                               (spec.class_id >> 8, spec.class_id & 255,
                                spec.method_id >> 8, spec.method_id & 255))
        self.emit("", "    def encode(self) -> bytes:")
        segments = _segments(spec)
        if not segments:
            self.emit(f'        return b"{prefix_bytes}"')
            return
        prelude: list[str] = []
        parts: list[str] = []
        for i, segment in enumerate(segments):
            if isinstance(segment, _Fixed):
                fmt = segment.format
                values: list[str] = []
                if i == 0:
                    fmt = "HH" + fmt
                    values = [str(spec.class_id), str(spec.method_id)]
                for _, item in segment.items:
                    if isinstance(item, list):
                        expression = _bits_expression(item)
                        if len(item) > 1:
                            var = f"bits{len(prelude)}"
                            prelude.append(f"{var} = {expression}")
                            expression = var
                        values.append(expression)
                    else:
                        values.append(f"self.{item.attribute}")
                if fmt == "B" and isinstance(segment.items[0][1], list):
                    parts.append(f"_LEN8[{values[0]}]")
                else:
                    parts.append(f"{self.struct(fmt)}.pack({', '.join(values)})")
                continue
            if i == 0:
                parts.append(f'b"{prefix_bytes}"')
            attr = segment.attribute
            if segment.type == "shortstr":
                prelude.append(f'{attr} = self.{attr}.encode("utf-8", "surrogateescape")')
                parts += [f"_LEN8[len({attr})]", attr]
            elif segment.type == "longstr":
                prelude.append(f'{attr} = self.{attr}.encode("utf-8", "surrogateescape")')
                parts += [f"_U32.pack(len({attr}))", attr]
            else:
                parts.append(f"encode_table(self.{attr})")
        self.emit("        try:")
        for line in prelude:
            if len(line) + 12 > _WIDTH:
                head, _, tail = line.partition(" = ")
                self.emit(f"            {head} = (", *(f"                {term}" for term in
                                                       tail.replace(" | ", " |\n").split("\n")),
                          "            )")
            else:
                self.emit(f"            {line}")
        if len(parts) == 1:
            part = parts[0]
            if len(part) + 19 > _WIDTH and part.endswith(")") and "(" in part:
                head, _, args = part.partition("(")
                self.emit(*_wrap_call(f"return {head}(", args[:-1].split(", "), ")",
                                      "            "))
            else:
                self.emit(f"            return {part}")
        else:
            self.emit(*_wrap_call('return b"".join((', parts, "))", "            "))
        self.emit("        except (IndexError, TypeError, AttributeError, struct.error) as exc:",
                  "            raise encode_error(self, exc) from None")

    def decoder(self, spec: MethodSpec) -> None:
        name = spec.python_name
        function = f"_decode_{spec.name.replace('.', '_').replace('-', '_')}"
        body: list[str] = []
        segments = _segments(spec)
        has_table = any(isinstance(s, ArgumentSpec) and s.type == "table" for s in segments)
        bit_lines: list[str] = []
        bit_groups = 0
        offset = "4"
        length_known = False  # the next shortstr's length octet was unpacked into ``n``
        for index, segment in enumerate(segments):
            if isinstance(segment, _Fixed):
                targets: list[str] = []
                for _, item in segment.items:
                    if isinstance(item, list):
                        var = f"bits{bit_groups}"
                        bit_groups += 1
                        targets.append(var)
                        for bit_no, bit in enumerate(item):
                            bit_lines.append(f"m.{bit.attribute} = ({var} & {1 << bit_no}) != 0")
                    else:
                        targets.append(f"m.{item.attribute}")
                fmt, size = segment.format, segment.size
                following = segments[index + 1] if index + 1 < len(segments) else None
                if isinstance(following, ArgumentSpec) and following.type == "shortstr":
                    fmt, size = fmt + "B", size + 1
                    targets.append("n")
                    length_known = True
                unpack = f"{self.struct(fmt)}.unpack_from(p, {offset})"
                if fmt == "B":
                    body.append(f"{targets[0]} = p[{offset}]")
                elif len(targets) == 1:
                    body.append(f"({targets[0]},) = {unpack}")
                else:
                    body.append(f"{', '.join(targets)} = {unpack}")
                body.append(f"o = {offset} + {size}" if offset != "o" else f"o += {size}")
                offset = "o"
                continue
            if offset != "o":
                body.append(f"o = {offset}")
                offset = "o"
            attr = segment.attribute
            if segment.type == "shortstr":
                if length_known:
                    body.append("e = o + n")
                    length_known = False
                    start = "o"
                else:
                    body.append("e = o + 1 + p[o]")
                    start = "o + 1"
                if spec.content:  # (RabbitMQ checks no string of a content method)
                    body.append(f'm.{attr} = p[{start}:e].decode("utf-8", "surrogateescape")')
                else:
                    body += ["try:", f'    m.{attr} = p[{start}:e].decode("utf-8")',
                             "except UnicodeDecodeError:",
                             f"    m.{attr} = checked_shortstr(p[{start}:e])"]
                body.append("o = e")
            elif segment.type == "longstr":
                body += ["e = o + 4 + _U32.unpack_from(p, o)[0]",
                         f'm.{attr} = p[o + 4:e].decode("utf-8", "surrogateescape")', "o = e"]
            else:
                body.append(f"m.{attr}, o = read_table(p, o)")
        self.emit("", "", f"def {function}(p: bytes) -> {name}:")
        if not segments:
            self.emit("    if len(p) != 4:", f"        raise bad_length({name}, 4, len(p))",
                      f"    return _new({name})")
            return
        self.emit(f"    m = _new({name})", "    try:")
        for line in body:
            self.emit(f"        {line}")
        self.emit("    except (IndexError, struct.error):",
                  f"        raise truncated({name}) from None")
        if has_table:
            self.emit("    except SyntaxErrorAMQP as exc:",
                      f"        raise exc.with_method({spec.class_id}, {spec.method_id}) from None")
        self.emit("    if o != len(p):", f"        raise bad_length({name}, o, len(p))")
        for line in bit_lines:
            self.emit(f"    {line}")
        self.emit("    return m")


_HEADER = '''\
"""AMQP 0-9-1 method classes: GENERATED from ``_spec.py`` by ``_codegen.py``, do not edit.

Regenerate with ``python -m embroker.amqp091._codegen``.
"""

from __future__ import annotations

import struct
from collections.abc import Callable
from typing import Final, final

from embroker.amqp091._fields import _LEN8, FieldTable, encode_table, read_table
from embroker.amqp091._method import (
    Method,
    bad_length,
    checked_shortstr,
    encode_error,
    truncated,
)
from embroker.amqp091._spec import METHODS as _SPECS
from embroker.errors import SyntaxErrorAMQP

_new = object.__new__  # decoders fill the slots directly: cheaper than calling __init__
'''


def render() -> str:
    """The source text of ``_methods.py``."""
    writer = _Writer()
    for number, spec in enumerate(METHODS):
        writer.method_class(number, spec)
    names = [spec.python_name for spec in METHODS]
    by_name = {spec.name: spec.python_name for spec in METHODS}
    out = [_HEADER.rstrip("\n"), ""]
    out.append("__all__ = [")
    out += [f"    {n!r}," for n in ["DECODERS", "METHOD_CLASSES", *sorted(names)]]
    out.append("]")
    out.append("")
    out.append('_U32 = struct.Struct(">I")')
    out += [f'{_struct_name(fmt)} = struct.Struct(">{fmt}")' for fmt in sorted(writer.structs)]
    out += writer.lines
    out += ["", ""]
    for spec in METHODS:
        if spec.replies:
            replies = ", ".join(by_name[r] for r in spec.replies)
            comma = "," if len(spec.replies) == 1 else ""
            out.append(f"{spec.python_name}.REPLIES = ({replies}{comma})")
    out += ["", "#: Every method class, by ``INDEX`` (class id << 16 | method id).",
            "METHOD_CLASSES: Final[dict[int, type[Method]]] = {"]
    out += [f"    0x{spec.index:08X}: {spec.python_name}," for spec in METHODS]
    out += ["}", "", "#: The decoder of each method, by ``INDEX``.",
            "DECODERS: Final[dict[int, Callable[[bytes], Method]]] = {"]
    out += [f"    0x{spec.index:08X}: _decode_{spec.name.replace('.', '_').replace('-', '_')},"
            for spec in METHODS]
    out += ["}", ""]
    return "\n".join(out)


def main() -> None:
    target = Path(__file__).with_name("_methods.py")
    target.write_text(render())
    sys.stdout.write(f"wrote {target}\n")


if __name__ == "__main__":
    main()
