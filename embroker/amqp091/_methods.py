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

__all__ = [
    'DECODERS',
    'METHOD_CLASSES',
    'BasicAck',
    'BasicCancel',
    'BasicCancelOk',
    'BasicConsume',
    'BasicConsumeOk',
    'BasicDeliver',
    'BasicGet',
    'BasicGetEmpty',
    'BasicGetOk',
    'BasicNack',
    'BasicPublish',
    'BasicQos',
    'BasicQosOk',
    'BasicRecover',
    'BasicRecoverAsync',
    'BasicRecoverOk',
    'BasicReject',
    'BasicReturn',
    'ChannelClose',
    'ChannelCloseOk',
    'ChannelFlow',
    'ChannelFlowOk',
    'ChannelOpen',
    'ChannelOpenOk',
    'ConfirmSelect',
    'ConfirmSelectOk',
    'ConnectionBlocked',
    'ConnectionClose',
    'ConnectionCloseOk',
    'ConnectionOpen',
    'ConnectionOpenOk',
    'ConnectionSecure',
    'ConnectionSecureOk',
    'ConnectionStart',
    'ConnectionStartOk',
    'ConnectionTune',
    'ConnectionTuneOk',
    'ConnectionUnblocked',
    'ConnectionUpdateSecret',
    'ConnectionUpdateSecretOk',
    'ExchangeBind',
    'ExchangeBindOk',
    'ExchangeDeclare',
    'ExchangeDeclareOk',
    'ExchangeDelete',
    'ExchangeDeleteOk',
    'ExchangeUnbind',
    'ExchangeUnbindOk',
    'QueueBind',
    'QueueBindOk',
    'QueueDeclare',
    'QueueDeclareOk',
    'QueueDelete',
    'QueueDeleteOk',
    'QueuePurge',
    'QueuePurgeOk',
    'QueueUnbind',
    'QueueUnbindOk',
    'TxCommit',
    'TxCommitOk',
    'TxRollback',
    'TxRollbackOk',
    'TxSelect',
    'TxSelectOk',
]

_U32 = struct.Struct(">I")
_S_B = struct.Struct(">B")
_S_BB = struct.Struct(">BB")
_S_HB = struct.Struct(">HB")
_S_HH = struct.Struct(">HH")
_S_HHB = struct.Struct(">HHB")
_S_HHBB = struct.Struct(">HHBB")
_S_HHH = struct.Struct(">HHH")
_S_HHHIH = struct.Struct(">HHHIH")
_S_HHI = struct.Struct(">HHI")
_S_HHIHB = struct.Struct(">HHIHB")
_S_HHQB = struct.Struct(">HHQB")
_S_HIH = struct.Struct(">HIH")
_S_I = struct.Struct(">I")
_S_IHB = struct.Struct(">IHB")
_S_II = struct.Struct(">II")
_S_QB = struct.Struct(">QB")
_S_QBB = struct.Struct(">QBB")


@final
class ConnectionStart(Method):
    """``connection.start`` (10, 10): Start connection negotiation.

    Synchronous, answered by ``connection.start-ok``.

    Args:
        version_major: octet, default 0.
        version_minor: octet, default 9.
        server_properties: table, default empty.
        mechanisms: longstr, default 'PLAIN'.
        locales: longstr, default 'en_US'.
    """

    __slots__ = ('locales', 'mechanisms', 'server_properties', 'version_major', 'version_minor')
    __match_args__ = (
        'version_major',
        'version_minor',
        'server_properties',
        'mechanisms',
        'locales',
    )
    CLASS_ID = 10
    METHOD_ID = 10
    INDEX = 0x000A000A
    NAME = 'connection.start'
    SYNCHRONOUS = True
    HAS_CONTENT = False
    ARGUMENTS = _SPECS[0].arguments

    version_major: int
    version_minor: int
    server_properties: FieldTable
    mechanisms: str
    locales: str

    def __init__(
        self,
        version_major: int = 0,
        version_minor: int = 9,
        server_properties: FieldTable | None = None,
        mechanisms: str = 'PLAIN',
        locales: str = 'en_US',
    ) -> None:
        self.version_major = version_major
        self.version_minor = version_minor
        self.server_properties = {} if server_properties is None else server_properties
        self.mechanisms = mechanisms
        self.locales = locales

    def encode(self) -> bytes:
        try:
            mechanisms = self.mechanisms.encode("utf-8", "surrogateescape")
            locales = self.locales.encode("utf-8", "surrogateescape")
            return b"".join((
                _S_HHBB.pack(10, 10, self.version_major, self.version_minor),
                encode_table(self.server_properties),
                _U32.pack(len(mechanisms)),
                mechanisms,
                _U32.pack(len(locales)),
                locales,
            ))
        except (IndexError, TypeError, AttributeError, struct.error) as exc:
            raise encode_error(self, exc) from None


def _decode_connection_start(p: bytes) -> ConnectionStart:
    m = _new(ConnectionStart)
    try:
        m.version_major, m.version_minor = _S_BB.unpack_from(p, 4)
        o = 4 + 2
        m.server_properties, o = read_table(p, o)
        e = o + 4 + _U32.unpack_from(p, o)[0]
        m.mechanisms = p[o + 4:e].decode("utf-8", "surrogateescape")
        o = e
        e = o + 4 + _U32.unpack_from(p, o)[0]
        m.locales = p[o + 4:e].decode("utf-8", "surrogateescape")
        o = e
    except (IndexError, struct.error):
        raise truncated(ConnectionStart) from None
    except SyntaxErrorAMQP as exc:
        raise exc.with_method(10, 10) from None
    if o != len(p):
        raise bad_length(ConnectionStart, o, len(p))
    return m


@final
class ConnectionStartOk(Method):
    """``connection.start-ok`` (10, 11): Select security mechanism and locale.

    Asynchronous.

    Args:
        client_properties: table, default empty.
        mechanism: shortstr, default 'PLAIN'.
        response: longstr, default ''.
        locale: shortstr, default 'en_US'.
    """

    __slots__ = ('client_properties', 'locale', 'mechanism', 'response')
    __match_args__ = ('client_properties', 'mechanism', 'response', 'locale')
    CLASS_ID = 10
    METHOD_ID = 11
    INDEX = 0x000A000B
    NAME = 'connection.start-ok'
    SYNCHRONOUS = False
    HAS_CONTENT = False
    ARGUMENTS = _SPECS[1].arguments
    REPLIES = ()

    client_properties: FieldTable
    mechanism: str
    response: str
    locale: str

    def __init__(
        self,
        client_properties: FieldTable | None = None,
        mechanism: str = 'PLAIN',
        response: str = '',
        locale: str = 'en_US',
    ) -> None:
        self.client_properties = {} if client_properties is None else client_properties
        self.mechanism = mechanism
        self.response = response
        self.locale = locale

    def encode(self) -> bytes:
        try:
            mechanism = self.mechanism.encode("utf-8", "surrogateescape")
            response = self.response.encode("utf-8", "surrogateescape")
            locale = self.locale.encode("utf-8", "surrogateescape")
            return b"".join((
                b"\x00\x0a\x00\x0b",
                encode_table(self.client_properties),
                _LEN8[len(mechanism)],
                mechanism,
                _U32.pack(len(response)),
                response,
                _LEN8[len(locale)],
                locale,
            ))
        except (IndexError, TypeError, AttributeError, struct.error) as exc:
            raise encode_error(self, exc) from None


def _decode_connection_start_ok(p: bytes) -> ConnectionStartOk:
    m = _new(ConnectionStartOk)
    try:
        o = 4
        m.client_properties, o = read_table(p, o)
        e = o + 1 + p[o]
        try:
            m.mechanism = p[o + 1:e].decode("utf-8")
        except UnicodeDecodeError:
            m.mechanism = checked_shortstr(p[o + 1:e])
        o = e
        e = o + 4 + _U32.unpack_from(p, o)[0]
        m.response = p[o + 4:e].decode("utf-8", "surrogateescape")
        o = e
        e = o + 1 + p[o]
        try:
            m.locale = p[o + 1:e].decode("utf-8")
        except UnicodeDecodeError:
            m.locale = checked_shortstr(p[o + 1:e])
        o = e
    except (IndexError, struct.error):
        raise truncated(ConnectionStartOk) from None
    except SyntaxErrorAMQP as exc:
        raise exc.with_method(10, 11) from None
    if o != len(p):
        raise bad_length(ConnectionStartOk, o, len(p))
    return m


@final
class ConnectionSecure(Method):
    """``connection.secure`` (10, 20): Security mechanism challenge.

    Synchronous, answered by ``connection.secure-ok``.

    Args:
        challenge: longstr, default ''.
    """

    __slots__ = ('challenge',)
    __match_args__ = ('challenge',)
    CLASS_ID = 10
    METHOD_ID = 20
    INDEX = 0x000A0014
    NAME = 'connection.secure'
    SYNCHRONOUS = True
    HAS_CONTENT = False
    ARGUMENTS = _SPECS[2].arguments

    challenge: str

    def __init__(self, challenge: str = '') -> None:
        self.challenge = challenge

    def encode(self) -> bytes:
        try:
            challenge = self.challenge.encode("utf-8", "surrogateescape")
            return b"".join((b"\x00\x0a\x00\x14", _U32.pack(len(challenge)), challenge))
        except (IndexError, TypeError, AttributeError, struct.error) as exc:
            raise encode_error(self, exc) from None


def _decode_connection_secure(p: bytes) -> ConnectionSecure:
    m = _new(ConnectionSecure)
    try:
        o = 4
        e = o + 4 + _U32.unpack_from(p, o)[0]
        m.challenge = p[o + 4:e].decode("utf-8", "surrogateescape")
        o = e
    except (IndexError, struct.error):
        raise truncated(ConnectionSecure) from None
    if o != len(p):
        raise bad_length(ConnectionSecure, o, len(p))
    return m


@final
class ConnectionSecureOk(Method):
    """``connection.secure-ok`` (10, 21): Security mechanism response.

    Asynchronous.

    Args:
        response: longstr, default ''.
    """

    __slots__ = ('response',)
    __match_args__ = ('response',)
    CLASS_ID = 10
    METHOD_ID = 21
    INDEX = 0x000A0015
    NAME = 'connection.secure-ok'
    SYNCHRONOUS = False
    HAS_CONTENT = False
    ARGUMENTS = _SPECS[3].arguments
    REPLIES = ()

    response: str

    def __init__(self, response: str = '') -> None:
        self.response = response

    def encode(self) -> bytes:
        try:
            response = self.response.encode("utf-8", "surrogateescape")
            return b"".join((b"\x00\x0a\x00\x15", _U32.pack(len(response)), response))
        except (IndexError, TypeError, AttributeError, struct.error) as exc:
            raise encode_error(self, exc) from None


def _decode_connection_secure_ok(p: bytes) -> ConnectionSecureOk:
    m = _new(ConnectionSecureOk)
    try:
        o = 4
        e = o + 4 + _U32.unpack_from(p, o)[0]
        m.response = p[o + 4:e].decode("utf-8", "surrogateescape")
        o = e
    except (IndexError, struct.error):
        raise truncated(ConnectionSecureOk) from None
    if o != len(p):
        raise bad_length(ConnectionSecureOk, o, len(p))
    return m


@final
class ConnectionTune(Method):
    """``connection.tune`` (10, 30): Propose connection tuning parameters.

    Synchronous, answered by ``connection.tune-ok``.

    Args:
        channel_max: short, default 0.
        frame_max: long, default 0.
        heartbeat: short, default 0.
    """

    __slots__ = ('channel_max', 'frame_max', 'heartbeat')
    __match_args__ = ('channel_max', 'frame_max', 'heartbeat')
    CLASS_ID = 10
    METHOD_ID = 30
    INDEX = 0x000A001E
    NAME = 'connection.tune'
    SYNCHRONOUS = True
    HAS_CONTENT = False
    ARGUMENTS = _SPECS[4].arguments

    channel_max: int
    frame_max: int
    heartbeat: int

    def __init__(self, channel_max: int = 0, frame_max: int = 0, heartbeat: int = 0) -> None:
        self.channel_max = channel_max
        self.frame_max = frame_max
        self.heartbeat = heartbeat

    def encode(self) -> bytes:
        try:
            return _S_HHHIH.pack(10, 30, self.channel_max, self.frame_max, self.heartbeat)
        except (IndexError, TypeError, AttributeError, struct.error) as exc:
            raise encode_error(self, exc) from None


def _decode_connection_tune(p: bytes) -> ConnectionTune:
    m = _new(ConnectionTune)
    try:
        m.channel_max, m.frame_max, m.heartbeat = _S_HIH.unpack_from(p, 4)
        o = 4 + 8
    except (IndexError, struct.error):
        raise truncated(ConnectionTune) from None
    if o != len(p):
        raise bad_length(ConnectionTune, o, len(p))
    return m


@final
class ConnectionTuneOk(Method):
    """``connection.tune-ok`` (10, 31): Negotiate connection tuning parameters.

    Asynchronous.

    Args:
        channel_max: short, default 0.
        frame_max: long, default 0.
        heartbeat: short, default 0.
    """

    __slots__ = ('channel_max', 'frame_max', 'heartbeat')
    __match_args__ = ('channel_max', 'frame_max', 'heartbeat')
    CLASS_ID = 10
    METHOD_ID = 31
    INDEX = 0x000A001F
    NAME = 'connection.tune-ok'
    SYNCHRONOUS = False
    HAS_CONTENT = False
    ARGUMENTS = _SPECS[5].arguments
    REPLIES = ()

    channel_max: int
    frame_max: int
    heartbeat: int

    def __init__(self, channel_max: int = 0, frame_max: int = 0, heartbeat: int = 0) -> None:
        self.channel_max = channel_max
        self.frame_max = frame_max
        self.heartbeat = heartbeat

    def encode(self) -> bytes:
        try:
            return _S_HHHIH.pack(10, 31, self.channel_max, self.frame_max, self.heartbeat)
        except (IndexError, TypeError, AttributeError, struct.error) as exc:
            raise encode_error(self, exc) from None


def _decode_connection_tune_ok(p: bytes) -> ConnectionTuneOk:
    m = _new(ConnectionTuneOk)
    try:
        m.channel_max, m.frame_max, m.heartbeat = _S_HIH.unpack_from(p, 4)
        o = 4 + 8
    except (IndexError, struct.error):
        raise truncated(ConnectionTuneOk) from None
    if o != len(p):
        raise bad_length(ConnectionTuneOk, o, len(p))
    return m


@final
class ConnectionOpen(Method):
    """``connection.open`` (10, 40): Open connection to virtual host.

    Synchronous, answered by ``connection.open-ok``.

    Args:
        virtual_host: shortstr, default '/'.
        reserved_1: shortstr, default ''.
        reserved_2: bit, default False.
    """

    __slots__ = ('reserved_1', 'reserved_2', 'virtual_host')
    __match_args__ = ('virtual_host', 'reserved_1', 'reserved_2')
    CLASS_ID = 10
    METHOD_ID = 40
    INDEX = 0x000A0028
    NAME = 'connection.open'
    SYNCHRONOUS = True
    HAS_CONTENT = False
    ARGUMENTS = _SPECS[6].arguments

    virtual_host: str
    reserved_1: str
    reserved_2: bool

    def __init__(
        self,
        virtual_host: str = '/',
        reserved_1: str = '',
        reserved_2: bool = False,
    ) -> None:
        self.virtual_host = virtual_host
        self.reserved_1 = reserved_1
        self.reserved_2 = reserved_2

    def encode(self) -> bytes:
        try:
            virtual_host = self.virtual_host.encode("utf-8", "surrogateescape")
            reserved_1 = self.reserved_1.encode("utf-8", "surrogateescape")
            return b"".join((
                b"\x00\x0a\x00\x28",
                _LEN8[len(virtual_host)],
                virtual_host,
                _LEN8[len(reserved_1)],
                reserved_1,
                _LEN8[1 if self.reserved_2 else 0],
            ))
        except (IndexError, TypeError, AttributeError, struct.error) as exc:
            raise encode_error(self, exc) from None


def _decode_connection_open(p: bytes) -> ConnectionOpen:
    m = _new(ConnectionOpen)
    try:
        o = 4
        e = o + 1 + p[o]
        try:
            m.virtual_host = p[o + 1:e].decode("utf-8")
        except UnicodeDecodeError:
            m.virtual_host = checked_shortstr(p[o + 1:e])
        o = e
        e = o + 1 + p[o]
        try:
            m.reserved_1 = p[o + 1:e].decode("utf-8")
        except UnicodeDecodeError:
            m.reserved_1 = checked_shortstr(p[o + 1:e])
        o = e
        bits0 = p[o]
        o += 1
    except (IndexError, struct.error):
        raise truncated(ConnectionOpen) from None
    if o != len(p):
        raise bad_length(ConnectionOpen, o, len(p))
    m.reserved_2 = (bits0 & 1) != 0
    return m


@final
class ConnectionOpenOk(Method):
    """``connection.open-ok`` (10, 41): Signal that connection is ready.

    Asynchronous.

    Args:
        reserved_1: shortstr, default ''.
    """

    __slots__ = ('reserved_1',)
    __match_args__ = ('reserved_1',)
    CLASS_ID = 10
    METHOD_ID = 41
    INDEX = 0x000A0029
    NAME = 'connection.open-ok'
    SYNCHRONOUS = False
    HAS_CONTENT = False
    ARGUMENTS = _SPECS[7].arguments
    REPLIES = ()

    reserved_1: str

    def __init__(self, reserved_1: str = '') -> None:
        self.reserved_1 = reserved_1

    def encode(self) -> bytes:
        try:
            reserved_1 = self.reserved_1.encode("utf-8", "surrogateescape")
            return b"".join((b"\x00\x0a\x00\x29", _LEN8[len(reserved_1)], reserved_1))
        except (IndexError, TypeError, AttributeError, struct.error) as exc:
            raise encode_error(self, exc) from None


def _decode_connection_open_ok(p: bytes) -> ConnectionOpenOk:
    m = _new(ConnectionOpenOk)
    try:
        o = 4
        e = o + 1 + p[o]
        try:
            m.reserved_1 = p[o + 1:e].decode("utf-8")
        except UnicodeDecodeError:
            m.reserved_1 = checked_shortstr(p[o + 1:e])
        o = e
    except (IndexError, struct.error):
        raise truncated(ConnectionOpenOk) from None
    if o != len(p):
        raise bad_length(ConnectionOpenOk, o, len(p))
    return m


@final
class ConnectionClose(Method):
    """``connection.close`` (10, 50): Request a connection close.

    Synchronous, answered by ``connection.close-ok``.

    Args:
        reply_code: short, default 0.
        reply_text: shortstr, default ''.
        class_id: short, default 0.
        method_id: short, default 0.
    """

    __slots__ = ('class_id', 'method_id', 'reply_code', 'reply_text')
    __match_args__ = ('reply_code', 'reply_text', 'class_id', 'method_id')
    CLASS_ID = 10
    METHOD_ID = 50
    INDEX = 0x000A0032
    NAME = 'connection.close'
    SYNCHRONOUS = True
    HAS_CONTENT = False
    ARGUMENTS = _SPECS[8].arguments

    reply_code: int
    reply_text: str
    class_id: int
    method_id: int

    def __init__(
        self,
        reply_code: int = 0,
        reply_text: str = '',
        class_id: int = 0,
        method_id: int = 0,
    ) -> None:
        self.reply_code = reply_code
        self.reply_text = reply_text
        self.class_id = class_id
        self.method_id = method_id

    def encode(self) -> bytes:
        try:
            reply_text = self.reply_text.encode("utf-8", "surrogateescape")
            return b"".join((
                _S_HHH.pack(10, 50, self.reply_code),
                _LEN8[len(reply_text)],
                reply_text,
                _S_HH.pack(self.class_id, self.method_id),
            ))
        except (IndexError, TypeError, AttributeError, struct.error) as exc:
            raise encode_error(self, exc) from None


def _decode_connection_close(p: bytes) -> ConnectionClose:
    m = _new(ConnectionClose)
    try:
        m.reply_code, n = _S_HB.unpack_from(p, 4)
        o = 4 + 3
        e = o + n
        try:
            m.reply_text = p[o:e].decode("utf-8")
        except UnicodeDecodeError:
            m.reply_text = checked_shortstr(p[o:e])
        o = e
        m.class_id, m.method_id = _S_HH.unpack_from(p, o)
        o += 4
    except (IndexError, struct.error):
        raise truncated(ConnectionClose) from None
    if o != len(p):
        raise bad_length(ConnectionClose, o, len(p))
    return m


@final
class ConnectionCloseOk(Method):
    """``connection.close-ok`` (10, 51): Confirm a connection close.

    Asynchronous.
    """

    __slots__ = ()
    __match_args__ = ()
    CLASS_ID = 10
    METHOD_ID = 51
    INDEX = 0x000A0033
    NAME = 'connection.close-ok'
    SYNCHRONOUS = False
    HAS_CONTENT = False
    ARGUMENTS = _SPECS[9].arguments
    REPLIES = ()

    def encode(self) -> bytes:
        return b"\x00\x0a\x00\x33"


def _decode_connection_close_ok(p: bytes) -> ConnectionCloseOk:
    if len(p) != 4:
        raise bad_length(ConnectionCloseOk, 4, len(p))
    return _new(ConnectionCloseOk)


@final
class ConnectionBlocked(Method):
    """``connection.blocked`` (10, 60): Indicate that connection is blocked (RabbitMQ).

    Asynchronous.

    Args:
        reason: shortstr, default ''.
    """

    __slots__ = ('reason',)
    __match_args__ = ('reason',)
    CLASS_ID = 10
    METHOD_ID = 60
    INDEX = 0x000A003C
    NAME = 'connection.blocked'
    SYNCHRONOUS = False
    HAS_CONTENT = False
    ARGUMENTS = _SPECS[10].arguments
    REPLIES = ()

    reason: str

    def __init__(self, reason: str = '') -> None:
        self.reason = reason

    def encode(self) -> bytes:
        try:
            reason = self.reason.encode("utf-8", "surrogateescape")
            return b"".join((b"\x00\x0a\x00\x3c", _LEN8[len(reason)], reason))
        except (IndexError, TypeError, AttributeError, struct.error) as exc:
            raise encode_error(self, exc) from None


def _decode_connection_blocked(p: bytes) -> ConnectionBlocked:
    m = _new(ConnectionBlocked)
    try:
        o = 4
        e = o + 1 + p[o]
        try:
            m.reason = p[o + 1:e].decode("utf-8")
        except UnicodeDecodeError:
            m.reason = checked_shortstr(p[o + 1:e])
        o = e
    except (IndexError, struct.error):
        raise truncated(ConnectionBlocked) from None
    if o != len(p):
        raise bad_length(ConnectionBlocked, o, len(p))
    return m


@final
class ConnectionUnblocked(Method):
    """``connection.unblocked`` (10, 61): Indicate that connection is unblocked (RabbitMQ).

    Asynchronous.
    """

    __slots__ = ()
    __match_args__ = ()
    CLASS_ID = 10
    METHOD_ID = 61
    INDEX = 0x000A003D
    NAME = 'connection.unblocked'
    SYNCHRONOUS = False
    HAS_CONTENT = False
    ARGUMENTS = _SPECS[11].arguments
    REPLIES = ()

    def encode(self) -> bytes:
        return b"\x00\x0a\x00\x3d"


def _decode_connection_unblocked(p: bytes) -> ConnectionUnblocked:
    if len(p) != 4:
        raise bad_length(ConnectionUnblocked, 4, len(p))
    return _new(ConnectionUnblocked)


@final
class ConnectionUpdateSecret(Method):
    """``connection.update-secret`` (10, 70): Update secret (RabbitMQ).

    Synchronous, answered by ``connection.update-secret-ok``.

    Args:
        new_secret: longstr, default ''.
        reason: shortstr, default ''.
    """

    __slots__ = ('new_secret', 'reason')
    __match_args__ = ('new_secret', 'reason')
    CLASS_ID = 10
    METHOD_ID = 70
    INDEX = 0x000A0046
    NAME = 'connection.update-secret'
    SYNCHRONOUS = True
    HAS_CONTENT = False
    ARGUMENTS = _SPECS[12].arguments

    new_secret: str
    reason: str

    def __init__(self, new_secret: str = '', reason: str = '') -> None:
        self.new_secret = new_secret
        self.reason = reason

    def encode(self) -> bytes:
        try:
            new_secret = self.new_secret.encode("utf-8", "surrogateescape")
            reason = self.reason.encode("utf-8", "surrogateescape")
            return b"".join((
                b"\x00\x0a\x00\x46",
                _U32.pack(len(new_secret)),
                new_secret,
                _LEN8[len(reason)],
                reason,
            ))
        except (IndexError, TypeError, AttributeError, struct.error) as exc:
            raise encode_error(self, exc) from None


def _decode_connection_update_secret(p: bytes) -> ConnectionUpdateSecret:
    m = _new(ConnectionUpdateSecret)
    try:
        o = 4
        e = o + 4 + _U32.unpack_from(p, o)[0]
        m.new_secret = p[o + 4:e].decode("utf-8", "surrogateescape")
        o = e
        e = o + 1 + p[o]
        try:
            m.reason = p[o + 1:e].decode("utf-8")
        except UnicodeDecodeError:
            m.reason = checked_shortstr(p[o + 1:e])
        o = e
    except (IndexError, struct.error):
        raise truncated(ConnectionUpdateSecret) from None
    if o != len(p):
        raise bad_length(ConnectionUpdateSecret, o, len(p))
    return m


@final
class ConnectionUpdateSecretOk(Method):
    """``connection.update-secret-ok`` (10, 71): Update secret response (RabbitMQ).

    Asynchronous.
    """

    __slots__ = ()
    __match_args__ = ()
    CLASS_ID = 10
    METHOD_ID = 71
    INDEX = 0x000A0047
    NAME = 'connection.update-secret-ok'
    SYNCHRONOUS = False
    HAS_CONTENT = False
    ARGUMENTS = _SPECS[13].arguments
    REPLIES = ()

    def encode(self) -> bytes:
        return b"\x00\x0a\x00\x47"


def _decode_connection_update_secret_ok(p: bytes) -> ConnectionUpdateSecretOk:
    if len(p) != 4:
        raise bad_length(ConnectionUpdateSecretOk, 4, len(p))
    return _new(ConnectionUpdateSecretOk)


@final
class ChannelOpen(Method):
    """``channel.open`` (20, 10): Open a channel for use.

    Synchronous, answered by ``channel.open-ok``.

    Args:
        reserved_1: shortstr, default ''.
    """

    __slots__ = ('reserved_1',)
    __match_args__ = ('reserved_1',)
    CLASS_ID = 20
    METHOD_ID = 10
    INDEX = 0x0014000A
    NAME = 'channel.open'
    SYNCHRONOUS = True
    HAS_CONTENT = False
    ARGUMENTS = _SPECS[14].arguments

    reserved_1: str

    def __init__(self, reserved_1: str = '') -> None:
        self.reserved_1 = reserved_1

    def encode(self) -> bytes:
        try:
            reserved_1 = self.reserved_1.encode("utf-8", "surrogateescape")
            return b"".join((b"\x00\x14\x00\x0a", _LEN8[len(reserved_1)], reserved_1))
        except (IndexError, TypeError, AttributeError, struct.error) as exc:
            raise encode_error(self, exc) from None


def _decode_channel_open(p: bytes) -> ChannelOpen:
    m = _new(ChannelOpen)
    try:
        o = 4
        e = o + 1 + p[o]
        try:
            m.reserved_1 = p[o + 1:e].decode("utf-8")
        except UnicodeDecodeError:
            m.reserved_1 = checked_shortstr(p[o + 1:e])
        o = e
    except (IndexError, struct.error):
        raise truncated(ChannelOpen) from None
    if o != len(p):
        raise bad_length(ChannelOpen, o, len(p))
    return m


@final
class ChannelOpenOk(Method):
    """``channel.open-ok`` (20, 11): Signal that the channel is ready.

    Asynchronous.

    Args:
        reserved_1: longstr, default ''.
    """

    __slots__ = ('reserved_1',)
    __match_args__ = ('reserved_1',)
    CLASS_ID = 20
    METHOD_ID = 11
    INDEX = 0x0014000B
    NAME = 'channel.open-ok'
    SYNCHRONOUS = False
    HAS_CONTENT = False
    ARGUMENTS = _SPECS[15].arguments
    REPLIES = ()

    reserved_1: str

    def __init__(self, reserved_1: str = '') -> None:
        self.reserved_1 = reserved_1

    def encode(self) -> bytes:
        try:
            reserved_1 = self.reserved_1.encode("utf-8", "surrogateescape")
            return b"".join((b"\x00\x14\x00\x0b", _U32.pack(len(reserved_1)), reserved_1))
        except (IndexError, TypeError, AttributeError, struct.error) as exc:
            raise encode_error(self, exc) from None


def _decode_channel_open_ok(p: bytes) -> ChannelOpenOk:
    m = _new(ChannelOpenOk)
    try:
        o = 4
        e = o + 4 + _U32.unpack_from(p, o)[0]
        m.reserved_1 = p[o + 4:e].decode("utf-8", "surrogateescape")
        o = e
    except (IndexError, struct.error):
        raise truncated(ChannelOpenOk) from None
    if o != len(p):
        raise bad_length(ChannelOpenOk, o, len(p))
    return m


@final
class ChannelFlow(Method):
    """``channel.flow`` (20, 20): Enable/disable flow from peer.

    Synchronous, answered by ``channel.flow-ok``.

    Args:
        active: bit, default False.
    """

    __slots__ = ('active',)
    __match_args__ = ('active',)
    CLASS_ID = 20
    METHOD_ID = 20
    INDEX = 0x00140014
    NAME = 'channel.flow'
    SYNCHRONOUS = True
    HAS_CONTENT = False
    ARGUMENTS = _SPECS[16].arguments

    active: bool

    def __init__(self, active: bool = False) -> None:
        self.active = active

    def encode(self) -> bytes:
        try:
            return _S_HHB.pack(20, 20, 1 if self.active else 0)
        except (IndexError, TypeError, AttributeError, struct.error) as exc:
            raise encode_error(self, exc) from None


def _decode_channel_flow(p: bytes) -> ChannelFlow:
    m = _new(ChannelFlow)
    try:
        bits0 = p[4]
        o = 4 + 1
    except (IndexError, struct.error):
        raise truncated(ChannelFlow) from None
    if o != len(p):
        raise bad_length(ChannelFlow, o, len(p))
    m.active = (bits0 & 1) != 0
    return m


@final
class ChannelFlowOk(Method):
    """``channel.flow-ok`` (20, 21): Confirm a flow method.

    Asynchronous.

    Args:
        active: bit, default False.
    """

    __slots__ = ('active',)
    __match_args__ = ('active',)
    CLASS_ID = 20
    METHOD_ID = 21
    INDEX = 0x00140015
    NAME = 'channel.flow-ok'
    SYNCHRONOUS = False
    HAS_CONTENT = False
    ARGUMENTS = _SPECS[17].arguments
    REPLIES = ()

    active: bool

    def __init__(self, active: bool = False) -> None:
        self.active = active

    def encode(self) -> bytes:
        try:
            return _S_HHB.pack(20, 21, 1 if self.active else 0)
        except (IndexError, TypeError, AttributeError, struct.error) as exc:
            raise encode_error(self, exc) from None


def _decode_channel_flow_ok(p: bytes) -> ChannelFlowOk:
    m = _new(ChannelFlowOk)
    try:
        bits0 = p[4]
        o = 4 + 1
    except (IndexError, struct.error):
        raise truncated(ChannelFlowOk) from None
    if o != len(p):
        raise bad_length(ChannelFlowOk, o, len(p))
    m.active = (bits0 & 1) != 0
    return m


@final
class ChannelClose(Method):
    """``channel.close`` (20, 40): Request a channel close.

    Synchronous, answered by ``channel.close-ok``.

    Args:
        reply_code: short, default 0.
        reply_text: shortstr, default ''.
        class_id: short, default 0.
        method_id: short, default 0.
    """

    __slots__ = ('class_id', 'method_id', 'reply_code', 'reply_text')
    __match_args__ = ('reply_code', 'reply_text', 'class_id', 'method_id')
    CLASS_ID = 20
    METHOD_ID = 40
    INDEX = 0x00140028
    NAME = 'channel.close'
    SYNCHRONOUS = True
    HAS_CONTENT = False
    ARGUMENTS = _SPECS[18].arguments

    reply_code: int
    reply_text: str
    class_id: int
    method_id: int

    def __init__(
        self,
        reply_code: int = 0,
        reply_text: str = '',
        class_id: int = 0,
        method_id: int = 0,
    ) -> None:
        self.reply_code = reply_code
        self.reply_text = reply_text
        self.class_id = class_id
        self.method_id = method_id

    def encode(self) -> bytes:
        try:
            reply_text = self.reply_text.encode("utf-8", "surrogateescape")
            return b"".join((
                _S_HHH.pack(20, 40, self.reply_code),
                _LEN8[len(reply_text)],
                reply_text,
                _S_HH.pack(self.class_id, self.method_id),
            ))
        except (IndexError, TypeError, AttributeError, struct.error) as exc:
            raise encode_error(self, exc) from None


def _decode_channel_close(p: bytes) -> ChannelClose:
    m = _new(ChannelClose)
    try:
        m.reply_code, n = _S_HB.unpack_from(p, 4)
        o = 4 + 3
        e = o + n
        try:
            m.reply_text = p[o:e].decode("utf-8")
        except UnicodeDecodeError:
            m.reply_text = checked_shortstr(p[o:e])
        o = e
        m.class_id, m.method_id = _S_HH.unpack_from(p, o)
        o += 4
    except (IndexError, struct.error):
        raise truncated(ChannelClose) from None
    if o != len(p):
        raise bad_length(ChannelClose, o, len(p))
    return m


@final
class ChannelCloseOk(Method):
    """``channel.close-ok`` (20, 41): Confirm a channel close.

    Asynchronous.
    """

    __slots__ = ()
    __match_args__ = ()
    CLASS_ID = 20
    METHOD_ID = 41
    INDEX = 0x00140029
    NAME = 'channel.close-ok'
    SYNCHRONOUS = False
    HAS_CONTENT = False
    ARGUMENTS = _SPECS[19].arguments
    REPLIES = ()

    def encode(self) -> bytes:
        return b"\x00\x14\x00\x29"


def _decode_channel_close_ok(p: bytes) -> ChannelCloseOk:
    if len(p) != 4:
        raise bad_length(ChannelCloseOk, 4, len(p))
    return _new(ChannelCloseOk)


@final
class ExchangeDeclare(Method):
    """``exchange.declare`` (40, 10): Verify exchange exists, create if needed.

    Synchronous, answered by ``exchange.declare-ok``.

    Args:
        reserved_1: short, default 0.
        exchange: shortstr, default ''.
        type: shortstr, default 'direct'.
        passive: bit, default False.
        durable: bit, default False.
        auto_delete: bit, default False.
        internal: bit, default False.
        no_wait: bit, default False.
        arguments: table, default empty.
    """

    __slots__ = (
        'arguments',
        'auto_delete',
        'durable',
        'exchange',
        'internal',
        'no_wait',
        'passive',
        'reserved_1',
        'type',
    )
    __match_args__ = (
        'reserved_1',
        'exchange',
        'type',
        'passive',
        'durable',
        'auto_delete',
        'internal',
        'no_wait',
        'arguments',
    )
    CLASS_ID = 40
    METHOD_ID = 10
    INDEX = 0x0028000A
    NAME = 'exchange.declare'
    SYNCHRONOUS = True
    HAS_CONTENT = False
    ARGUMENTS = _SPECS[20].arguments

    reserved_1: int
    exchange: str
    type: str
    passive: bool
    durable: bool
    auto_delete: bool
    internal: bool
    no_wait: bool
    arguments: FieldTable

    def __init__(
        self,
        reserved_1: int = 0,
        exchange: str = '',
        type: str = 'direct',
        passive: bool = False,
        durable: bool = False,
        auto_delete: bool = False,
        internal: bool = False,
        no_wait: bool = False,
        arguments: FieldTable | None = None,
    ) -> None:
        self.reserved_1 = reserved_1
        self.exchange = exchange
        self.type = type
        self.passive = passive
        self.durable = durable
        self.auto_delete = auto_delete
        self.internal = internal
        self.no_wait = no_wait
        self.arguments = {} if arguments is None else arguments

    def encode(self) -> bytes:
        try:
            exchange = self.exchange.encode("utf-8", "surrogateescape")
            type = self.type.encode("utf-8", "surrogateescape")
            bits2 = (
                (1 if self.passive else 0) |
                (2 if self.durable else 0) |
                (4 if self.auto_delete else 0) |
                (8 if self.internal else 0) |
                (16 if self.no_wait else 0)
            )
            return b"".join((
                _S_HHH.pack(40, 10, self.reserved_1),
                _LEN8[len(exchange)],
                exchange,
                _LEN8[len(type)],
                type,
                _LEN8[bits2],
                encode_table(self.arguments),
            ))
        except (IndexError, TypeError, AttributeError, struct.error) as exc:
            raise encode_error(self, exc) from None


def _decode_exchange_declare(p: bytes) -> ExchangeDeclare:
    m = _new(ExchangeDeclare)
    try:
        m.reserved_1, n = _S_HB.unpack_from(p, 4)
        o = 4 + 3
        e = o + n
        try:
            m.exchange = p[o:e].decode("utf-8")
        except UnicodeDecodeError:
            m.exchange = checked_shortstr(p[o:e])
        o = e
        e = o + 1 + p[o]
        try:
            m.type = p[o + 1:e].decode("utf-8")
        except UnicodeDecodeError:
            m.type = checked_shortstr(p[o + 1:e])
        o = e
        bits0 = p[o]
        o += 1
        m.arguments, o = read_table(p, o)
    except (IndexError, struct.error):
        raise truncated(ExchangeDeclare) from None
    except SyntaxErrorAMQP as exc:
        raise exc.with_method(40, 10) from None
    if o != len(p):
        raise bad_length(ExchangeDeclare, o, len(p))
    m.passive = (bits0 & 1) != 0
    m.durable = (bits0 & 2) != 0
    m.auto_delete = (bits0 & 4) != 0
    m.internal = (bits0 & 8) != 0
    m.no_wait = (bits0 & 16) != 0
    return m


@final
class ExchangeDeclareOk(Method):
    """``exchange.declare-ok`` (40, 11): Confirm exchange declaration.

    Asynchronous.
    """

    __slots__ = ()
    __match_args__ = ()
    CLASS_ID = 40
    METHOD_ID = 11
    INDEX = 0x0028000B
    NAME = 'exchange.declare-ok'
    SYNCHRONOUS = False
    HAS_CONTENT = False
    ARGUMENTS = _SPECS[21].arguments
    REPLIES = ()

    def encode(self) -> bytes:
        return b"\x00\x28\x00\x0b"


def _decode_exchange_declare_ok(p: bytes) -> ExchangeDeclareOk:
    if len(p) != 4:
        raise bad_length(ExchangeDeclareOk, 4, len(p))
    return _new(ExchangeDeclareOk)


@final
class ExchangeDelete(Method):
    """``exchange.delete`` (40, 20): Delete an exchange.

    Synchronous, answered by ``exchange.delete-ok``.

    Args:
        reserved_1: short, default 0.
        exchange: shortstr, default ''.
        if_unused: bit, default False.
        no_wait: bit, default False.
    """

    __slots__ = ('exchange', 'if_unused', 'no_wait', 'reserved_1')
    __match_args__ = ('reserved_1', 'exchange', 'if_unused', 'no_wait')
    CLASS_ID = 40
    METHOD_ID = 20
    INDEX = 0x00280014
    NAME = 'exchange.delete'
    SYNCHRONOUS = True
    HAS_CONTENT = False
    ARGUMENTS = _SPECS[22].arguments

    reserved_1: int
    exchange: str
    if_unused: bool
    no_wait: bool

    def __init__(
        self,
        reserved_1: int = 0,
        exchange: str = '',
        if_unused: bool = False,
        no_wait: bool = False,
    ) -> None:
        self.reserved_1 = reserved_1
        self.exchange = exchange
        self.if_unused = if_unused
        self.no_wait = no_wait

    def encode(self) -> bytes:
        try:
            exchange = self.exchange.encode("utf-8", "surrogateescape")
            bits1 = (1 if self.if_unused else 0) | (2 if self.no_wait else 0)
            return b"".join((
                _S_HHH.pack(40, 20, self.reserved_1),
                _LEN8[len(exchange)],
                exchange,
                _LEN8[bits1],
            ))
        except (IndexError, TypeError, AttributeError, struct.error) as exc:
            raise encode_error(self, exc) from None


def _decode_exchange_delete(p: bytes) -> ExchangeDelete:
    m = _new(ExchangeDelete)
    try:
        m.reserved_1, n = _S_HB.unpack_from(p, 4)
        o = 4 + 3
        e = o + n
        try:
            m.exchange = p[o:e].decode("utf-8")
        except UnicodeDecodeError:
            m.exchange = checked_shortstr(p[o:e])
        o = e
        bits0 = p[o]
        o += 1
    except (IndexError, struct.error):
        raise truncated(ExchangeDelete) from None
    if o != len(p):
        raise bad_length(ExchangeDelete, o, len(p))
    m.if_unused = (bits0 & 1) != 0
    m.no_wait = (bits0 & 2) != 0
    return m


@final
class ExchangeDeleteOk(Method):
    """``exchange.delete-ok`` (40, 21): Confirm deletion of an exchange.

    Asynchronous.
    """

    __slots__ = ()
    __match_args__ = ()
    CLASS_ID = 40
    METHOD_ID = 21
    INDEX = 0x00280015
    NAME = 'exchange.delete-ok'
    SYNCHRONOUS = False
    HAS_CONTENT = False
    ARGUMENTS = _SPECS[23].arguments
    REPLIES = ()

    def encode(self) -> bytes:
        return b"\x00\x28\x00\x15"


def _decode_exchange_delete_ok(p: bytes) -> ExchangeDeleteOk:
    if len(p) != 4:
        raise bad_length(ExchangeDeleteOk, 4, len(p))
    return _new(ExchangeDeleteOk)


@final
class ExchangeBind(Method):
    """``exchange.bind`` (40, 30): Bind exchange to an exchange (RabbitMQ).

    Synchronous, answered by ``exchange.bind-ok``.

    Args:
        reserved_1: short, default 0.
        destination: shortstr, default ''.
        source: shortstr, default ''.
        routing_key: shortstr, default ''.
        no_wait: bit, default False.
        arguments: table, default empty.
    """

    __slots__ = ('arguments', 'destination', 'no_wait', 'reserved_1', 'routing_key', 'source')
    __match_args__ = ('reserved_1', 'destination', 'source', 'routing_key', 'no_wait', 'arguments')
    CLASS_ID = 40
    METHOD_ID = 30
    INDEX = 0x0028001E
    NAME = 'exchange.bind'
    SYNCHRONOUS = True
    HAS_CONTENT = False
    ARGUMENTS = _SPECS[24].arguments

    reserved_1: int
    destination: str
    source: str
    routing_key: str
    no_wait: bool
    arguments: FieldTable

    def __init__(
        self,
        reserved_1: int = 0,
        destination: str = '',
        source: str = '',
        routing_key: str = '',
        no_wait: bool = False,
        arguments: FieldTable | None = None,
    ) -> None:
        self.reserved_1 = reserved_1
        self.destination = destination
        self.source = source
        self.routing_key = routing_key
        self.no_wait = no_wait
        self.arguments = {} if arguments is None else arguments

    def encode(self) -> bytes:
        try:
            destination = self.destination.encode("utf-8", "surrogateescape")
            source = self.source.encode("utf-8", "surrogateescape")
            routing_key = self.routing_key.encode("utf-8", "surrogateescape")
            return b"".join((
                _S_HHH.pack(40, 30, self.reserved_1),
                _LEN8[len(destination)],
                destination,
                _LEN8[len(source)],
                source,
                _LEN8[len(routing_key)],
                routing_key,
                _LEN8[1 if self.no_wait else 0],
                encode_table(self.arguments),
            ))
        except (IndexError, TypeError, AttributeError, struct.error) as exc:
            raise encode_error(self, exc) from None


def _decode_exchange_bind(p: bytes) -> ExchangeBind:
    m = _new(ExchangeBind)
    try:
        m.reserved_1, n = _S_HB.unpack_from(p, 4)
        o = 4 + 3
        e = o + n
        try:
            m.destination = p[o:e].decode("utf-8")
        except UnicodeDecodeError:
            m.destination = checked_shortstr(p[o:e])
        o = e
        e = o + 1 + p[o]
        try:
            m.source = p[o + 1:e].decode("utf-8")
        except UnicodeDecodeError:
            m.source = checked_shortstr(p[o + 1:e])
        o = e
        e = o + 1 + p[o]
        try:
            m.routing_key = p[o + 1:e].decode("utf-8")
        except UnicodeDecodeError:
            m.routing_key = checked_shortstr(p[o + 1:e])
        o = e
        bits0 = p[o]
        o += 1
        m.arguments, o = read_table(p, o)
    except (IndexError, struct.error):
        raise truncated(ExchangeBind) from None
    except SyntaxErrorAMQP as exc:
        raise exc.with_method(40, 30) from None
    if o != len(p):
        raise bad_length(ExchangeBind, o, len(p))
    m.no_wait = (bits0 & 1) != 0
    return m


@final
class ExchangeBindOk(Method):
    """``exchange.bind-ok`` (40, 31): Confirm bind successful (RabbitMQ).

    Asynchronous.
    """

    __slots__ = ()
    __match_args__ = ()
    CLASS_ID = 40
    METHOD_ID = 31
    INDEX = 0x0028001F
    NAME = 'exchange.bind-ok'
    SYNCHRONOUS = False
    HAS_CONTENT = False
    ARGUMENTS = _SPECS[25].arguments
    REPLIES = ()

    def encode(self) -> bytes:
        return b"\x00\x28\x00\x1f"


def _decode_exchange_bind_ok(p: bytes) -> ExchangeBindOk:
    if len(p) != 4:
        raise bad_length(ExchangeBindOk, 4, len(p))
    return _new(ExchangeBindOk)


@final
class ExchangeUnbind(Method):
    """``exchange.unbind`` (40, 40): Unbind an exchange from an exchange (RabbitMQ).

    Synchronous, answered by ``exchange.unbind-ok``.

    Args:
        reserved_1: short, default 0.
        destination: shortstr, default ''.
        source: shortstr, default ''.
        routing_key: shortstr, default ''.
        no_wait: bit, default False.
        arguments: table, default empty.
    """

    __slots__ = ('arguments', 'destination', 'no_wait', 'reserved_1', 'routing_key', 'source')
    __match_args__ = ('reserved_1', 'destination', 'source', 'routing_key', 'no_wait', 'arguments')
    CLASS_ID = 40
    METHOD_ID = 40
    INDEX = 0x00280028
    NAME = 'exchange.unbind'
    SYNCHRONOUS = True
    HAS_CONTENT = False
    ARGUMENTS = _SPECS[26].arguments

    reserved_1: int
    destination: str
    source: str
    routing_key: str
    no_wait: bool
    arguments: FieldTable

    def __init__(
        self,
        reserved_1: int = 0,
        destination: str = '',
        source: str = '',
        routing_key: str = '',
        no_wait: bool = False,
        arguments: FieldTable | None = None,
    ) -> None:
        self.reserved_1 = reserved_1
        self.destination = destination
        self.source = source
        self.routing_key = routing_key
        self.no_wait = no_wait
        self.arguments = {} if arguments is None else arguments

    def encode(self) -> bytes:
        try:
            destination = self.destination.encode("utf-8", "surrogateescape")
            source = self.source.encode("utf-8", "surrogateescape")
            routing_key = self.routing_key.encode("utf-8", "surrogateescape")
            return b"".join((
                _S_HHH.pack(40, 40, self.reserved_1),
                _LEN8[len(destination)],
                destination,
                _LEN8[len(source)],
                source,
                _LEN8[len(routing_key)],
                routing_key,
                _LEN8[1 if self.no_wait else 0],
                encode_table(self.arguments),
            ))
        except (IndexError, TypeError, AttributeError, struct.error) as exc:
            raise encode_error(self, exc) from None


def _decode_exchange_unbind(p: bytes) -> ExchangeUnbind:
    m = _new(ExchangeUnbind)
    try:
        m.reserved_1, n = _S_HB.unpack_from(p, 4)
        o = 4 + 3
        e = o + n
        try:
            m.destination = p[o:e].decode("utf-8")
        except UnicodeDecodeError:
            m.destination = checked_shortstr(p[o:e])
        o = e
        e = o + 1 + p[o]
        try:
            m.source = p[o + 1:e].decode("utf-8")
        except UnicodeDecodeError:
            m.source = checked_shortstr(p[o + 1:e])
        o = e
        e = o + 1 + p[o]
        try:
            m.routing_key = p[o + 1:e].decode("utf-8")
        except UnicodeDecodeError:
            m.routing_key = checked_shortstr(p[o + 1:e])
        o = e
        bits0 = p[o]
        o += 1
        m.arguments, o = read_table(p, o)
    except (IndexError, struct.error):
        raise truncated(ExchangeUnbind) from None
    except SyntaxErrorAMQP as exc:
        raise exc.with_method(40, 40) from None
    if o != len(p):
        raise bad_length(ExchangeUnbind, o, len(p))
    m.no_wait = (bits0 & 1) != 0
    return m


@final
class ExchangeUnbindOk(Method):
    """``exchange.unbind-ok`` (40, 51): Confirm unbind successful (RabbitMQ).

    Asynchronous.
    """

    __slots__ = ()
    __match_args__ = ()
    CLASS_ID = 40
    METHOD_ID = 51
    INDEX = 0x00280033
    NAME = 'exchange.unbind-ok'
    SYNCHRONOUS = False
    HAS_CONTENT = False
    ARGUMENTS = _SPECS[27].arguments
    REPLIES = ()

    def encode(self) -> bytes:
        return b"\x00\x28\x00\x33"


def _decode_exchange_unbind_ok(p: bytes) -> ExchangeUnbindOk:
    if len(p) != 4:
        raise bad_length(ExchangeUnbindOk, 4, len(p))
    return _new(ExchangeUnbindOk)


@final
class QueueDeclare(Method):
    """``queue.declare`` (50, 10): Declare queue, create if needed.

    Synchronous, answered by ``queue.declare-ok``.

    Args:
        reserved_1: short, default 0.
        queue: shortstr, default ''.
        passive: bit, default False.
        durable: bit, default False.
        exclusive: bit, default False.
        auto_delete: bit, default False.
        no_wait: bit, default False.
        arguments: table, default empty.
    """

    __slots__ = (
        'arguments',
        'auto_delete',
        'durable',
        'exclusive',
        'no_wait',
        'passive',
        'queue',
        'reserved_1',
    )
    __match_args__ = (
        'reserved_1',
        'queue',
        'passive',
        'durable',
        'exclusive',
        'auto_delete',
        'no_wait',
        'arguments',
    )
    CLASS_ID = 50
    METHOD_ID = 10
    INDEX = 0x0032000A
    NAME = 'queue.declare'
    SYNCHRONOUS = True
    HAS_CONTENT = False
    ARGUMENTS = _SPECS[28].arguments

    reserved_1: int
    queue: str
    passive: bool
    durable: bool
    exclusive: bool
    auto_delete: bool
    no_wait: bool
    arguments: FieldTable

    def __init__(
        self,
        reserved_1: int = 0,
        queue: str = '',
        passive: bool = False,
        durable: bool = False,
        exclusive: bool = False,
        auto_delete: bool = False,
        no_wait: bool = False,
        arguments: FieldTable | None = None,
    ) -> None:
        self.reserved_1 = reserved_1
        self.queue = queue
        self.passive = passive
        self.durable = durable
        self.exclusive = exclusive
        self.auto_delete = auto_delete
        self.no_wait = no_wait
        self.arguments = {} if arguments is None else arguments

    def encode(self) -> bytes:
        try:
            queue = self.queue.encode("utf-8", "surrogateescape")
            bits1 = (
                (1 if self.passive else 0) |
                (2 if self.durable else 0) |
                (4 if self.exclusive else 0) |
                (8 if self.auto_delete else 0) |
                (16 if self.no_wait else 0)
            )
            return b"".join((
                _S_HHH.pack(50, 10, self.reserved_1),
                _LEN8[len(queue)],
                queue,
                _LEN8[bits1],
                encode_table(self.arguments),
            ))
        except (IndexError, TypeError, AttributeError, struct.error) as exc:
            raise encode_error(self, exc) from None


def _decode_queue_declare(p: bytes) -> QueueDeclare:
    m = _new(QueueDeclare)
    try:
        m.reserved_1, n = _S_HB.unpack_from(p, 4)
        o = 4 + 3
        e = o + n
        try:
            m.queue = p[o:e].decode("utf-8")
        except UnicodeDecodeError:
            m.queue = checked_shortstr(p[o:e])
        o = e
        bits0 = p[o]
        o += 1
        m.arguments, o = read_table(p, o)
    except (IndexError, struct.error):
        raise truncated(QueueDeclare) from None
    except SyntaxErrorAMQP as exc:
        raise exc.with_method(50, 10) from None
    if o != len(p):
        raise bad_length(QueueDeclare, o, len(p))
    m.passive = (bits0 & 1) != 0
    m.durable = (bits0 & 2) != 0
    m.exclusive = (bits0 & 4) != 0
    m.auto_delete = (bits0 & 8) != 0
    m.no_wait = (bits0 & 16) != 0
    return m


@final
class QueueDeclareOk(Method):
    """``queue.declare-ok`` (50, 11): Confirms a queue definition.

    Asynchronous.

    Args:
        queue: shortstr, default ''.
        message_count: long, default 0.
        consumer_count: long, default 0.
    """

    __slots__ = ('consumer_count', 'message_count', 'queue')
    __match_args__ = ('queue', 'message_count', 'consumer_count')
    CLASS_ID = 50
    METHOD_ID = 11
    INDEX = 0x0032000B
    NAME = 'queue.declare-ok'
    SYNCHRONOUS = False
    HAS_CONTENT = False
    ARGUMENTS = _SPECS[29].arguments
    REPLIES = ()

    queue: str
    message_count: int
    consumer_count: int

    def __init__(self, queue: str = '', message_count: int = 0, consumer_count: int = 0) -> None:
        self.queue = queue
        self.message_count = message_count
        self.consumer_count = consumer_count

    def encode(self) -> bytes:
        try:
            queue = self.queue.encode("utf-8", "surrogateescape")
            return b"".join((
                b"\x00\x32\x00\x0b",
                _LEN8[len(queue)],
                queue,
                _S_II.pack(self.message_count, self.consumer_count),
            ))
        except (IndexError, TypeError, AttributeError, struct.error) as exc:
            raise encode_error(self, exc) from None


def _decode_queue_declare_ok(p: bytes) -> QueueDeclareOk:
    m = _new(QueueDeclareOk)
    try:
        o = 4
        e = o + 1 + p[o]
        try:
            m.queue = p[o + 1:e].decode("utf-8")
        except UnicodeDecodeError:
            m.queue = checked_shortstr(p[o + 1:e])
        o = e
        m.message_count, m.consumer_count = _S_II.unpack_from(p, o)
        o += 8
    except (IndexError, struct.error):
        raise truncated(QueueDeclareOk) from None
    if o != len(p):
        raise bad_length(QueueDeclareOk, o, len(p))
    return m


@final
class QueueBind(Method):
    """``queue.bind`` (50, 20): Bind queue to an exchange.

    Synchronous, answered by ``queue.bind-ok``.

    Args:
        reserved_1: short, default 0.
        queue: shortstr, default ''.
        exchange: shortstr, default ''.
        routing_key: shortstr, default ''.
        no_wait: bit, default False.
        arguments: table, default empty.
    """

    __slots__ = ('arguments', 'exchange', 'no_wait', 'queue', 'reserved_1', 'routing_key')
    __match_args__ = ('reserved_1', 'queue', 'exchange', 'routing_key', 'no_wait', 'arguments')
    CLASS_ID = 50
    METHOD_ID = 20
    INDEX = 0x00320014
    NAME = 'queue.bind'
    SYNCHRONOUS = True
    HAS_CONTENT = False
    ARGUMENTS = _SPECS[30].arguments

    reserved_1: int
    queue: str
    exchange: str
    routing_key: str
    no_wait: bool
    arguments: FieldTable

    def __init__(
        self,
        reserved_1: int = 0,
        queue: str = '',
        exchange: str = '',
        routing_key: str = '',
        no_wait: bool = False,
        arguments: FieldTable | None = None,
    ) -> None:
        self.reserved_1 = reserved_1
        self.queue = queue
        self.exchange = exchange
        self.routing_key = routing_key
        self.no_wait = no_wait
        self.arguments = {} if arguments is None else arguments

    def encode(self) -> bytes:
        try:
            queue = self.queue.encode("utf-8", "surrogateescape")
            exchange = self.exchange.encode("utf-8", "surrogateescape")
            routing_key = self.routing_key.encode("utf-8", "surrogateescape")
            return b"".join((
                _S_HHH.pack(50, 20, self.reserved_1),
                _LEN8[len(queue)],
                queue,
                _LEN8[len(exchange)],
                exchange,
                _LEN8[len(routing_key)],
                routing_key,
                _LEN8[1 if self.no_wait else 0],
                encode_table(self.arguments),
            ))
        except (IndexError, TypeError, AttributeError, struct.error) as exc:
            raise encode_error(self, exc) from None


def _decode_queue_bind(p: bytes) -> QueueBind:
    m = _new(QueueBind)
    try:
        m.reserved_1, n = _S_HB.unpack_from(p, 4)
        o = 4 + 3
        e = o + n
        try:
            m.queue = p[o:e].decode("utf-8")
        except UnicodeDecodeError:
            m.queue = checked_shortstr(p[o:e])
        o = e
        e = o + 1 + p[o]
        try:
            m.exchange = p[o + 1:e].decode("utf-8")
        except UnicodeDecodeError:
            m.exchange = checked_shortstr(p[o + 1:e])
        o = e
        e = o + 1 + p[o]
        try:
            m.routing_key = p[o + 1:e].decode("utf-8")
        except UnicodeDecodeError:
            m.routing_key = checked_shortstr(p[o + 1:e])
        o = e
        bits0 = p[o]
        o += 1
        m.arguments, o = read_table(p, o)
    except (IndexError, struct.error):
        raise truncated(QueueBind) from None
    except SyntaxErrorAMQP as exc:
        raise exc.with_method(50, 20) from None
    if o != len(p):
        raise bad_length(QueueBind, o, len(p))
    m.no_wait = (bits0 & 1) != 0
    return m


@final
class QueueBindOk(Method):
    """``queue.bind-ok`` (50, 21): Confirm bind successful.

    Asynchronous.
    """

    __slots__ = ()
    __match_args__ = ()
    CLASS_ID = 50
    METHOD_ID = 21
    INDEX = 0x00320015
    NAME = 'queue.bind-ok'
    SYNCHRONOUS = False
    HAS_CONTENT = False
    ARGUMENTS = _SPECS[31].arguments
    REPLIES = ()

    def encode(self) -> bytes:
        return b"\x00\x32\x00\x15"


def _decode_queue_bind_ok(p: bytes) -> QueueBindOk:
    if len(p) != 4:
        raise bad_length(QueueBindOk, 4, len(p))
    return _new(QueueBindOk)


@final
class QueuePurge(Method):
    """``queue.purge`` (50, 30): Purge a queue.

    Synchronous, answered by ``queue.purge-ok``.

    Args:
        reserved_1: short, default 0.
        queue: shortstr, default ''.
        no_wait: bit, default False.
    """

    __slots__ = ('no_wait', 'queue', 'reserved_1')
    __match_args__ = ('reserved_1', 'queue', 'no_wait')
    CLASS_ID = 50
    METHOD_ID = 30
    INDEX = 0x0032001E
    NAME = 'queue.purge'
    SYNCHRONOUS = True
    HAS_CONTENT = False
    ARGUMENTS = _SPECS[32].arguments

    reserved_1: int
    queue: str
    no_wait: bool

    def __init__(self, reserved_1: int = 0, queue: str = '', no_wait: bool = False) -> None:
        self.reserved_1 = reserved_1
        self.queue = queue
        self.no_wait = no_wait

    def encode(self) -> bytes:
        try:
            queue = self.queue.encode("utf-8", "surrogateescape")
            return b"".join((
                _S_HHH.pack(50, 30, self.reserved_1),
                _LEN8[len(queue)],
                queue,
                _LEN8[1 if self.no_wait else 0],
            ))
        except (IndexError, TypeError, AttributeError, struct.error) as exc:
            raise encode_error(self, exc) from None


def _decode_queue_purge(p: bytes) -> QueuePurge:
    m = _new(QueuePurge)
    try:
        m.reserved_1, n = _S_HB.unpack_from(p, 4)
        o = 4 + 3
        e = o + n
        try:
            m.queue = p[o:e].decode("utf-8")
        except UnicodeDecodeError:
            m.queue = checked_shortstr(p[o:e])
        o = e
        bits0 = p[o]
        o += 1
    except (IndexError, struct.error):
        raise truncated(QueuePurge) from None
    if o != len(p):
        raise bad_length(QueuePurge, o, len(p))
    m.no_wait = (bits0 & 1) != 0
    return m


@final
class QueuePurgeOk(Method):
    """``queue.purge-ok`` (50, 31): Confirms a queue purge.

    Asynchronous.

    Args:
        message_count: long, default 0.
    """

    __slots__ = ('message_count',)
    __match_args__ = ('message_count',)
    CLASS_ID = 50
    METHOD_ID = 31
    INDEX = 0x0032001F
    NAME = 'queue.purge-ok'
    SYNCHRONOUS = False
    HAS_CONTENT = False
    ARGUMENTS = _SPECS[33].arguments
    REPLIES = ()

    message_count: int

    def __init__(self, message_count: int = 0) -> None:
        self.message_count = message_count

    def encode(self) -> bytes:
        try:
            return _S_HHI.pack(50, 31, self.message_count)
        except (IndexError, TypeError, AttributeError, struct.error) as exc:
            raise encode_error(self, exc) from None


def _decode_queue_purge_ok(p: bytes) -> QueuePurgeOk:
    m = _new(QueuePurgeOk)
    try:
        (m.message_count,) = _S_I.unpack_from(p, 4)
        o = 4 + 4
    except (IndexError, struct.error):
        raise truncated(QueuePurgeOk) from None
    if o != len(p):
        raise bad_length(QueuePurgeOk, o, len(p))
    return m


@final
class QueueDelete(Method):
    """``queue.delete`` (50, 40): Delete a queue.

    Synchronous, answered by ``queue.delete-ok``.

    Args:
        reserved_1: short, default 0.
        queue: shortstr, default ''.
        if_unused: bit, default False.
        if_empty: bit, default False.
        no_wait: bit, default False.
    """

    __slots__ = ('if_empty', 'if_unused', 'no_wait', 'queue', 'reserved_1')
    __match_args__ = ('reserved_1', 'queue', 'if_unused', 'if_empty', 'no_wait')
    CLASS_ID = 50
    METHOD_ID = 40
    INDEX = 0x00320028
    NAME = 'queue.delete'
    SYNCHRONOUS = True
    HAS_CONTENT = False
    ARGUMENTS = _SPECS[34].arguments

    reserved_1: int
    queue: str
    if_unused: bool
    if_empty: bool
    no_wait: bool

    def __init__(
        self,
        reserved_1: int = 0,
        queue: str = '',
        if_unused: bool = False,
        if_empty: bool = False,
        no_wait: bool = False,
    ) -> None:
        self.reserved_1 = reserved_1
        self.queue = queue
        self.if_unused = if_unused
        self.if_empty = if_empty
        self.no_wait = no_wait

    def encode(self) -> bytes:
        try:
            queue = self.queue.encode("utf-8", "surrogateescape")
            bits1 = (
                (1 if self.if_unused else 0) |
                (2 if self.if_empty else 0) |
                (4 if self.no_wait else 0)
            )
            return b"".join((
                _S_HHH.pack(50, 40, self.reserved_1),
                _LEN8[len(queue)],
                queue,
                _LEN8[bits1],
            ))
        except (IndexError, TypeError, AttributeError, struct.error) as exc:
            raise encode_error(self, exc) from None


def _decode_queue_delete(p: bytes) -> QueueDelete:
    m = _new(QueueDelete)
    try:
        m.reserved_1, n = _S_HB.unpack_from(p, 4)
        o = 4 + 3
        e = o + n
        try:
            m.queue = p[o:e].decode("utf-8")
        except UnicodeDecodeError:
            m.queue = checked_shortstr(p[o:e])
        o = e
        bits0 = p[o]
        o += 1
    except (IndexError, struct.error):
        raise truncated(QueueDelete) from None
    if o != len(p):
        raise bad_length(QueueDelete, o, len(p))
    m.if_unused = (bits0 & 1) != 0
    m.if_empty = (bits0 & 2) != 0
    m.no_wait = (bits0 & 4) != 0
    return m


@final
class QueueDeleteOk(Method):
    """``queue.delete-ok`` (50, 41): Confirm deletion of a queue.

    Asynchronous.

    Args:
        message_count: long, default 0.
    """

    __slots__ = ('message_count',)
    __match_args__ = ('message_count',)
    CLASS_ID = 50
    METHOD_ID = 41
    INDEX = 0x00320029
    NAME = 'queue.delete-ok'
    SYNCHRONOUS = False
    HAS_CONTENT = False
    ARGUMENTS = _SPECS[35].arguments
    REPLIES = ()

    message_count: int

    def __init__(self, message_count: int = 0) -> None:
        self.message_count = message_count

    def encode(self) -> bytes:
        try:
            return _S_HHI.pack(50, 41, self.message_count)
        except (IndexError, TypeError, AttributeError, struct.error) as exc:
            raise encode_error(self, exc) from None


def _decode_queue_delete_ok(p: bytes) -> QueueDeleteOk:
    m = _new(QueueDeleteOk)
    try:
        (m.message_count,) = _S_I.unpack_from(p, 4)
        o = 4 + 4
    except (IndexError, struct.error):
        raise truncated(QueueDeleteOk) from None
    if o != len(p):
        raise bad_length(QueueDeleteOk, o, len(p))
    return m


@final
class QueueUnbind(Method):
    """``queue.unbind`` (50, 50): Unbind a queue from an exchange.

    Synchronous, answered by ``queue.unbind-ok``.

    Args:
        reserved_1: short, default 0.
        queue: shortstr, default ''.
        exchange: shortstr, default ''.
        routing_key: shortstr, default ''.
        arguments: table, default empty.
    """

    __slots__ = ('arguments', 'exchange', 'queue', 'reserved_1', 'routing_key')
    __match_args__ = ('reserved_1', 'queue', 'exchange', 'routing_key', 'arguments')
    CLASS_ID = 50
    METHOD_ID = 50
    INDEX = 0x00320032
    NAME = 'queue.unbind'
    SYNCHRONOUS = True
    HAS_CONTENT = False
    ARGUMENTS = _SPECS[36].arguments

    reserved_1: int
    queue: str
    exchange: str
    routing_key: str
    arguments: FieldTable

    def __init__(
        self,
        reserved_1: int = 0,
        queue: str = '',
        exchange: str = '',
        routing_key: str = '',
        arguments: FieldTable | None = None,
    ) -> None:
        self.reserved_1 = reserved_1
        self.queue = queue
        self.exchange = exchange
        self.routing_key = routing_key
        self.arguments = {} if arguments is None else arguments

    def encode(self) -> bytes:
        try:
            queue = self.queue.encode("utf-8", "surrogateescape")
            exchange = self.exchange.encode("utf-8", "surrogateescape")
            routing_key = self.routing_key.encode("utf-8", "surrogateescape")
            return b"".join((
                _S_HHH.pack(50, 50, self.reserved_1),
                _LEN8[len(queue)],
                queue,
                _LEN8[len(exchange)],
                exchange,
                _LEN8[len(routing_key)],
                routing_key,
                encode_table(self.arguments),
            ))
        except (IndexError, TypeError, AttributeError, struct.error) as exc:
            raise encode_error(self, exc) from None


def _decode_queue_unbind(p: bytes) -> QueueUnbind:
    m = _new(QueueUnbind)
    try:
        m.reserved_1, n = _S_HB.unpack_from(p, 4)
        o = 4 + 3
        e = o + n
        try:
            m.queue = p[o:e].decode("utf-8")
        except UnicodeDecodeError:
            m.queue = checked_shortstr(p[o:e])
        o = e
        e = o + 1 + p[o]
        try:
            m.exchange = p[o + 1:e].decode("utf-8")
        except UnicodeDecodeError:
            m.exchange = checked_shortstr(p[o + 1:e])
        o = e
        e = o + 1 + p[o]
        try:
            m.routing_key = p[o + 1:e].decode("utf-8")
        except UnicodeDecodeError:
            m.routing_key = checked_shortstr(p[o + 1:e])
        o = e
        m.arguments, o = read_table(p, o)
    except (IndexError, struct.error):
        raise truncated(QueueUnbind) from None
    except SyntaxErrorAMQP as exc:
        raise exc.with_method(50, 50) from None
    if o != len(p):
        raise bad_length(QueueUnbind, o, len(p))
    return m


@final
class QueueUnbindOk(Method):
    """``queue.unbind-ok`` (50, 51): Confirm unbind successful.

    Asynchronous.
    """

    __slots__ = ()
    __match_args__ = ()
    CLASS_ID = 50
    METHOD_ID = 51
    INDEX = 0x00320033
    NAME = 'queue.unbind-ok'
    SYNCHRONOUS = False
    HAS_CONTENT = False
    ARGUMENTS = _SPECS[37].arguments
    REPLIES = ()

    def encode(self) -> bytes:
        return b"\x00\x32\x00\x33"


def _decode_queue_unbind_ok(p: bytes) -> QueueUnbindOk:
    if len(p) != 4:
        raise bad_length(QueueUnbindOk, 4, len(p))
    return _new(QueueUnbindOk)


@final
class BasicQos(Method):
    """``basic.qos`` (60, 10): Specify quality of service.

    Synchronous, answered by ``basic.qos-ok``.

    Args:
        prefetch_size: long, default 0.
        prefetch_count: short, default 0.
        global_: bit, default False.
    """

    __slots__ = ('global_', 'prefetch_count', 'prefetch_size')
    __match_args__ = ('prefetch_size', 'prefetch_count', 'global_')
    CLASS_ID = 60
    METHOD_ID = 10
    INDEX = 0x003C000A
    NAME = 'basic.qos'
    SYNCHRONOUS = True
    HAS_CONTENT = False
    ARGUMENTS = _SPECS[38].arguments

    prefetch_size: int
    prefetch_count: int
    global_: bool

    def __init__(
        self,
        prefetch_size: int = 0,
        prefetch_count: int = 0,
        global_: bool = False,
    ) -> None:
        self.prefetch_size = prefetch_size
        self.prefetch_count = prefetch_count
        self.global_ = global_

    def encode(self) -> bytes:
        try:
            return _S_HHIHB.pack(
                60,
                10,
                self.prefetch_size,
                self.prefetch_count,
                1 if self.global_ else 0,
            )
        except (IndexError, TypeError, AttributeError, struct.error) as exc:
            raise encode_error(self, exc) from None


def _decode_basic_qos(p: bytes) -> BasicQos:
    m = _new(BasicQos)
    try:
        m.prefetch_size, m.prefetch_count, bits0 = _S_IHB.unpack_from(p, 4)
        o = 4 + 7
    except (IndexError, struct.error):
        raise truncated(BasicQos) from None
    if o != len(p):
        raise bad_length(BasicQos, o, len(p))
    m.global_ = (bits0 & 1) != 0
    return m


@final
class BasicQosOk(Method):
    """``basic.qos-ok`` (60, 11): Confirm the requested qos.

    Asynchronous.
    """

    __slots__ = ()
    __match_args__ = ()
    CLASS_ID = 60
    METHOD_ID = 11
    INDEX = 0x003C000B
    NAME = 'basic.qos-ok'
    SYNCHRONOUS = False
    HAS_CONTENT = False
    ARGUMENTS = _SPECS[39].arguments
    REPLIES = ()

    def encode(self) -> bytes:
        return b"\x00\x3c\x00\x0b"


def _decode_basic_qos_ok(p: bytes) -> BasicQosOk:
    if len(p) != 4:
        raise bad_length(BasicQosOk, 4, len(p))
    return _new(BasicQosOk)


@final
class BasicConsume(Method):
    """``basic.consume`` (60, 20): Start a queue consumer.

    Synchronous, answered by ``basic.consume-ok``.

    Args:
        reserved_1: short, default 0.
        queue: shortstr, default ''.
        consumer_tag: shortstr, default ''.
        no_local: bit, default False.
        no_ack: bit, default False.
        exclusive: bit, default False.
        no_wait: bit, default False.
        arguments: table, default empty.
    """

    __slots__ = (
        'arguments',
        'consumer_tag',
        'exclusive',
        'no_ack',
        'no_local',
        'no_wait',
        'queue',
        'reserved_1',
    )
    __match_args__ = (
        'reserved_1',
        'queue',
        'consumer_tag',
        'no_local',
        'no_ack',
        'exclusive',
        'no_wait',
        'arguments',
    )
    CLASS_ID = 60
    METHOD_ID = 20
    INDEX = 0x003C0014
    NAME = 'basic.consume'
    SYNCHRONOUS = True
    HAS_CONTENT = False
    ARGUMENTS = _SPECS[40].arguments

    reserved_1: int
    queue: str
    consumer_tag: str
    no_local: bool
    no_ack: bool
    exclusive: bool
    no_wait: bool
    arguments: FieldTable

    def __init__(
        self,
        reserved_1: int = 0,
        queue: str = '',
        consumer_tag: str = '',
        no_local: bool = False,
        no_ack: bool = False,
        exclusive: bool = False,
        no_wait: bool = False,
        arguments: FieldTable | None = None,
    ) -> None:
        self.reserved_1 = reserved_1
        self.queue = queue
        self.consumer_tag = consumer_tag
        self.no_local = no_local
        self.no_ack = no_ack
        self.exclusive = exclusive
        self.no_wait = no_wait
        self.arguments = {} if arguments is None else arguments

    def encode(self) -> bytes:
        try:
            queue = self.queue.encode("utf-8", "surrogateescape")
            consumer_tag = self.consumer_tag.encode("utf-8", "surrogateescape")
            bits2 = (
                (1 if self.no_local else 0) |
                (2 if self.no_ack else 0) |
                (4 if self.exclusive else 0) |
                (8 if self.no_wait else 0)
            )
            return b"".join((
                _S_HHH.pack(60, 20, self.reserved_1),
                _LEN8[len(queue)],
                queue,
                _LEN8[len(consumer_tag)],
                consumer_tag,
                _LEN8[bits2],
                encode_table(self.arguments),
            ))
        except (IndexError, TypeError, AttributeError, struct.error) as exc:
            raise encode_error(self, exc) from None


def _decode_basic_consume(p: bytes) -> BasicConsume:
    m = _new(BasicConsume)
    try:
        m.reserved_1, n = _S_HB.unpack_from(p, 4)
        o = 4 + 3
        e = o + n
        try:
            m.queue = p[o:e].decode("utf-8")
        except UnicodeDecodeError:
            m.queue = checked_shortstr(p[o:e])
        o = e
        e = o + 1 + p[o]
        try:
            m.consumer_tag = p[o + 1:e].decode("utf-8")
        except UnicodeDecodeError:
            m.consumer_tag = checked_shortstr(p[o + 1:e])
        o = e
        bits0 = p[o]
        o += 1
        m.arguments, o = read_table(p, o)
    except (IndexError, struct.error):
        raise truncated(BasicConsume) from None
    except SyntaxErrorAMQP as exc:
        raise exc.with_method(60, 20) from None
    if o != len(p):
        raise bad_length(BasicConsume, o, len(p))
    m.no_local = (bits0 & 1) != 0
    m.no_ack = (bits0 & 2) != 0
    m.exclusive = (bits0 & 4) != 0
    m.no_wait = (bits0 & 8) != 0
    return m


@final
class BasicConsumeOk(Method):
    """``basic.consume-ok`` (60, 21): Confirm a new consumer.

    Asynchronous.

    Args:
        consumer_tag: shortstr, default ''.
    """

    __slots__ = ('consumer_tag',)
    __match_args__ = ('consumer_tag',)
    CLASS_ID = 60
    METHOD_ID = 21
    INDEX = 0x003C0015
    NAME = 'basic.consume-ok'
    SYNCHRONOUS = False
    HAS_CONTENT = False
    ARGUMENTS = _SPECS[41].arguments
    REPLIES = ()

    consumer_tag: str

    def __init__(self, consumer_tag: str = '') -> None:
        self.consumer_tag = consumer_tag

    def encode(self) -> bytes:
        try:
            consumer_tag = self.consumer_tag.encode("utf-8", "surrogateescape")
            return b"".join((b"\x00\x3c\x00\x15", _LEN8[len(consumer_tag)], consumer_tag))
        except (IndexError, TypeError, AttributeError, struct.error) as exc:
            raise encode_error(self, exc) from None


def _decode_basic_consume_ok(p: bytes) -> BasicConsumeOk:
    m = _new(BasicConsumeOk)
    try:
        o = 4
        e = o + 1 + p[o]
        try:
            m.consumer_tag = p[o + 1:e].decode("utf-8")
        except UnicodeDecodeError:
            m.consumer_tag = checked_shortstr(p[o + 1:e])
        o = e
    except (IndexError, struct.error):
        raise truncated(BasicConsumeOk) from None
    if o != len(p):
        raise bad_length(BasicConsumeOk, o, len(p))
    return m


@final
class BasicCancel(Method):
    """``basic.cancel`` (60, 30): End a queue consumer.

    Synchronous, answered by ``basic.cancel-ok``.

    Args:
        consumer_tag: shortstr, default ''.
        no_wait: bit, default False.
    """

    __slots__ = ('consumer_tag', 'no_wait')
    __match_args__ = ('consumer_tag', 'no_wait')
    CLASS_ID = 60
    METHOD_ID = 30
    INDEX = 0x003C001E
    NAME = 'basic.cancel'
    SYNCHRONOUS = True
    HAS_CONTENT = False
    ARGUMENTS = _SPECS[42].arguments

    consumer_tag: str
    no_wait: bool

    def __init__(self, consumer_tag: str = '', no_wait: bool = False) -> None:
        self.consumer_tag = consumer_tag
        self.no_wait = no_wait

    def encode(self) -> bytes:
        try:
            consumer_tag = self.consumer_tag.encode("utf-8", "surrogateescape")
            return b"".join((
                b"\x00\x3c\x00\x1e",
                _LEN8[len(consumer_tag)],
                consumer_tag,
                _LEN8[1 if self.no_wait else 0],
            ))
        except (IndexError, TypeError, AttributeError, struct.error) as exc:
            raise encode_error(self, exc) from None


def _decode_basic_cancel(p: bytes) -> BasicCancel:
    m = _new(BasicCancel)
    try:
        o = 4
        e = o + 1 + p[o]
        try:
            m.consumer_tag = p[o + 1:e].decode("utf-8")
        except UnicodeDecodeError:
            m.consumer_tag = checked_shortstr(p[o + 1:e])
        o = e
        bits0 = p[o]
        o += 1
    except (IndexError, struct.error):
        raise truncated(BasicCancel) from None
    if o != len(p):
        raise bad_length(BasicCancel, o, len(p))
    m.no_wait = (bits0 & 1) != 0
    return m


@final
class BasicCancelOk(Method):
    """``basic.cancel-ok`` (60, 31): Confirm a cancelled consumer.

    Asynchronous.

    Args:
        consumer_tag: shortstr, default ''.
    """

    __slots__ = ('consumer_tag',)
    __match_args__ = ('consumer_tag',)
    CLASS_ID = 60
    METHOD_ID = 31
    INDEX = 0x003C001F
    NAME = 'basic.cancel-ok'
    SYNCHRONOUS = False
    HAS_CONTENT = False
    ARGUMENTS = _SPECS[43].arguments
    REPLIES = ()

    consumer_tag: str

    def __init__(self, consumer_tag: str = '') -> None:
        self.consumer_tag = consumer_tag

    def encode(self) -> bytes:
        try:
            consumer_tag = self.consumer_tag.encode("utf-8", "surrogateescape")
            return b"".join((b"\x00\x3c\x00\x1f", _LEN8[len(consumer_tag)], consumer_tag))
        except (IndexError, TypeError, AttributeError, struct.error) as exc:
            raise encode_error(self, exc) from None


def _decode_basic_cancel_ok(p: bytes) -> BasicCancelOk:
    m = _new(BasicCancelOk)
    try:
        o = 4
        e = o + 1 + p[o]
        try:
            m.consumer_tag = p[o + 1:e].decode("utf-8")
        except UnicodeDecodeError:
            m.consumer_tag = checked_shortstr(p[o + 1:e])
        o = e
    except (IndexError, struct.error):
        raise truncated(BasicCancelOk) from None
    if o != len(p):
        raise bad_length(BasicCancelOk, o, len(p))
    return m


@final
class BasicPublish(Method):
    """``basic.publish`` (60, 40): Publish a message.

    Asynchronous; carries content.

    Args:
        reserved_1: short, default 0.
        exchange: shortstr, default ''.
        routing_key: shortstr, default ''.
        mandatory: bit, default False.
        immediate: bit, default False.
    """

    __slots__ = ('exchange', 'immediate', 'mandatory', 'reserved_1', 'routing_key')
    __match_args__ = ('reserved_1', 'exchange', 'routing_key', 'mandatory', 'immediate')
    CLASS_ID = 60
    METHOD_ID = 40
    INDEX = 0x003C0028
    NAME = 'basic.publish'
    SYNCHRONOUS = False
    HAS_CONTENT = True
    ARGUMENTS = _SPECS[44].arguments
    REPLIES = ()

    reserved_1: int
    exchange: str
    routing_key: str
    mandatory: bool
    immediate: bool

    def __init__(
        self,
        reserved_1: int = 0,
        exchange: str = '',
        routing_key: str = '',
        mandatory: bool = False,
        immediate: bool = False,
    ) -> None:
        self.reserved_1 = reserved_1
        self.exchange = exchange
        self.routing_key = routing_key
        self.mandatory = mandatory
        self.immediate = immediate

    def encode(self) -> bytes:
        try:
            exchange = self.exchange.encode("utf-8", "surrogateescape")
            routing_key = self.routing_key.encode("utf-8", "surrogateescape")
            bits2 = (1 if self.mandatory else 0) | (2 if self.immediate else 0)
            return b"".join((
                _S_HHH.pack(60, 40, self.reserved_1),
                _LEN8[len(exchange)],
                exchange,
                _LEN8[len(routing_key)],
                routing_key,
                _LEN8[bits2],
            ))
        except (IndexError, TypeError, AttributeError, struct.error) as exc:
            raise encode_error(self, exc) from None


def _decode_basic_publish(p: bytes) -> BasicPublish:
    m = _new(BasicPublish)
    try:
        m.reserved_1, n = _S_HB.unpack_from(p, 4)
        o = 4 + 3
        e = o + n
        m.exchange = p[o:e].decode("utf-8", "surrogateescape")
        o = e
        e = o + 1 + p[o]
        m.routing_key = p[o + 1:e].decode("utf-8", "surrogateescape")
        o = e
        bits0 = p[o]
        o += 1
    except (IndexError, struct.error):
        raise truncated(BasicPublish) from None
    if o != len(p):
        raise bad_length(BasicPublish, o, len(p))
    m.mandatory = (bits0 & 1) != 0
    m.immediate = (bits0 & 2) != 0
    return m


@final
class BasicReturn(Method):
    """``basic.return`` (60, 50): Return a failed message.

    Asynchronous; carries content.

    Args:
        reply_code: short, default 0.
        reply_text: shortstr, default ''.
        exchange: shortstr, default ''.
        routing_key: shortstr, default ''.
    """

    __slots__ = ('exchange', 'reply_code', 'reply_text', 'routing_key')
    __match_args__ = ('reply_code', 'reply_text', 'exchange', 'routing_key')
    CLASS_ID = 60
    METHOD_ID = 50
    INDEX = 0x003C0032
    NAME = 'basic.return'
    SYNCHRONOUS = False
    HAS_CONTENT = True
    ARGUMENTS = _SPECS[45].arguments
    REPLIES = ()

    reply_code: int
    reply_text: str
    exchange: str
    routing_key: str

    def __init__(
        self,
        reply_code: int = 0,
        reply_text: str = '',
        exchange: str = '',
        routing_key: str = '',
    ) -> None:
        self.reply_code = reply_code
        self.reply_text = reply_text
        self.exchange = exchange
        self.routing_key = routing_key

    def encode(self) -> bytes:
        try:
            reply_text = self.reply_text.encode("utf-8", "surrogateescape")
            exchange = self.exchange.encode("utf-8", "surrogateescape")
            routing_key = self.routing_key.encode("utf-8", "surrogateescape")
            return b"".join((
                _S_HHH.pack(60, 50, self.reply_code),
                _LEN8[len(reply_text)],
                reply_text,
                _LEN8[len(exchange)],
                exchange,
                _LEN8[len(routing_key)],
                routing_key,
            ))
        except (IndexError, TypeError, AttributeError, struct.error) as exc:
            raise encode_error(self, exc) from None


def _decode_basic_return(p: bytes) -> BasicReturn:
    m = _new(BasicReturn)
    try:
        m.reply_code, n = _S_HB.unpack_from(p, 4)
        o = 4 + 3
        e = o + n
        m.reply_text = p[o:e].decode("utf-8", "surrogateescape")
        o = e
        e = o + 1 + p[o]
        m.exchange = p[o + 1:e].decode("utf-8", "surrogateescape")
        o = e
        e = o + 1 + p[o]
        m.routing_key = p[o + 1:e].decode("utf-8", "surrogateescape")
        o = e
    except (IndexError, struct.error):
        raise truncated(BasicReturn) from None
    if o != len(p):
        raise bad_length(BasicReturn, o, len(p))
    return m


@final
class BasicDeliver(Method):
    """``basic.deliver`` (60, 60): Notify the client of a consumer message.

    Asynchronous; carries content.

    Args:
        consumer_tag: shortstr, default ''.
        delivery_tag: longlong, default 0.
        redelivered: bit, default False.
        exchange: shortstr, default ''.
        routing_key: shortstr, default ''.
    """

    __slots__ = ('consumer_tag', 'delivery_tag', 'exchange', 'redelivered', 'routing_key')
    __match_args__ = ('consumer_tag', 'delivery_tag', 'redelivered', 'exchange', 'routing_key')
    CLASS_ID = 60
    METHOD_ID = 60
    INDEX = 0x003C003C
    NAME = 'basic.deliver'
    SYNCHRONOUS = False
    HAS_CONTENT = True
    ARGUMENTS = _SPECS[46].arguments
    REPLIES = ()

    consumer_tag: str
    delivery_tag: int
    redelivered: bool
    exchange: str
    routing_key: str

    def __init__(
        self,
        consumer_tag: str = '',
        delivery_tag: int = 0,
        redelivered: bool = False,
        exchange: str = '',
        routing_key: str = '',
    ) -> None:
        self.consumer_tag = consumer_tag
        self.delivery_tag = delivery_tag
        self.redelivered = redelivered
        self.exchange = exchange
        self.routing_key = routing_key

    def encode(self) -> bytes:
        try:
            consumer_tag = self.consumer_tag.encode("utf-8", "surrogateescape")
            exchange = self.exchange.encode("utf-8", "surrogateescape")
            routing_key = self.routing_key.encode("utf-8", "surrogateescape")
            return b"".join((
                b"\x00\x3c\x00\x3c",
                _LEN8[len(consumer_tag)],
                consumer_tag,
                _S_QB.pack(self.delivery_tag, 1 if self.redelivered else 0),
                _LEN8[len(exchange)],
                exchange,
                _LEN8[len(routing_key)],
                routing_key,
            ))
        except (IndexError, TypeError, AttributeError, struct.error) as exc:
            raise encode_error(self, exc) from None


def _decode_basic_deliver(p: bytes) -> BasicDeliver:
    m = _new(BasicDeliver)
    try:
        o = 4
        e = o + 1 + p[o]
        m.consumer_tag = p[o + 1:e].decode("utf-8", "surrogateescape")
        o = e
        m.delivery_tag, bits0, n = _S_QBB.unpack_from(p, o)
        o += 10
        e = o + n
        m.exchange = p[o:e].decode("utf-8", "surrogateescape")
        o = e
        e = o + 1 + p[o]
        m.routing_key = p[o + 1:e].decode("utf-8", "surrogateescape")
        o = e
    except (IndexError, struct.error):
        raise truncated(BasicDeliver) from None
    if o != len(p):
        raise bad_length(BasicDeliver, o, len(p))
    m.redelivered = (bits0 & 1) != 0
    return m


@final
class BasicGet(Method):
    """``basic.get`` (60, 70): Direct access to a queue.

    Synchronous, answered by ``basic.get-ok`` or ``basic.get-empty``.

    Args:
        reserved_1: short, default 0.
        queue: shortstr, default ''.
        no_ack: bit, default False.
    """

    __slots__ = ('no_ack', 'queue', 'reserved_1')
    __match_args__ = ('reserved_1', 'queue', 'no_ack')
    CLASS_ID = 60
    METHOD_ID = 70
    INDEX = 0x003C0046
    NAME = 'basic.get'
    SYNCHRONOUS = True
    HAS_CONTENT = False
    ARGUMENTS = _SPECS[47].arguments

    reserved_1: int
    queue: str
    no_ack: bool

    def __init__(self, reserved_1: int = 0, queue: str = '', no_ack: bool = False) -> None:
        self.reserved_1 = reserved_1
        self.queue = queue
        self.no_ack = no_ack

    def encode(self) -> bytes:
        try:
            queue = self.queue.encode("utf-8", "surrogateescape")
            return b"".join((
                _S_HHH.pack(60, 70, self.reserved_1),
                _LEN8[len(queue)],
                queue,
                _LEN8[1 if self.no_ack else 0],
            ))
        except (IndexError, TypeError, AttributeError, struct.error) as exc:
            raise encode_error(self, exc) from None


def _decode_basic_get(p: bytes) -> BasicGet:
    m = _new(BasicGet)
    try:
        m.reserved_1, n = _S_HB.unpack_from(p, 4)
        o = 4 + 3
        e = o + n
        try:
            m.queue = p[o:e].decode("utf-8")
        except UnicodeDecodeError:
            m.queue = checked_shortstr(p[o:e])
        o = e
        bits0 = p[o]
        o += 1
    except (IndexError, struct.error):
        raise truncated(BasicGet) from None
    if o != len(p):
        raise bad_length(BasicGet, o, len(p))
    m.no_ack = (bits0 & 1) != 0
    return m


@final
class BasicGetOk(Method):
    """``basic.get-ok`` (60, 71): Provide client with a message.

    Asynchronous; carries content.

    Args:
        delivery_tag: longlong, default 0.
        redelivered: bit, default False.
        exchange: shortstr, default ''.
        routing_key: shortstr, default ''.
        message_count: long, default 0.
    """

    __slots__ = ('delivery_tag', 'exchange', 'message_count', 'redelivered', 'routing_key')
    __match_args__ = ('delivery_tag', 'redelivered', 'exchange', 'routing_key', 'message_count')
    CLASS_ID = 60
    METHOD_ID = 71
    INDEX = 0x003C0047
    NAME = 'basic.get-ok'
    SYNCHRONOUS = False
    HAS_CONTENT = True
    ARGUMENTS = _SPECS[48].arguments
    REPLIES = ()

    delivery_tag: int
    redelivered: bool
    exchange: str
    routing_key: str
    message_count: int

    def __init__(
        self,
        delivery_tag: int = 0,
        redelivered: bool = False,
        exchange: str = '',
        routing_key: str = '',
        message_count: int = 0,
    ) -> None:
        self.delivery_tag = delivery_tag
        self.redelivered = redelivered
        self.exchange = exchange
        self.routing_key = routing_key
        self.message_count = message_count

    def encode(self) -> bytes:
        try:
            exchange = self.exchange.encode("utf-8", "surrogateescape")
            routing_key = self.routing_key.encode("utf-8", "surrogateescape")
            return b"".join((
                _S_HHQB.pack(60, 71, self.delivery_tag, 1 if self.redelivered else 0),
                _LEN8[len(exchange)],
                exchange,
                _LEN8[len(routing_key)],
                routing_key,
                _S_I.pack(self.message_count),
            ))
        except (IndexError, TypeError, AttributeError, struct.error) as exc:
            raise encode_error(self, exc) from None


def _decode_basic_get_ok(p: bytes) -> BasicGetOk:
    m = _new(BasicGetOk)
    try:
        m.delivery_tag, bits0, n = _S_QBB.unpack_from(p, 4)
        o = 4 + 10
        e = o + n
        m.exchange = p[o:e].decode("utf-8", "surrogateescape")
        o = e
        e = o + 1 + p[o]
        m.routing_key = p[o + 1:e].decode("utf-8", "surrogateescape")
        o = e
        (m.message_count,) = _S_I.unpack_from(p, o)
        o += 4
    except (IndexError, struct.error):
        raise truncated(BasicGetOk) from None
    if o != len(p):
        raise bad_length(BasicGetOk, o, len(p))
    m.redelivered = (bits0 & 1) != 0
    return m


@final
class BasicGetEmpty(Method):
    """``basic.get-empty`` (60, 72): Indicate no messages available.

    Asynchronous.

    Args:
        reserved_1: shortstr, default ''.
    """

    __slots__ = ('reserved_1',)
    __match_args__ = ('reserved_1',)
    CLASS_ID = 60
    METHOD_ID = 72
    INDEX = 0x003C0048
    NAME = 'basic.get-empty'
    SYNCHRONOUS = False
    HAS_CONTENT = False
    ARGUMENTS = _SPECS[49].arguments
    REPLIES = ()

    reserved_1: str

    def __init__(self, reserved_1: str = '') -> None:
        self.reserved_1 = reserved_1

    def encode(self) -> bytes:
        try:
            reserved_1 = self.reserved_1.encode("utf-8", "surrogateescape")
            return b"".join((b"\x00\x3c\x00\x48", _LEN8[len(reserved_1)], reserved_1))
        except (IndexError, TypeError, AttributeError, struct.error) as exc:
            raise encode_error(self, exc) from None


def _decode_basic_get_empty(p: bytes) -> BasicGetEmpty:
    m = _new(BasicGetEmpty)
    try:
        o = 4
        e = o + 1 + p[o]
        try:
            m.reserved_1 = p[o + 1:e].decode("utf-8")
        except UnicodeDecodeError:
            m.reserved_1 = checked_shortstr(p[o + 1:e])
        o = e
    except (IndexError, struct.error):
        raise truncated(BasicGetEmpty) from None
    if o != len(p):
        raise bad_length(BasicGetEmpty, o, len(p))
    return m


@final
class BasicAck(Method):
    """``basic.ack`` (60, 80): Acknowledge one or more messages.

    Asynchronous.

    Args:
        delivery_tag: longlong, default 0.
        multiple: bit, default False.
    """

    __slots__ = ('delivery_tag', 'multiple')
    __match_args__ = ('delivery_tag', 'multiple')
    CLASS_ID = 60
    METHOD_ID = 80
    INDEX = 0x003C0050
    NAME = 'basic.ack'
    SYNCHRONOUS = False
    HAS_CONTENT = False
    ARGUMENTS = _SPECS[50].arguments
    REPLIES = ()

    delivery_tag: int
    multiple: bool

    def __init__(self, delivery_tag: int = 0, multiple: bool = False) -> None:
        self.delivery_tag = delivery_tag
        self.multiple = multiple

    def encode(self) -> bytes:
        try:
            return _S_HHQB.pack(60, 80, self.delivery_tag, 1 if self.multiple else 0)
        except (IndexError, TypeError, AttributeError, struct.error) as exc:
            raise encode_error(self, exc) from None


def _decode_basic_ack(p: bytes) -> BasicAck:
    m = _new(BasicAck)
    try:
        m.delivery_tag, bits0 = _S_QB.unpack_from(p, 4)
        o = 4 + 9
    except (IndexError, struct.error):
        raise truncated(BasicAck) from None
    if o != len(p):
        raise bad_length(BasicAck, o, len(p))
    m.multiple = (bits0 & 1) != 0
    return m


@final
class BasicReject(Method):
    """``basic.reject`` (60, 90): Reject an incoming message.

    Asynchronous.

    Args:
        delivery_tag: longlong, default 0.
        requeue: bit, default True.
    """

    __slots__ = ('delivery_tag', 'requeue')
    __match_args__ = ('delivery_tag', 'requeue')
    CLASS_ID = 60
    METHOD_ID = 90
    INDEX = 0x003C005A
    NAME = 'basic.reject'
    SYNCHRONOUS = False
    HAS_CONTENT = False
    ARGUMENTS = _SPECS[51].arguments
    REPLIES = ()

    delivery_tag: int
    requeue: bool

    def __init__(self, delivery_tag: int = 0, requeue: bool = True) -> None:
        self.delivery_tag = delivery_tag
        self.requeue = requeue

    def encode(self) -> bytes:
        try:
            return _S_HHQB.pack(60, 90, self.delivery_tag, 1 if self.requeue else 0)
        except (IndexError, TypeError, AttributeError, struct.error) as exc:
            raise encode_error(self, exc) from None


def _decode_basic_reject(p: bytes) -> BasicReject:
    m = _new(BasicReject)
    try:
        m.delivery_tag, bits0 = _S_QB.unpack_from(p, 4)
        o = 4 + 9
    except (IndexError, struct.error):
        raise truncated(BasicReject) from None
    if o != len(p):
        raise bad_length(BasicReject, o, len(p))
    m.requeue = (bits0 & 1) != 0
    return m


@final
class BasicRecoverAsync(Method):
    """``basic.recover-async`` (60, 100): Redeliver unacknowledged messages (deprecated).

    Asynchronous.

    Args:
        requeue: bit, default False.
    """

    __slots__ = ('requeue',)
    __match_args__ = ('requeue',)
    CLASS_ID = 60
    METHOD_ID = 100
    INDEX = 0x003C0064
    NAME = 'basic.recover-async'
    SYNCHRONOUS = False
    HAS_CONTENT = False
    ARGUMENTS = _SPECS[52].arguments
    REPLIES = ()

    requeue: bool

    def __init__(self, requeue: bool = False) -> None:
        self.requeue = requeue

    def encode(self) -> bytes:
        try:
            return _S_HHB.pack(60, 100, 1 if self.requeue else 0)
        except (IndexError, TypeError, AttributeError, struct.error) as exc:
            raise encode_error(self, exc) from None


def _decode_basic_recover_async(p: bytes) -> BasicRecoverAsync:
    m = _new(BasicRecoverAsync)
    try:
        bits0 = p[4]
        o = 4 + 1
    except (IndexError, struct.error):
        raise truncated(BasicRecoverAsync) from None
    if o != len(p):
        raise bad_length(BasicRecoverAsync, o, len(p))
    m.requeue = (bits0 & 1) != 0
    return m


@final
class BasicRecover(Method):
    """``basic.recover`` (60, 110): Redeliver unacknowledged messages.

    Synchronous, answered by ``basic.recover-ok``.

    Args:
        requeue: bit, default False.
    """

    __slots__ = ('requeue',)
    __match_args__ = ('requeue',)
    CLASS_ID = 60
    METHOD_ID = 110
    INDEX = 0x003C006E
    NAME = 'basic.recover'
    SYNCHRONOUS = True
    HAS_CONTENT = False
    ARGUMENTS = _SPECS[53].arguments

    requeue: bool

    def __init__(self, requeue: bool = False) -> None:
        self.requeue = requeue

    def encode(self) -> bytes:
        try:
            return _S_HHB.pack(60, 110, 1 if self.requeue else 0)
        except (IndexError, TypeError, AttributeError, struct.error) as exc:
            raise encode_error(self, exc) from None


def _decode_basic_recover(p: bytes) -> BasicRecover:
    m = _new(BasicRecover)
    try:
        bits0 = p[4]
        o = 4 + 1
    except (IndexError, struct.error):
        raise truncated(BasicRecover) from None
    if o != len(p):
        raise bad_length(BasicRecover, o, len(p))
    m.requeue = (bits0 & 1) != 0
    return m


@final
class BasicRecoverOk(Method):
    """``basic.recover-ok`` (60, 111): Confirm recovery.

    Asynchronous.
    """

    __slots__ = ()
    __match_args__ = ()
    CLASS_ID = 60
    METHOD_ID = 111
    INDEX = 0x003C006F
    NAME = 'basic.recover-ok'
    SYNCHRONOUS = False
    HAS_CONTENT = False
    ARGUMENTS = _SPECS[54].arguments
    REPLIES = ()

    def encode(self) -> bytes:
        return b"\x00\x3c\x00\x6f"


def _decode_basic_recover_ok(p: bytes) -> BasicRecoverOk:
    if len(p) != 4:
        raise bad_length(BasicRecoverOk, 4, len(p))
    return _new(BasicRecoverOk)


@final
class BasicNack(Method):
    """``basic.nack`` (60, 120): Reject one or more incoming messages (RabbitMQ).

    Asynchronous.

    Args:
        delivery_tag: longlong, default 0.
        multiple: bit, default False.
        requeue: bit, default True.
    """

    __slots__ = ('delivery_tag', 'multiple', 'requeue')
    __match_args__ = ('delivery_tag', 'multiple', 'requeue')
    CLASS_ID = 60
    METHOD_ID = 120
    INDEX = 0x003C0078
    NAME = 'basic.nack'
    SYNCHRONOUS = False
    HAS_CONTENT = False
    ARGUMENTS = _SPECS[55].arguments
    REPLIES = ()

    delivery_tag: int
    multiple: bool
    requeue: bool

    def __init__(self, delivery_tag: int = 0, multiple: bool = False, requeue: bool = True) -> None:
        self.delivery_tag = delivery_tag
        self.multiple = multiple
        self.requeue = requeue

    def encode(self) -> bytes:
        try:
            bits0 = (1 if self.multiple else 0) | (2 if self.requeue else 0)
            return _S_HHQB.pack(60, 120, self.delivery_tag, bits0)
        except (IndexError, TypeError, AttributeError, struct.error) as exc:
            raise encode_error(self, exc) from None


def _decode_basic_nack(p: bytes) -> BasicNack:
    m = _new(BasicNack)
    try:
        m.delivery_tag, bits0 = _S_QB.unpack_from(p, 4)
        o = 4 + 9
    except (IndexError, struct.error):
        raise truncated(BasicNack) from None
    if o != len(p):
        raise bad_length(BasicNack, o, len(p))
    m.multiple = (bits0 & 1) != 0
    m.requeue = (bits0 & 2) != 0
    return m


@final
class ConfirmSelect(Method):
    """``confirm.select`` (85, 10): Put the channel in confirm mode (RabbitMQ).

    Synchronous, answered by ``confirm.select-ok``.

    Args:
        no_wait: bit, default False.
    """

    __slots__ = ('no_wait',)
    __match_args__ = ('no_wait',)
    CLASS_ID = 85
    METHOD_ID = 10
    INDEX = 0x0055000A
    NAME = 'confirm.select'
    SYNCHRONOUS = True
    HAS_CONTENT = False
    ARGUMENTS = _SPECS[56].arguments

    no_wait: bool

    def __init__(self, no_wait: bool = False) -> None:
        self.no_wait = no_wait

    def encode(self) -> bytes:
        try:
            return _S_HHB.pack(85, 10, 1 if self.no_wait else 0)
        except (IndexError, TypeError, AttributeError, struct.error) as exc:
            raise encode_error(self, exc) from None


def _decode_confirm_select(p: bytes) -> ConfirmSelect:
    m = _new(ConfirmSelect)
    try:
        bits0 = p[4]
        o = 4 + 1
    except (IndexError, struct.error):
        raise truncated(ConfirmSelect) from None
    if o != len(p):
        raise bad_length(ConfirmSelect, o, len(p))
    m.no_wait = (bits0 & 1) != 0
    return m


@final
class ConfirmSelectOk(Method):
    """``confirm.select-ok`` (85, 11): Acknowledge confirm mode (RabbitMQ).

    Asynchronous.
    """

    __slots__ = ()
    __match_args__ = ()
    CLASS_ID = 85
    METHOD_ID = 11
    INDEX = 0x0055000B
    NAME = 'confirm.select-ok'
    SYNCHRONOUS = False
    HAS_CONTENT = False
    ARGUMENTS = _SPECS[57].arguments
    REPLIES = ()

    def encode(self) -> bytes:
        return b"\x00\x55\x00\x0b"


def _decode_confirm_select_ok(p: bytes) -> ConfirmSelectOk:
    if len(p) != 4:
        raise bad_length(ConfirmSelectOk, 4, len(p))
    return _new(ConfirmSelectOk)


@final
class TxSelect(Method):
    """``tx.select`` (90, 10): Select standard transaction mode.

    Synchronous, answered by ``tx.select-ok``.
    """

    __slots__ = ()
    __match_args__ = ()
    CLASS_ID = 90
    METHOD_ID = 10
    INDEX = 0x005A000A
    NAME = 'tx.select'
    SYNCHRONOUS = True
    HAS_CONTENT = False
    ARGUMENTS = _SPECS[58].arguments

    def encode(self) -> bytes:
        return b"\x00\x5a\x00\x0a"


def _decode_tx_select(p: bytes) -> TxSelect:
    if len(p) != 4:
        raise bad_length(TxSelect, 4, len(p))
    return _new(TxSelect)


@final
class TxSelectOk(Method):
    """``tx.select-ok`` (90, 11): Confirm transaction mode.

    Asynchronous.
    """

    __slots__ = ()
    __match_args__ = ()
    CLASS_ID = 90
    METHOD_ID = 11
    INDEX = 0x005A000B
    NAME = 'tx.select-ok'
    SYNCHRONOUS = False
    HAS_CONTENT = False
    ARGUMENTS = _SPECS[59].arguments
    REPLIES = ()

    def encode(self) -> bytes:
        return b"\x00\x5a\x00\x0b"


def _decode_tx_select_ok(p: bytes) -> TxSelectOk:
    if len(p) != 4:
        raise bad_length(TxSelectOk, 4, len(p))
    return _new(TxSelectOk)


@final
class TxCommit(Method):
    """``tx.commit`` (90, 20): Commit the current transaction.

    Synchronous, answered by ``tx.commit-ok``.
    """

    __slots__ = ()
    __match_args__ = ()
    CLASS_ID = 90
    METHOD_ID = 20
    INDEX = 0x005A0014
    NAME = 'tx.commit'
    SYNCHRONOUS = True
    HAS_CONTENT = False
    ARGUMENTS = _SPECS[60].arguments

    def encode(self) -> bytes:
        return b"\x00\x5a\x00\x14"


def _decode_tx_commit(p: bytes) -> TxCommit:
    if len(p) != 4:
        raise bad_length(TxCommit, 4, len(p))
    return _new(TxCommit)


@final
class TxCommitOk(Method):
    """``tx.commit-ok`` (90, 21): Confirm a successful commit.

    Asynchronous.
    """

    __slots__ = ()
    __match_args__ = ()
    CLASS_ID = 90
    METHOD_ID = 21
    INDEX = 0x005A0015
    NAME = 'tx.commit-ok'
    SYNCHRONOUS = False
    HAS_CONTENT = False
    ARGUMENTS = _SPECS[61].arguments
    REPLIES = ()

    def encode(self) -> bytes:
        return b"\x00\x5a\x00\x15"


def _decode_tx_commit_ok(p: bytes) -> TxCommitOk:
    if len(p) != 4:
        raise bad_length(TxCommitOk, 4, len(p))
    return _new(TxCommitOk)


@final
class TxRollback(Method):
    """``tx.rollback`` (90, 30): Abandon the current transaction.

    Synchronous, answered by ``tx.rollback-ok``.
    """

    __slots__ = ()
    __match_args__ = ()
    CLASS_ID = 90
    METHOD_ID = 30
    INDEX = 0x005A001E
    NAME = 'tx.rollback'
    SYNCHRONOUS = True
    HAS_CONTENT = False
    ARGUMENTS = _SPECS[62].arguments

    def encode(self) -> bytes:
        return b"\x00\x5a\x00\x1e"


def _decode_tx_rollback(p: bytes) -> TxRollback:
    if len(p) != 4:
        raise bad_length(TxRollback, 4, len(p))
    return _new(TxRollback)


@final
class TxRollbackOk(Method):
    """``tx.rollback-ok`` (90, 31): Confirm successful rollback.

    Asynchronous.
    """

    __slots__ = ()
    __match_args__ = ()
    CLASS_ID = 90
    METHOD_ID = 31
    INDEX = 0x005A001F
    NAME = 'tx.rollback-ok'
    SYNCHRONOUS = False
    HAS_CONTENT = False
    ARGUMENTS = _SPECS[63].arguments
    REPLIES = ()

    def encode(self) -> bytes:
        return b"\x00\x5a\x00\x1f"


def _decode_tx_rollback_ok(p: bytes) -> TxRollbackOk:
    if len(p) != 4:
        raise bad_length(TxRollbackOk, 4, len(p))
    return _new(TxRollbackOk)


ConnectionStart.REPLIES = (ConnectionStartOk,)
ConnectionSecure.REPLIES = (ConnectionSecureOk,)
ConnectionTune.REPLIES = (ConnectionTuneOk,)
ConnectionOpen.REPLIES = (ConnectionOpenOk,)
ConnectionClose.REPLIES = (ConnectionCloseOk,)
ConnectionUpdateSecret.REPLIES = (ConnectionUpdateSecretOk,)
ChannelOpen.REPLIES = (ChannelOpenOk,)
ChannelFlow.REPLIES = (ChannelFlowOk,)
ChannelClose.REPLIES = (ChannelCloseOk,)
ExchangeDeclare.REPLIES = (ExchangeDeclareOk,)
ExchangeDelete.REPLIES = (ExchangeDeleteOk,)
ExchangeBind.REPLIES = (ExchangeBindOk,)
ExchangeUnbind.REPLIES = (ExchangeUnbindOk,)
QueueDeclare.REPLIES = (QueueDeclareOk,)
QueueBind.REPLIES = (QueueBindOk,)
QueuePurge.REPLIES = (QueuePurgeOk,)
QueueDelete.REPLIES = (QueueDeleteOk,)
QueueUnbind.REPLIES = (QueueUnbindOk,)
BasicQos.REPLIES = (BasicQosOk,)
BasicConsume.REPLIES = (BasicConsumeOk,)
BasicCancel.REPLIES = (BasicCancelOk,)
BasicGet.REPLIES = (BasicGetOk, BasicGetEmpty)
BasicRecover.REPLIES = (BasicRecoverOk,)
ConfirmSelect.REPLIES = (ConfirmSelectOk,)
TxSelect.REPLIES = (TxSelectOk,)
TxCommit.REPLIES = (TxCommitOk,)
TxRollback.REPLIES = (TxRollbackOk,)

#: Every method class, by ``INDEX`` (class id << 16 | method id).
METHOD_CLASSES: Final[dict[int, type[Method]]] = {
    0x000A000A: ConnectionStart,
    0x000A000B: ConnectionStartOk,
    0x000A0014: ConnectionSecure,
    0x000A0015: ConnectionSecureOk,
    0x000A001E: ConnectionTune,
    0x000A001F: ConnectionTuneOk,
    0x000A0028: ConnectionOpen,
    0x000A0029: ConnectionOpenOk,
    0x000A0032: ConnectionClose,
    0x000A0033: ConnectionCloseOk,
    0x000A003C: ConnectionBlocked,
    0x000A003D: ConnectionUnblocked,
    0x000A0046: ConnectionUpdateSecret,
    0x000A0047: ConnectionUpdateSecretOk,
    0x0014000A: ChannelOpen,
    0x0014000B: ChannelOpenOk,
    0x00140014: ChannelFlow,
    0x00140015: ChannelFlowOk,
    0x00140028: ChannelClose,
    0x00140029: ChannelCloseOk,
    0x0028000A: ExchangeDeclare,
    0x0028000B: ExchangeDeclareOk,
    0x00280014: ExchangeDelete,
    0x00280015: ExchangeDeleteOk,
    0x0028001E: ExchangeBind,
    0x0028001F: ExchangeBindOk,
    0x00280028: ExchangeUnbind,
    0x00280033: ExchangeUnbindOk,
    0x0032000A: QueueDeclare,
    0x0032000B: QueueDeclareOk,
    0x00320014: QueueBind,
    0x00320015: QueueBindOk,
    0x0032001E: QueuePurge,
    0x0032001F: QueuePurgeOk,
    0x00320028: QueueDelete,
    0x00320029: QueueDeleteOk,
    0x00320032: QueueUnbind,
    0x00320033: QueueUnbindOk,
    0x003C000A: BasicQos,
    0x003C000B: BasicQosOk,
    0x003C0014: BasicConsume,
    0x003C0015: BasicConsumeOk,
    0x003C001E: BasicCancel,
    0x003C001F: BasicCancelOk,
    0x003C0028: BasicPublish,
    0x003C0032: BasicReturn,
    0x003C003C: BasicDeliver,
    0x003C0046: BasicGet,
    0x003C0047: BasicGetOk,
    0x003C0048: BasicGetEmpty,
    0x003C0050: BasicAck,
    0x003C005A: BasicReject,
    0x003C0064: BasicRecoverAsync,
    0x003C006E: BasicRecover,
    0x003C006F: BasicRecoverOk,
    0x003C0078: BasicNack,
    0x0055000A: ConfirmSelect,
    0x0055000B: ConfirmSelectOk,
    0x005A000A: TxSelect,
    0x005A000B: TxSelectOk,
    0x005A0014: TxCommit,
    0x005A0015: TxCommitOk,
    0x005A001E: TxRollback,
    0x005A001F: TxRollbackOk,
}

#: The decoder of each method, by ``INDEX``.
DECODERS: Final[dict[int, Callable[[bytes], Method]]] = {
    0x000A000A: _decode_connection_start,
    0x000A000B: _decode_connection_start_ok,
    0x000A0014: _decode_connection_secure,
    0x000A0015: _decode_connection_secure_ok,
    0x000A001E: _decode_connection_tune,
    0x000A001F: _decode_connection_tune_ok,
    0x000A0028: _decode_connection_open,
    0x000A0029: _decode_connection_open_ok,
    0x000A0032: _decode_connection_close,
    0x000A0033: _decode_connection_close_ok,
    0x000A003C: _decode_connection_blocked,
    0x000A003D: _decode_connection_unblocked,
    0x000A0046: _decode_connection_update_secret,
    0x000A0047: _decode_connection_update_secret_ok,
    0x0014000A: _decode_channel_open,
    0x0014000B: _decode_channel_open_ok,
    0x00140014: _decode_channel_flow,
    0x00140015: _decode_channel_flow_ok,
    0x00140028: _decode_channel_close,
    0x00140029: _decode_channel_close_ok,
    0x0028000A: _decode_exchange_declare,
    0x0028000B: _decode_exchange_declare_ok,
    0x00280014: _decode_exchange_delete,
    0x00280015: _decode_exchange_delete_ok,
    0x0028001E: _decode_exchange_bind,
    0x0028001F: _decode_exchange_bind_ok,
    0x00280028: _decode_exchange_unbind,
    0x00280033: _decode_exchange_unbind_ok,
    0x0032000A: _decode_queue_declare,
    0x0032000B: _decode_queue_declare_ok,
    0x00320014: _decode_queue_bind,
    0x00320015: _decode_queue_bind_ok,
    0x0032001E: _decode_queue_purge,
    0x0032001F: _decode_queue_purge_ok,
    0x00320028: _decode_queue_delete,
    0x00320029: _decode_queue_delete_ok,
    0x00320032: _decode_queue_unbind,
    0x00320033: _decode_queue_unbind_ok,
    0x003C000A: _decode_basic_qos,
    0x003C000B: _decode_basic_qos_ok,
    0x003C0014: _decode_basic_consume,
    0x003C0015: _decode_basic_consume_ok,
    0x003C001E: _decode_basic_cancel,
    0x003C001F: _decode_basic_cancel_ok,
    0x003C0028: _decode_basic_publish,
    0x003C0032: _decode_basic_return,
    0x003C003C: _decode_basic_deliver,
    0x003C0046: _decode_basic_get,
    0x003C0047: _decode_basic_get_ok,
    0x003C0048: _decode_basic_get_empty,
    0x003C0050: _decode_basic_ack,
    0x003C005A: _decode_basic_reject,
    0x003C0064: _decode_basic_recover_async,
    0x003C006E: _decode_basic_recover,
    0x003C006F: _decode_basic_recover_ok,
    0x003C0078: _decode_basic_nack,
    0x0055000A: _decode_confirm_select,
    0x0055000B: _decode_confirm_select_ok,
    0x005A000A: _decode_tx_select,
    0x005A000B: _decode_tx_select_ok,
    0x005A0014: _decode_tx_commit,
    0x005A0015: _decode_tx_commit_ok,
    0x005A001E: _decode_tx_rollback,
    0x005A001F: _decode_tx_rollback_ok,
}
