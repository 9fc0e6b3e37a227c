"""AMQP 1.0 error conditions (Part 2 section 2.8.15 onwards) as exceptions.

An error in AMQP 1.0 ends an *endpoint*: the connection (``close``), a session (``end``) or a
link (``detach`` with ``closed=true``), each carrying an ``error`` with a symbolic condition and a
description. The exceptions here carry the condition, the description and which endpoint they
end; the server connection turns them into that frame in one place.
"""

from __future__ import annotations

from typing import ClassVar, Final

__all__ = [
    "CONDITIONS",
    "ConnectionError10",
    "DecodeError",
    "FramingError",
    "LinkError",
    "ProtocolError",
    "SessionError",
]

#: Every error condition of the specification, each with the sentence that defines it.
CONDITIONS: Final = {
    "amqp:internal-error": "An internal error occurred.",
    "amqp:not-found": "A peer attempted to work with a remote entity that does not exist.",
    "amqp:unauthorized-access": "A peer attempted to work with a remote entity to which it has "
                                "no access due to security settings.",
    "amqp:decode-error": "Data could not be decoded.",
    "amqp:resource-limit-exceeded": "A peer exceeded its resource allocation.",
    "amqp:not-allowed": "The peer tried to use a frame in a manner that is inconsistent with "
                        "the semantics defined in the specification.",
    "amqp:invalid-field": "An invalid field was passed in a frame body, and the operation "
                          "could not proceed.",
    "amqp:not-implemented": "The peer tried to use functionality that is not implemented in "
                            "its partner.",
    "amqp:resource-locked": "The client attempted to work with a server entity to which it has "
                            "no access because another client is working with it.",
    "amqp:precondition-failed": "The client made a request that was not allowed because some "
                                "precondition failed.",
    "amqp:resource-deleted": "A server entity the client is working with has been deleted.",
    "amqp:illegal-state": "The peer sent a frame that is not permitted in the current state.",
    "amqp:frame-size-too-small": "The peer cannot send a frame because the smallest encoding "
                                 "of the performative with the currently valid values would be "
                                 "too large to fit within a frame of the agreed maximum frame "
                                 "size.",
    "amqp:connection:forced": "An operator intervened to close the connection for some reason.",
    "amqp:connection:framing-error": "A valid frame header cannot be formed from the incoming "
                                     "byte stream.",
    "amqp:connection:redirect": "The container is no longer available on the current "
                                "connection.",
    "amqp:session:window-violation": "The peer violated incoming window for the session.",
    "amqp:session:errant-link": "Input was received for a link that was detached with an "
                                "error.",
    "amqp:session:handle-in-use": "An attach was received using a handle that is already in "
                                  "use for an attached link.",
    "amqp:session:unattached-handle": "A frame (other than attach) was received referencing a "
                                      "handle which is not currently in use of an attached "
                                      "link.",
    "amqp:link:detach-forced": "An operator intervened to detach for some reason.",
    "amqp:link:transfer-limit-exceeded": "The peer sent more message transfers than currently "
                                         "allowed on the link.",
    "amqp:link:message-size-exceeded": "The peer sent a larger message than is supported on "
                                       "the link.",
    "amqp:link:redirect": "The address provided cannot be resolved to a terminus at the "
                          "current container.",
    "amqp:link:stolen": "The link has been attached elsewhere, causing the existing attachment "
                        "to be forcibly closed.",
    "amqp:transaction:unknown-id": "The specified txn-id does not exist.",
    "amqp:transaction:rollback": "The transaction was rolled back for an unspecified reason.",
    "amqp:transaction:timeout": "The work represented by this transaction took too long.",
}


class ProtocolError(Exception):
    """An AMQP 1.0 error: a condition, a description, and the endpoint it ends.

    Args:
        condition: the error condition symbol (``"amqp:not-found"``...).
        description: what went wrong, for a human.
    """

    #: Which endpoint the error ends: ``"connection"``, ``"session"`` or ``"link"``.
    scope: ClassVar[str] = "connection"

    def __init__(self, condition: str, description: str) -> None:
        super().__init__(f"{condition}: {description}")
        self.condition = condition
        self.description = description

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.condition!r}, {self.description!r})"


class ConnectionError10(ProtocolError):
    """An error that closes the connection."""

    scope = "connection"


class SessionError(ProtocolError):
    """An error that ends one session."""

    scope = "session"


class LinkError(ProtocolError):
    """An error that detaches (closes) one link."""

    scope = "link"


class DecodeError(ConnectionError10):
    """Bytes that are not a valid AMQP 1.0 encoding: ``amqp:decode-error``."""

    def __init__(self, description: str) -> None:
        super().__init__("amqp:decode-error", description)


class FramingError(ConnectionError10):
    """A frame header that cannot be valid: ``amqp:connection:framing-error``."""

    def __init__(self, description: str) -> None:
        super().__init__("amqp:connection:framing-error", description)
