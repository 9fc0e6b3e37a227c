"""AMQP errors as exceptions that carry their reply code.

The AMQP 0-9-1 specification (section 2.3.6) splits errors into *channel exceptions*, which close
the channel they happened on, and *connection exceptions*, which close the whole connection. Each
reply code is a class here; the model raises only these (anything else is a bug), and the protocol
layer is the one place that turns them into ``channel.close`` / ``connection.close`` frames, filling
in the class and method that caused them. The in-process client raises them straight into the test.

Reply texts follow RabbitMQ's format, ``"NOT_FOUND - no queue 'q' in vhost '/'"``: the reply name,
a dash, then the text RabbitMQ's ``rabbit_channel.erl`` would give. Where a surface answers one
reply code differently by why it was refused (RabbitMQ 4's AMQP 1.0 management node ends the
session for a missing permission, but answers 403 for a reserved name; ``rabbitmqctl
delete_queue`` words if-unused and if-empty apart), the error says why as data,
:attr:`AMQPError.reason` (a :class:`Refusal`), never to be read back out of its text.

The other errors embroker raises live here too, so there is one place to import them from:
:class:`ChannelClosed` / :class:`ConnectionClosed` (the in-process client used after a close),
:class:`DefinitionsError` (a definitions document that cannot be loaded), :class:`AccessControlError`
(a refused change of users or permissions), :class:`PolicyError` (a policy or vhost limit
RabbitMQ would refuse) and :class:`PortInUse` (the listener's port is taken); and one warning,
:class:`PolicyWarning`.
"""

from __future__ import annotations

import enum
import errno
from collections.abc import Mapping
from typing import Any, ClassVar, Protocol, final

from typing_extensions import Self

__all__ = [
    "REPLY_CODES",
    "AMQPError",
    "AccessControlError",
    "AccessRefused",
    "ChannelClosed",
    "ChannelError",
    "ChannelException",
    "CommandInvalid",
    "ConnectionClosed",
    "ConnectionException",
    "ConnectionForced",
    "ContentTooLarge",
    "DefinitionsError",
    "FrameError",
    "InternalError",
    "InvalidPath",
    "NackError",
    "NoConsumers",
    "NoRoute",
    "NotAllowed",
    "NotFound",
    "NotImplementedAMQP",
    "PolicyError",
    "PolicyWarning",
    "PortInUse",
    "PreconditionFailed",
    "Refusal",
    "ResourceError",
    "ResourceLocked",
    "ReturnedMessageLike",
    "SyntaxErrorAMQP",
    "UnexpectedFrame",
    "UnroutableError",
    "error_for_code",
]


@enum.unique
class Refusal(enum.Enum):
    """Why the model refused an operation, where a surface answers the same reply code
    differently by the reason (:attr:`AMQPError.reason`)."""

    #: A permission of the user did not allow it: configure, write or read on a resource, a
    #: topic permission, or access to the vhost (``rabbit_access_control``: "access to ...
    #: refused for user ...").
    PERMISSION = "permission"
    #: A delete with ``if-unused`` of a queue with consumers or an exchange with bindings
    #: (``rabbit_amqqueue:delete/4``, ``rabbit_exchange:delete/3``: ``in_use``).
    IN_USE = "in_use"
    #: A queue delete with ``if-empty`` of a queue that holds messages (``not_empty``).
    NOT_EMPTY = "not_empty"


class AMQPError(Exception):
    """An AMQP error: a reply code, a reply text and the method that caused it.

    Args:
        text: what went wrong, without the reply name (``"no queue 'q' in vhost '/'"``).
        class_id: the AMQP class of the method that failed (0 when not caused by a method).
        method_id: the AMQP method id within that class.
        reason: why, where a surface tells reasons of one reply code apart (:class:`Refusal`);
            ``None`` for the others.
    """

    reply_code: ClassVar[int]
    reply_name: ClassVar[str]
    #: True for connection exceptions ("hard errors"), False for channel exceptions.
    hard: ClassVar[bool]

    def __init__(self, text: str, *, class_id: int = 0, method_id: int = 0,
                 reason: Refusal | None = None) -> None:
        super().__init__(text)
        self.text = text
        self.class_id = class_id
        self.method_id = method_id
        #: Why it was refused (:class:`Refusal`), where a surface tells reasons apart.
        self.reason = reason
        #: What a 404 found missing, ``(kind, name)`` (``("exchange", "order")``): the
        #: in-process client and ``explain()`` look for the name that was meant.
        self.missing: tuple[str, str] | None = None

    @property
    def reply_text(self) -> str:
        """The reply text as RabbitMQ sends it: ``"NOT_FOUND - no queue 'q' in vhost '/'"``, or
        the reply name alone when there is no text (basic.return's ``"NO_ROUTE"``)."""
        return f"{self.reply_name} - {self.text}" if self.text else self.reply_name

    @property
    def wire_reply_text(self) -> str:
        """The reply text as a close frame carries it: a shortstr, at most 255 bytes. As
        RabbitMQ does, a longer text is cut to its first 252 bytes (even inside a UTF-8
        sequence, which then stays as escaped bytes) and ``...``."""
        text = self.reply_text
        data = text.encode("utf-8", "surrogateescape")
        if len(data) <= 255:
            return text
        return data[:252].decode("utf-8", "surrogateescape") + "..."

    def with_method(self, class_id: int, method_id: int) -> Self:
        """Record the method that caused this error, unless one is already recorded."""
        if not self.class_id:
            self.class_id, self.method_id = class_id, method_id
        return self

    def __str__(self) -> str:
        return f"{self.reply_code} {self.reply_text}"

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.text!r})"


class ChannelException(AMQPError):
    """A soft error: the server closes the channel with ``channel.close``."""

    hard = False


class ConnectionException(AMQPError):
    """A hard error: the server closes the connection with ``connection.close``."""

    hard = True


@final
class ContentTooLarge(ChannelException):
    #: "The client attempted to transfer content larger than the server could accept at the
    #: present time."
    reply_code = 311
    reply_name = "CONTENT_TOO_LARGE"


@final
class NoRoute(ChannelException):
    #: RabbitMQ: a mandatory message could not be routed to any queue (sent in basic.return).
    reply_code = 312
    reply_name = "NO_ROUTE"


@final
class NoConsumers(ChannelException):
    #: "When the exchange cannot deliver to a consumer when the immediate flag is set."
    reply_code = 313
    reply_name = "NO_CONSUMERS"


@final
class AccessRefused(ChannelException):
    #: "The client attempted to work with a server entity to which it has no access due to
    #: security settings."
    reply_code = 403
    reply_name = "ACCESS_REFUSED"


@final
class NotFound(ChannelException):
    #: "The client attempted to work with a server entity that does not exist."
    reply_code = 404
    reply_name = "NOT_FOUND"


@final
class ResourceLocked(ChannelException):
    #: "The client attempted to work with a server entity to which it has no access because
    #: another client is working with it."
    reply_code = 405
    reply_name = "RESOURCE_LOCKED"


@final
class PreconditionFailed(ChannelException):
    #: "The client requested a method that was not allowed because some precondition failed."
    reply_code = 406
    reply_name = "PRECONDITION_FAILED"


@final
class ConnectionForced(ConnectionException):
    #: "An operator intervened to close the connection for some reason."
    reply_code = 320
    reply_name = "CONNECTION_FORCED"


@final
class InvalidPath(ConnectionException):
    #: "The client tried to work with an unknown virtual host."
    reply_code = 402
    reply_name = "INVALID_PATH"


@final
class FrameError(ConnectionException):
    #: "The sender sent a malformed frame that the recipient could not decode."
    reply_code = 501
    reply_name = "FRAME_ERROR"


@final
class SyntaxErrorAMQP(ConnectionException):
    #: "The sender sent a frame that contained illegal values for one or more fields."
    reply_code = 502
    reply_name = "SYNTAX_ERROR"


@final
class CommandInvalid(ConnectionException):
    #: "The client sent an invalid sequence of frames, attempting to perform an operation that
    #: was considered invalid by the server."
    reply_code = 503
    reply_name = "COMMAND_INVALID"


@final
class ChannelError(ConnectionException):
    #: "The client attempted to work with a channel that had not been correctly opened."
    reply_code = 504
    reply_name = "CHANNEL_ERROR"


@final
class UnexpectedFrame(ConnectionException):
    #: "The peer sent a frame that was not expected, usually in the context of a content header
    #: and body."
    reply_code = 505
    reply_name = "UNEXPECTED_FRAME"


@final
class ResourceError(ConnectionException):
    #: "The server could not complete the method because it lacked sufficient resources."
    reply_code = 506
    reply_name = "RESOURCE_ERROR"


@final
class NotAllowed(ConnectionException):
    #: "The client tried to work with some entity in a manner that is prohibited by the server,
    #: due to security settings or by some other criteria."
    reply_code = 530
    reply_name = "NOT_ALLOWED"


@final
class NotImplementedAMQP(ConnectionException):
    #: "The client tried to use functionality that is not implemented in the server."
    reply_code = 540
    reply_name = "NOT_IMPLEMENTED"


@final
class InternalError(ConnectionException):
    #: "The server could not complete the method because of an internal error."
    reply_code = 541
    reply_name = "INTERNAL_ERROR"


#: Every reply code that names an error, mapped to its exception class.
REPLY_CODES: Mapping[int, type[AMQPError]] = {
    cls.reply_code: cls
    for cls in (
        ContentTooLarge, NoRoute, NoConsumers, AccessRefused, NotFound, ResourceLocked,
        PreconditionFailed, ConnectionForced, InvalidPath, FrameError, SyntaxErrorAMQP,
        CommandInvalid, ChannelError, UnexpectedFrame, ResourceError, NotAllowed,
        NotImplementedAMQP, InternalError,
    )
}


def error_for_code(reply_code: int, text: str, *, class_id: int = 0, method_id: int = 0) -> AMQPError:
    """Build the exception for a reply code received from a peer.

    Raises:
        KeyError: ``reply_code`` is not an AMQP error code.
    """
    return REPLY_CODES[reply_code](text, class_id=class_id, method_id=method_id)


# -- errors that are not AMQP replies --------------------------------------------------------------


class ChannelClosed(RuntimeError):
    """An in-process channel was used after it closed; ``reason`` is the error that closed it,
    if one did."""

    def __init__(self, reason: AMQPError | None) -> None:
        super().__init__(f"channel is closed{f': {reason}' if reason else ''}")
        self.reason = reason


class ReturnedMessageLike(Protocol):
    """What :class:`UnroutableError` and :class:`NackError` carry of a returned message, as
    basic.return reports it (the in-process client's :class:`embroker.client.ReturnedMessage`
    is one): the errors name no client type, so that nothing here depends on a surface."""

    @property
    def reply_code(self) -> int: ...
    @property
    def reply_text(self) -> str: ...
    @property
    def exchange(self) -> str: ...
    @property
    def routing_key(self) -> str: ...
    @property
    def properties(self) -> dict[str, Any]: ...
    @property
    def body(self) -> bytes: ...


class UnroutableError(RuntimeError):
    """The in-process client's ``basic_publish`` in confirm mode: a mandatory message came back
    (basic.return), as pika's ``BlockingChannel`` raises ``UnroutableError``. ``messages``: the
    returned messages (:class:`embroker.client.ReturnedMessage`)."""

    def __init__(self, messages: list[ReturnedMessageLike]) -> None:
        super().__init__(f"{len(messages)} message(s) returned: {messages!r}")
        self.messages = messages


class NackError(RuntimeError):
    """The in-process client's ``basic_publish`` in confirm mode: the broker nacked the message
    (a queue with ``x-overflow`` reject-publish was full, or a test injected a nack), as pika's
    ``BlockingChannel`` raises ``NackError``. ``messages``: the message returned with it, if
    it was mandatory and came back too."""

    def __init__(self, messages: list[ReturnedMessageLike]) -> None:
        super().__init__(f"message nacked by the broker{f': {messages!r}' if messages else ''}")
        self.messages = messages


class ConnectionClosed(RuntimeError):
    """An in-process connection was used after it closed; ``reason`` is the error that closed
    it, if one did."""

    def __init__(self, reason: AMQPError | None) -> None:
        super().__init__(f"connection is closed{f': {reason}' if reason else ''}")
        self.reason = reason


class DefinitionsError(ValueError):
    """A definitions document embroker cannot load: malformed (not JSON, not an object, a field
    of the wrong type or missing, nested too deep, too big), refused by the model as RabbitMQ's
    import refuses it (an unknown vhost or user, a queue argument or policy RabbitMQ would not
    take), or using what embroker does not model. ``str()`` is the text, RabbitMQ's own where its
    import has one (``Validation failed`` and its reason, possibly over several lines).

    Args:
        text: what went wrong.
        reason: what RabbitMQ's management API answers as the ``reason`` of its 400 when the
            whole broker's definitions are posted, where that is an Erlang term rather than a
            text (``["no_such_vhost", "v"]``, ``"failed_to_parse_json"``); the text otherwise.
    """

    def __init__(self, text: str, *, reason: object = None) -> None:
        super().__init__(text)
        self.text = text
        self.reason = text if reason is None else reason

    @property
    def line(self) -> str:
        """The text on one line, for a log or a terminal: its lines joined, control characters
        escaped (a document's names are anyone's text)."""
        head, *rest = [part.strip() for part in self.text.splitlines() if part.strip()] or [""]
        if rest:  # ("Validation failed" + its reason: "Validation failed: ...")
            head += ("" if head.endswith((".", ":", "!", "?")) else ":") + " " + " ".join(rest)
        return "".join(c if c.isprintable() else repr(c)[1:-1] for c in head)


class PolicyError(ValueError):
    """A policy, operator policy or vhost limit RabbitMQ would refuse, or a policy command on
    something missing; the text is what ``rabbitmqctl`` prints (``Validation failed``, a blank
    line, then RabbitMQ's reason), and :attr:`reason` the reason alone."""

    def __init__(self, text: str, reason: str | None = None) -> None:
        super().__init__(text)
        #: RabbitMQ's reason (``-1 is not a valid message TTL``), or the whole text.
        self.reason = reason if reason is not None else text

    @classmethod
    def validation(cls, reason: str) -> Self:
        """``Validation failed`` for ``reason``, as ``rabbitmqctl`` prints it."""
        return cls(f"Validation failed\n\n{reason}", reason)


class PolicyWarning(UserWarning):
    """A policy that does not do in embroker all it would in RabbitMQ: keys kept with no effect
    (mirroring, federation), or equal-priority policies whose choice RabbitMQ leaves to chance."""


class AccessControlError(ValueError):
    """A change of users or permissions the broker refuses, as ``rabbitmqctl`` would: no such
    user or vhost, a user that exists already, an invalid regular expression."""


class PortInUse(OSError):
    """The port asked for is taken (another broker, perhaps RabbitMQ, holds it)."""

    def __init__(self, host: str, port: int) -> None:
        super().__init__(errno.EADDRINUSE, f"port {port} on {host} is in use")
        self.host = host
        self.port = port

    def __str__(self) -> str:
        return f"port {self.port} on {self.host} is in use"


def add_note(exc: BaseException, note: str) -> None:
    """PEP 678's ``add_note`` (Python 3.11+; ``__notes__`` before, which pytest shows)."""
    if hasattr(exc, "add_note"):
        exc.add_note(note)
    else:
        notes = getattr(exc, "__notes__", None)
        if notes is None:
            notes = []
            exc.__notes__ = notes  # type: ignore[attr-defined]
        notes.append(note)
