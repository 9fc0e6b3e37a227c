"""The base class of the generated method classes, and the helpers their code calls."""

from __future__ import annotations

import struct
from typing import TYPE_CHECKING, Any, ClassVar

from embroker._untrusted import erlang_utf8
from embroker.amqp091._fields import encode_longstr, encode_shortstr, encode_table
from embroker.errors import FrameError, SyntaxErrorAMQP

if TYPE_CHECKING:
    from embroker.amqp091._spec import ArgumentSpec

__all__ = ["Method"]

_FRAME_HEADER = struct.Struct(">BHI")
_FIXED = {"octet": ">B", "short": ">H", "long": ">I", "longlong": ">Q", "timestamp": ">Q"}


class Method:
    """An AMQP method: a class id, a method id and typed arguments.

    The concrete classes (``BasicPublish``, ``QueueDeclare``...) are generated from the method
    table in ``_spec.py``. Their instances are plain mutable records with one slot per argument,
    cheap to build; they compare equal when they are the same method with equal arguments.

    Class attributes (upper case, so they never clash with an argument such as ``class_id``):
    ``CLASS_ID``, ``METHOD_ID``, ``INDEX`` (``CLASS_ID << 16 | METHOD_ID``), ``NAME``
    (``"basic.publish"``), ``SYNCHRONOUS``, ``REPLIES`` (the method classes that answer it),
    ``HAS_CONTENT`` (a content header and bodies follow) and ``ARGUMENTS`` (the table rows).
    """

    __slots__ = ()
    __hash__ = None  # type: ignore[assignment]  # mutable

    CLASS_ID: ClassVar[int]
    METHOD_ID: ClassVar[int]
    INDEX: ClassVar[int]
    NAME: ClassVar[str]
    SYNCHRONOUS: ClassVar[bool]
    REPLIES: ClassVar[tuple[type[Method], ...]]
    HAS_CONTENT: ClassVar[bool]
    ARGUMENTS: ClassVar[tuple[ArgumentSpec, ...]]

    def encode(self) -> bytes:
        """The method frame payload: class id, method id, then the encoded arguments.

        Raises:
            TypeError: an argument has the wrong type.
            ValueError: an argument is out of range (a shortstr over 255 bytes, a negative
                short...).
        """
        raise NotImplementedError  # pragma: no cover - every generated class overrides it

    def encode_frame(self, channel: int) -> bytes:
        """The whole method frame for ``channel``: header, payload and frame end.

        Raises:
            TypeError, ValueError: as :meth:`encode`.
        """
        payload = self.encode()
        return _FRAME_HEADER.pack(1, channel, len(payload)) + payload + b"\xce"

    def as_dict(self) -> dict[str, Any]:
        """The arguments as a dict, attribute name to value, in spec order."""
        return {argument.attribute: getattr(self, argument.attribute)
                for argument in self.ARGUMENTS}

    def __eq__(self, other: object) -> bool:
        if type(other) is not type(self):
            return NotImplemented
        return all(getattr(self, argument.attribute) == getattr(other, argument.attribute)
                   for argument in self.ARGUMENTS)

    def __repr__(self) -> str:
        fields = ", ".join(f"{name}={value!r}" for name, value in self.as_dict().items())
        return f"{type(self).__name__}({fields})"


def encode_error(method: Method, error: Exception) -> Exception:
    """Turn a low-level failure inside a generated ``encode()`` into a clear TypeError/ValueError.

    Re-encodes each argument on its own to find the culprit.
    """
    for argument in method.ARGUMENTS:
        value = getattr(method, argument.attribute)
        where = f"{method.NAME} argument {argument.attribute}={value!r:.60}"
        try:
            _encode_one(argument.type, value)
        except (TypeError, ValueError) as exc:
            return type(exc)(f"{where}: {exc}")
    return ValueError(f"cannot encode {method.NAME}: {error}")  # pragma: no cover


def _encode_one(wire_type: str, value: Any) -> None:
    if wire_type == "shortstr":
        encode_shortstr(value)
    elif wire_type == "longstr":
        encode_longstr(value)
    elif wire_type == "table":
        if value is not None:
            encode_table(value)
    elif wire_type == "bit":
        pass
    else:
        if isinstance(value, bool) or not isinstance(value, int):
            raise TypeError(f"{wire_type} must be int, not {type(value).__name__}")
        try:
            struct.pack(_FIXED[wire_type], value)
        except struct.error:
            bits = struct.calcsize(_FIXED[wire_type]) * 8
            raise ValueError(f"{value} does not fit an unsigned {bits}-bit {wire_type}") from None


def checked_shortstr(data: bytes) -> str:
    """A short string of a method without content that is no UTF-8 for Python's codec: its
    text (``surrogateescape``) when RabbitMQ reads it as UTF-8 (a surrogate's encoding, a code
    point past U+10FFFF), else RabbitMQ's connection error (``rabbit_binary_parser:assert_utf8``,
    which its generated decoder calls on these strings only: "We skip the check on
    content-bearing methods for speed").

    Raises:
        FrameError: (501) ``Malformed UTF-8 in shortstr``, with no class or method, as
            RabbitMQ's.
    """
    if not erlang_utf8(data):
        raise FrameError("Malformed UTF-8 in shortstr")
    return data.decode("utf-8", "surrogateescape")


def truncated(cls: type[Method]) -> SyntaxErrorAMQP:
    """The error for a method payload that ends before its arguments do."""
    return SyntaxErrorAMQP(f"{cls.NAME} arguments truncated", class_id=cls.CLASS_ID,
                           method_id=cls.METHOD_ID)


def bad_length(cls: type[Method], used: int, size: int) -> SyntaxErrorAMQP:
    """The error for a method payload whose arguments do not end where the payload does."""
    if used > size:
        return truncated(cls)
    return SyntaxErrorAMQP(f"{size - used} unexpected bytes after the {cls.NAME} arguments",
                           class_id=cls.CLASS_ID, method_id=cls.METHOD_ID)
