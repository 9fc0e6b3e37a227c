"""Users, passwords and permissions: who may connect, to which virtual host, and do what.

Theory of operation
-------------------
This module is RabbitMQ 3.10's internal authentication and authorization backend
(``rabbit_auth_backend_internal``, ``rabbit_access_control``, ``rabbit_password``) and the
permission checks of ``rabbit_channel``, in one place. Everything here is plain data read under
the broker's lock; nothing is cached, so a change of permissions counts from the next check.

**Users.** :class:`AccessControl` keeps the users (name, password, tags), their permissions per
virtual host (three regular expressions: configure, write, read) and their topic permissions per
exchange (two: write, read). A password is kept as given (a plain string) or as RabbitMQ's salted
hash (:class:`HashedPassword`, from a definitions file): base64 of a 4-byte salt followed by
``hash(salt + password)``, the hash named by ``hashing_algorithm`` (SHA-256, SHA-512 or MD5).

**Logging in** (connection.start-ok, :meth:`AccessControl.login`): the user must exist, the
password must not be blank and must match (a user without a password never logs in with one),
and a user listed in ``loopback_users`` (``guest`` by default) must come over a loopback
interface. Every refusal looks the same to the client (403 "Login was refused..."), as in
RabbitMQ.

**Opening a vhost** (connection.open, :meth:`AccessControl.check_vhost`): the user needs a
permissions entry for it, whatever its expressions (530 "access to vhost '/' refused for user
'bob'").

**Each operation** (:class:`Grant`, one per connection) checks what ``rabbit_channel`` checks,
in RabbitMQ's order, before the model acts (a denied operation changes nothing):

=====================================  ====================================================
operation                              permissions
=====================================  ====================================================
exchange.declare                       configure on the exchange; a new exchange with an
                                       ``alternate-exchange``: read on it, write on the AE
exchange.delete                        configure on the exchange
queue.declare                          configure on the queue (server-named: on the name the
                                       server made); a new queue with a dead-letter
                                       exchange: read on the queue, write on the DLX
queue.delete                           configure on the queue
queue.bind / unbind, exchange.bind /   write on the destination, read on the source; on a
unbind                                 topic source, the topic read permission on the key
basic.publish                          write on the exchange (the default exchange is
                                       ``amq.default``); on a topic exchange, the topic
                                       write permission on the routing key
basic.consume, basic.get, queue.purge  read on the queue
passive declares, everything else      nothing
=====================================  ====================================================

An expression grants a name when it matches somewhere in it (PCRE's ``re:run``, here Python's
:mod:`re` over the UTF-8 bytes, so ``.`` is one byte as in RabbitMQ); ``""`` grants nothing
(``^$`` matches only the empty name). A refusal is 403 "access to queue 'q' in vhost '/' refused
for user 'alice'". A topic permission with no entry for the exchange allows every key; its
expressions may use ``{username}`` and ``{vhost}``, replaced before matching.

**Who is checked.** Every connection over the wire; an in-process connection opened with
``broker.connect(user=...)`` (as RabbitMQ's direct connections, without a password); not the
in-process connection a test opens with plain ``broker.connect()``, nor the broker's own work
(definitions, dead-lettering, alternate exchanges).

**Changes while connected.** Permissions count from the next check; clearing them leaves the
connection open. Deleting a user closes its connections (320 CONNECTION_FORCED "user 'bob' is
deleted"). Tags are read at login: the ``impersonator`` tag lets a user publish with another
user's ``user_id``.

**Default users.** The users a broker is made with (``Broker(users=...)``, guest/guest by
default; ``serve --user``) act as the administrators who create its virtual hosts: each gets
full permissions (``.*``, ``.*``, ``.*``) on every virtual host when it is created (``/`` and the
others given to ``Broker``, :meth:`~embroker.Broker.add_vhost`, a definitions file's vhosts), as
RabbitMQ grants them to the user who creates a vhost. From then on they are ordinary
permissions: :meth:`UserAdministration.set_permissions` and ``clear_permissions`` change them per
vhost, and a definitions file's ``permissions`` replace them. So a broker nobody restricts
behaves as before permissions were enforced. Users added with
:meth:`UserAdministration.add_user` or loaded from definitions start with none, as in RabbitMQ.

Where embroker differs: RabbitMQ's channels cache up to 12 recent successful checks until the
channel goes idle, so for a moment an open channel may still do what a revoked permission
allowed; embroker checks afresh every time. Expressions are Python's syntax, so PCRE-only
syntax (``\\Q...\\E``...) is refused when set; they are matched by :mod:`embroker._regex` in
time linear in the name, or by :mod:`re` for what needs it (lookarounds: ``^(?!amq\\.).*``).
One too costly to compile (:class:`embroker._regex.PatternTooCostly`: longer than 1,024
characters, groups nested deeper than 50...) is refused when set, as an invalid one.

**The management API** names one of RabbitMQ's rules for each of its methods (:class:`Rule`,
``rabbit_mgmt_util:is_authorized_*``); :meth:`AccessControl.authorize` is what each rule
means, and :meth:`AccessControl.visible_vhosts`, :meth:`~AccessControl.listed_vhosts` and
:meth:`~AccessControl.sees_items_of` what its listings show a user.
"""

from __future__ import annotations

import base64
import enum
import hashlib
import hmac
import ipaddress
import os
import re
import threading
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, Final, NamedTuple, final

from .. import _erlang, _regex
from ..errors import (
    AccessControlError,
    AccessRefused,
    ConnectionForced,
    DefinitionsError,
    NotAllowed,
    Refusal,
)
from ._definitions_schema import no_such_vhost
from ._exchange import EXCHANGE_TYPES
from ._names import is_default_exchange, reserved

if TYPE_CHECKING:
    from ._broker import Broker
    from ._connection import Connection
    from ._message import Message
    from ._plugins import Plugins
    from ._vhost import VirtualHost

__all__ = [
    "FULL_ACCESS",
    "HASHING_ALGORITHMS",
    "MANAGEMENT_TAGS",
    "MD5",
    "NO_ITEM",
    "SHA256",
    "SHA512",
    "USER_LIMITS",
    "AccessControl",
    "AuthAttempts",
    "Grant",
    "HashedPassword",
    "ManagementRefused",
    "Permissions",
    "Rule",
    "TopicPermissions",
    "User",
    "UserAdministration",
    "certificate_login",
    "hash_password",
    "is_loopback",
    "login_refusal",
]

# -- the management API's tags and rules -----------------------------------------------------------

#: The user tags the management API knows (``rabbit_mgmt_util``), most powerful first.
MANAGEMENT_TAGS: Final = ("administrator", "monitoring", "policymaker", "management")


class ManagementRefused(AccessControlError):
    """The management API refuses a user (HTTP 401, ``not_authorised``): RabbitMQ's reason as
    the text (``"Not administrator user"``). ``challenge``: the credentials themselves failed
    (the answer asks for others, ``WWW-Authenticate``)."""

    def __init__(self, reason: str, *, challenge: bool = False) -> None:
        super().__init__(reason)
        self.reason = reason
        self.challenge = challenge


@final
class Rule(enum.Enum):
    """Who may use a method of a management API route: RabbitMQ 3.10.8's vocabulary
    (``rabbit_mgmt_util:is_authorized*``), each value its function's name. A route names one
    rule per method; :meth:`AccessControl.authorize` is what each rule means, once.

    The vhost a rule looks at is the one the path names; a vhost that does not exist passes
    (``rabbit_mgmt_util:vhost/1`` answers ``not_found``, which every rule lets through), so the
    route's own answer is the 404.
    """

    #: No credentials at all (``/api/auth``: the login page asks it before logging in).
    PUBLIC = "none"
    #: Any management user (``is_authorized``).
    ANY = "is_authorized"
    #: Administrators (``is_authorized_admin``).
    ADMIN = "is_authorized_admin"
    #: Administrators and monitoring users (``is_authorized_monitor``).
    MONITOR = "is_authorized_monitor"
    #: Administrators, and users with a permissions entry in the path's vhost
    #: (``is_authorized_vhost``).
    VHOST = "is_authorized_vhost"
    #: Administrators, monitoring users, and users with a permissions entry in the path's vhost
    #: (``is_authorized_vhost_visible``).
    VHOST_VISIBLE = "is_authorized_vhost_visible"
    #: Administrators, and policymakers with a permissions entry in the path's vhost
    #: (``is_authorized_policies``).
    POLICIES = "is_authorized_policies"
    #: Policymakers and administrators (``is_authorized_global_parameters``).
    GLOBAL_PARAMETERS = "is_authorized_global_parameters"
    #: The item's own user; besides, monitoring users may read it and administrators may
    #: delete it (``is_authorized_user``: connections and channels).
    OWNER = "is_authorized_user"


#: :meth:`AccessControl.authorize`'s ``owner`` for an item that does not exist.
NO_ITEM: Final = object()

_NOT_ADMIN: Final = "Not administrator user"
_NO_VHOST: Final = "User not authorised to access virtual host"
_NO_OBJECT: Final = "User not authorised to access object"


# -- passwords ---------------------------------------------------------------------------------

#: ``hashing_algorithm`` values (RabbitMQ's module names) and the hash each one names.
SHA256: Final = "rabbit_password_hashing_sha256"
SHA512: Final = "rabbit_password_hashing_sha512"
MD5: Final = "rabbit_password_hashing_md5"
HASHING_ALGORITHMS: Final[Mapping[str, Callable[[bytes], Any]]] = {
    SHA256: hashlib.sha256, SHA512: hashlib.sha512, MD5: hashlib.md5,
}


@final
class HashedPassword(str):
    """A password known only by its RabbitMQ hash (base64 of a 4-byte salt and
    ``hash(salt + password)``): compares equal to the passwords it matches.

    >>> stored = HashedPassword(hash_password("s3cret"))
    >>> stored == "s3cret", stored != "wrong"
    (True, True)

    An empty hash (a user without a password) matches no password.

    Raises:
        DefinitionsError: an unknown ``algorithm``.
    """

    algorithm: str

    def __new__(cls, password_hash: str, algorithm: str = SHA256) -> HashedPassword:
        if algorithm not in HASHING_ALGORITHMS:
            raise DefinitionsError(f"unknown hashing_algorithm {algorithm!r} (embroker knows "
                                   f"{', '.join(HASHING_ALGORITHMS)})")
        self = super().__new__(cls, password_hash)
        self.algorithm = algorithm
        return self

    def matches(self, password: str) -> bool:
        """Whether ``password`` hashes to this hash (``rabbit_auth_backend_internal``)."""
        try:
            raw = base64.b64decode(str(self), validate=True)
        except ValueError:
            return False
        if len(raw) < 4:  # no salt: no password can match
            return False
        salt, digest = raw[:4], raw[4:]
        computed = HASHING_ALGORITHMS[self.algorithm](salt + password.encode()).digest()
        return hmac.compare_digest(computed, digest)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, HashedPassword):
            return str.__eq__(self, other)
        return isinstance(other, str) and self.matches(other)

    def __ne__(self, other: object) -> bool:
        return not self.__eq__(other)

    __hash__ = str.__hash__

    def __repr__(self) -> str:
        return f"HashedPassword({str(self)!r})"


def hash_password(password: str, salt: bytes | None = None, algorithm: str = SHA256) -> str:
    """RabbitMQ's hash of ``password`` (``rabbit_password:hash/2``): base64 of a 4-byte salt
    (random unless given) followed by ``hash(salt + password)``."""
    salt = os.urandom(4) if salt is None else salt
    digest = HASHING_ALGORITHMS[algorithm](salt + password.encode()).digest()
    return base64.b64encode(salt + digest).decode()


def _password_matches(stored: str, given: str) -> bool:
    if isinstance(stored, HashedPassword):
        return stored.matches(given)
    return hmac.compare_digest(stored.encode(), given.encode())


# -- addresses ---------------------------------------------------------------------------------


def is_loopback(address: ipaddress.IPv4Address | ipaddress.IPv6Address) -> bool:
    """Whether ``address`` is a loopback address as RabbitMQ counts them (``rabbit_net``):
    127.0.0.0/8, ``::1``, and 127.0.0.0/8 mapped into IPv6 (``::ffff:127.0.0.1``).

    >>> is_loopback(ipaddress.ip_address("127.0.0.2")), is_loopback(ipaddress.ip_address("::1"))
    (True, True)
    >>> is_loopback(ipaddress.ip_address("::ffff:127.0.0.1"))
    True
    >>> is_loopback(ipaddress.ip_address("192.0.2.7"))
    False
    """
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        return address.ipv4_mapped.is_loopback
    return address.is_loopback


# -- permissions -------------------------------------------------------------------------------


class Permissions(NamedTuple):
    """A user's permissions in a virtual host: three regular expressions over resource names."""

    configure: str
    write: str
    read: str


class TopicPermissions(NamedTuple):
    """A user's topic permissions on one topic exchange: expressions over routing keys."""

    exchange: str
    write: str
    read: str


#: The limits a user may have (``rabbit_auth_backend_internal:user_limit_validation``).
USER_LIMITS: Final = ("max-connections", "max-channels")

#: What the default users have on every virtual host.
FULL_ACCESS: Final = Permissions(".*", ".*", ".*")


def _grants(expression: str, name: str) -> bool:
    """Whether a permission expression grants ``name``: RabbitMQ's ``re:run`` (a match
    anywhere), with ``""`` meaning ``^$``; matched over the UTF-8 bytes by
    :func:`embroker._regex.compile_set` (in linear time unless it needs a lookaround)."""
    if expression == ".*":
        return True
    try:
        compiled = _regex.compile_set((expression or "^$").encode())
    except re.error:
        return False
    return bool(compiled.search(name.encode()))


def _validate_expression(expression: str) -> None:
    try:
        _regex.compile_set(expression.encode())
    except re.error as exc:
        raise AccessControlError(f"invalid regular expression '{expression}': {exc}") from None


def user_limits(limits: Mapping[str, Any]) -> dict[str, int]:
    """``limits`` as RabbitMQ's ``user_limit_validation`` takes them: ``max-connections`` and
    ``max-channels``, integers.

    Raises:
        AccessControlError: a value that is not an integer, or another key (RabbitMQ's reason).
    """
    checked: dict[str, int] = {}
    for key in USER_LIMITS:  # (rabbit_parameter_validation:proplist/3: constraints first)
        if key not in limits:
            continue
        value = limits[key]
        if not isinstance(value, int) or isinstance(value, bool):
            raise AccessControlError(
                f"{key} should be a number, actually was {_erlang.term(value)}")
        checked[key] = value
    unknown = sorted((k, v) for k, v in limits.items() if k not in USER_LIMITS)
    if unknown:
        raise AccessControlError(f"Unrecognised terms {_erlang.term(unknown)} in user-limits")
    return checked


def topic_variables(user: str, vhost: str, **more: str) -> dict[str, str]:
    """The variables a topic permission's pattern may name: ``{username}`` and ``{vhost}``
    (``rabbit_channel``'s ``variable_map``), and what a protocol adds to them (MQTT's
    ``client_id``: ``rabbit_mqtt_processor``'s map, v3.10.8)."""
    return {"username": user, "vhost": vhost, **more}


def _expand_topic_variables(expression: str, variables: Mapping[str, str]) -> str:
    # rabbit_auth_backend_internal:expand_topic_permission/2 folds over the variable map in
    # its key order (binaries: byte order; client_id, username, vhost), replacing "{Key}".
    for key in sorted(variables, key=lambda name: name.encode("utf-8")):
        expression = expression.replace("{" + key + "}", variables[key])
    return expression


@final
class User:
    """A user: name, password (plain, or a :class:`HashedPassword`), tags and limits
    (validated, enforced when its connections and channels open), and whether it is one of the broker's
    default users (given full permissions on each virtual host created)."""

    __slots__ = ("default", "limits", "name", "password", "tags")

    def __init__(self, name: str, password: str, *, tags: Iterable[str] = (),
                 limits: Mapping[str, Any] | None = None, default: bool = False) -> None:
        self.name = name
        self.password = password
        self.tags = list(tags)
        self.limits: dict[str, Any] = dict(limits or {})
        self.default = default

    def __repr__(self) -> str:
        return f"<User '{self.name}' tags={self.tags}{' (default)' if self.default else ''}>"


@final
class AuthAttempts:
    """How many times clients tried to log in, and how it went, per protocol
    (``rabbit_core_metrics``: ``auth_attempts``, ``auth_attempts_failed``,
    ``auth_attempts_succeeded``), as the management API's ``/api/auth/attempts/{node}`` shows
    them; and per source (client address, user, protocol) when :attr:`track_sources` is on
    (RabbitMQ's ``track_auth_attempt_source``, off by default: the sources of a broker open to
    the world are unbounded). Counted by :class:`AccessControl` where each login is decided.

    Cost: one dictionary update per login (two while sources are tracked); at most
    :data:`MAX_SOURCES` sources are kept, and past that only new sources go uncounted by
    source (their protocol still counts them).
    """

    #: The most sources kept while :attr:`track_sources` is on.
    MAX_SOURCES: Final = 10_000

    def __init__(self) -> None:
        #: Count per source too (address, user, protocol); a change counts from the next
        #: login.
        self.track_sources = False
        self._protocols: dict[str, list[int]] = {}
        self._sources: dict[tuple[str, str, str], list[int]] = {}

    def record(self, protocol: str, succeeded: bool, *, address: str = "",
               user: str = "") -> None:
        """Count one attempt over ``protocol`` (``amqp091``, ``amqp10``, ``stream``,
        ``http``) by ``user`` from ``address`` (either may be unknown: ``""``; an attempt
        with neither is not counted by source)."""
        _count(self._protocols, protocol, succeeded)
        if self.track_sources and (address or user):
            key = (address, user, protocol)
            if key in self._sources or len(self._sources) < self.MAX_SOURCES:
                _count(self._sources, key, succeeded)

    def by_protocol(self) -> list[dict[str, Any]]:
        """A row per protocol that had an attempt: ``protocol``, ``auth_attempts``,
        ``auth_attempts_failed``, ``auth_attempts_succeeded``."""
        return [{"protocol": protocol, **_attempts(counts)}
                for protocol, counts in self._protocols.items()]

    def by_source(self) -> list[dict[str, Any]]:
        """A row per source, :meth:`by_protocol`'s fields after ``remote_address`` and
        ``username`` (none unless :attr:`track_sources` was on)."""
        return [{"remote_address": address, "username": user, "protocol": protocol,
                 **_attempts(counts)}
                for (address, user, protocol), counts in self._sources.items()]

    def reset(self) -> None:
        """Forget every count (``rabbit_core_metrics:reset_auth_attempt_metrics``)."""
        self._protocols.clear()
        self._sources.clear()


def _count(table: dict[Any, list[int]], key: Any, succeeded: bool) -> None:
    counts = table.get(key)
    if counts is None:
        counts = table[key] = [0, 0, 0]
    counts[0] += 1
    counts[1 if succeeded else 2] += 1


def _attempts(counts: list[int]) -> dict[str, int]:
    return {"auth_attempts": counts[0], "auth_attempts_failed": counts[2],
            "auth_attempts_succeeded": counts[1]}


#: ``ssl``'s names of subject attributes and RabbitMQ's (``rabbit_cert_info:format_rdn/1``).
_ATTRIBUTES: Final = {
    "surname": "SN", "givenName": "GIVENNAME", "initials": "INITIALS",
    "generationQualifier": "GENERATIONQUALIFIER", "commonName": "CN", "localityName": "L",
    "stateOrProvinceName": "ST", "organizationName": "O", "organizationalUnitName": "OU",
    "title": "TITLE", "countryName": "C", "serialNumber": "SERIALNUMBER",
    "pseudonym": "PSEUDONYM", "domainComponent": "DC", "emailAddress": "EMAILADDRESS",
    "streetAddress": "STREET", "userId": "UID",
}


#: RabbitMQ's reasons for a refused login, as its log gives them (``rabbit_auth_backend_internal``,
#: ``rabbit_reader``, ``rabbit_auth_mechanism_ssl``, v3.10.8): by what :meth:`AccessControl.
#: check_login` and :meth:`AccessControl.check_external` answer.
_REFUSALS: Final = {
    "credentials": "user '{name}' - invalid credentials",
    "blank": "user '{name}' attempted to log in with a blank password, which is prohibited by "
             "the internal authN backend. To use TLS/x509 certificate-based authentication, "
             "see the rabbitmq_auth_mechanism_ssl plugin and configure the client to use the "
             "EXTERNAL authentication mechanism. Alternatively change the password for the "
             "user to be non-blank.",
    "loopback": "user '{name}' can only connect via localhost",
    "no certificate": "connection peer presented no TLS (x.509) certificate",
    "no name": "no name found",
}


def login_refusal(why: str, name: str = "", password: str | None = None) -> str:
    """Why a login of ``name`` was refused, in RabbitMQ's words for its log (``why``: what
    :meth:`AccessControl.check_login` or :meth:`AccessControl.check_external` answered; a
    blank ``password`` has its own text). The name is the client's: a log line escapes it
    (:func:`embroker._untrusted.log_text`).

    >>> login_refusal("credentials", "bob"), login_refusal("no certificate")
    ("user 'bob' - invalid credentials", 'connection peer presented no TLS (x.509) certificate')
    """
    if why == "credentials" and password == "":
        why = "blank"
    return _REFUSALS[why].format(name=name)


def certificate_login(certificate: Mapping[str, Any], login_from: str) -> str | None:
    """The user name SASL EXTERNAL takes from a verified client certificate (``ssl``'s
    decoded form), as RabbitMQ 3.10.8's ``rabbit_ssl:peer_cert_auth_name/2``:
    ``"distinguished_name"``, its subject with the last attribute first, joined by commas
    (``O=client,CN=host``: ``rabbit_cert_info:format_rdn_sequence/1``), values escaped as it
    escapes them; ``"common_name"``, its common names joined by commas. ``None``: no name.

    >>> subject = ((("commonName", "host"),), (("organizationName", "a,b"),))
    >>> certificate_login({"subject": subject}, "distinguished_name")
    'O=a\\\\,b,CN=host'
    >>> certificate_login({"subject": subject}, "common_name")
    'host'
    """
    subject = certificate.get("subject") or ()
    if login_from == "common_name":
        names = [value for rdn in subject for key, value in rdn if key == "commonName"]
        return ",".join(names) if names else None
    return ",".join("+".join(f"{_ATTRIBUTES.get(key, key)}={_escape(value)}"
                             for key, value in rdn) for rdn in reversed(subject))


def _escape(value: str) -> str:
    # rabbit_cert_info:escape_rdn_value/2: a leading space or #, a trailing space, and
    # "+,;<>\\ escaped with a backslash; bytes under 32 or from 126, as \\XX of their UTF-8
    out = []
    data = value.encode("utf-8")
    for index, byte in enumerate(data):
        char = chr(byte)
        if (index == 0 and char in " #") or (char == " " and index == len(data) - 1) \
                or char in '"+,;<>\\':
            out.append("\\" + char)
        elif byte < 32 or byte >= 126:
            out.append(f"\\{byte:02X}")
        else:
            out.append(char)
    return "".join(out)


@final
class AccessControl:
    """A broker's users and their permissions, and the checks RabbitMQ makes with them.

    Args:
        users: the default users (name: password): each gets full permissions on every virtual
            host created (see the module's documentation).
        loopback_users: users that may only connect over a loopback interface.
    """

    def __init__(self, users: Mapping[str, str], loopback_users: Iterable[str] = ("guest",)) -> None:
        self.users: dict[str, User] = {
            name: User(name, password, tags=["administrator"] if name == "guest" else [],
                       default=True)
            for name, password in users.items()}
        #: Names of the users refused unless they come over a loopback interface.
        self.loopback_users: set[str] = set(loopback_users)
        #: Who SASL ANONYMOUS logs in as, with which password (RabbitMQ 4's
        #: ``anonymous_login_user`` and ``anonymous_login_pass``, guest/guest by default; the
        #: password counts under the RabbitMQ 4 profile only): ``None`` switches it off.
        self.anonymous: tuple[str, str] | None = ("guest", "guest")
        self._permissions: dict[tuple[str, str], Permissions] = {}
        self._topic_permissions: dict[tuple[str, str, str], TopicPermissions] = {}
        #: The logins tried and how they went, per protocol (and per source when tracked).
        self.attempts = AuthAttempts()

    # -- authentication ------------------------------------------------------------------------

    def login(self, name: str, password: str, *, loopback: bool, protocol: str | None = None,
              address: str = "") -> bool:
        """Whether ``name`` may log in with ``password`` from a client that came over a loopback
        interface (``loopback``) or not: an existing user, a non-blank password that matches,
        and not a loopback-only user from elsewhere (:meth:`check_login`)."""
        return self.check_login(name, password, loopback=loopback, protocol=protocol,
                                address=address) is None

    def check_login(self, name: str, password: str, *, loopback: bool,
                    protocol: str | None = None, address: str = "") -> str | None:
        """Why ``name`` may not log in with ``password`` (``"credentials"``: no such user, a
        blank or wrong password; ``"loopback"``: a loopback-only user from elsewhere), or
        ``None``: it may. A client's login over ``protocol`` (``amqp091``, ``amqp10``,
        ``stream``) from ``address`` counts in :attr:`attempts`."""
        refused = None if self._credentials_match(name, password) else "credentials"
        if refused is None and not self.allowed_from(name, loopback=loopback):
            refused = "loopback"
        if protocol is not None:
            self.attempts.record(protocol, refused is None, address=address, user=name)
        return refused

    def _credentials_match(self, name: str, password: str) -> bool:
        """An existing user, and a non-blank password that matches (RabbitMQ refuses blank
        passwords outright)."""
        user = self.users.get(name)
        return user is not None and password != "" and _password_matches(user.password,
                                                                            password)

    def allowed_from(self, name: str, *, loopback: bool) -> bool:
        """Whether ``name`` may connect from where the client is: a loopback-only user (guest,
        RabbitMQ's ``loopback_users``) only over a loopback interface. Checked for any way of
        logging in, AMQP 1.0's SASL ANONYMOUS (no password) included."""
        return loopback or name not in self.loopback_users

    def login_external(self, certificate: Mapping[str, Any] | None, login_from: str, *,
                       loopback: bool, protocol: str, address: str = "") -> str | None:
        """SASL EXTERNAL (rabbit_auth_mechanism_ssl, v3.10.8): the user a verified client
        certificate (``ssl``'s decoded form; ``None``: none sent) logs in as, by its name
        (:func:`certificate_login`, ``login_from``), an existing user, no password asked
        (``rabbit_access_control:check_user_login/2`` with no credentials), from where the
        client is; ``None``: refused (:meth:`check_external` says why). Counted in
        :attr:`attempts`."""
        name, refused = self.check_external(certificate, login_from, loopback=loopback,
                                            protocol=protocol, address=address)
        return name if refused is None else None

    def check_external(self, certificate: Mapping[str, Any] | None, login_from: str, *,
                       loopback: bool, protocol: str, address: str = ""
                       ) -> tuple[str, str | None]:
        """:meth:`login_external`'s answer with its reason: the name the certificate gives
        (``""``: none) and why it may not log in (``"no certificate"``, ``"no name"``,
        ``"credentials"``: no such user, ``"loopback"``; texts by :func:`login_refusal`), or
        ``None``: it may."""
        if certificate is None:
            self.attempts.record(protocol, False, address=address)
            return "", "no certificate"
        name = certificate_login(certificate, login_from)
        if name is None:
            self.attempts.record(protocol, False, address=address)
            return "", "no name"
        refused = None if name in self.users else "credentials"
        if refused is None and not self.allowed_from(name, loopback=loopback):
            refused = "loopback"
        self.attempts.record(protocol, refused is None, address=address, user=name)
        return name, refused

    def login_anonymous(self, *, loopback: bool, rabbitmq4: bool) -> str | None:
        """SASL ANONYMOUS (AMQP 1.0): the user it logs in as, or ``None`` (refused, or
        switched off). RabbitMQ 4 logs in with :attr:`anonymous`'s name and password, so a
        changed password turns it off (``rabbit_auth_mechanism_anonymous:handle_response/2``:
        ``check_user_pass_login``); RabbitMQ 3.10's AMQP 1.0 plugin logs in as its
        ``default_user`` without a password. Either way the user keeps its loopback-only rule
        (guest's)."""
        if self.anonymous is None:
            return None
        user, password = self.anonymous
        if rabbitmq4:
            allowed = self.login(user, password, loopback=loopback)
        else:
            allowed = self.allowed_from(user, loopback=loopback)
        self.attempts.record("amqp10", allowed, user=user)
        return user if allowed else None

    # -- the management API (rabbit_mgmt_util) -------------------------------------------------

    def management_login(self, name: str, password: str, *, loopback: bool,
                         address: str = "") -> frozenset[str]:
        """Log in to the management API as RabbitMQ's ``rabbit_mgmt_util:is_authorized/6``
        does: the password, then the place (``loopback_users``), then one of
        :data:`MANAGEMENT_TAGS`. Returns the user's management tags. A refusal counts as a
        failed ``http`` attempt from ``address`` in :attr:`attempts` (a login that passes
        counts once :meth:`authorize` has let it through: RabbitMQ's attempt is the
        credentials and the route's rule together).

        Raises:
            ManagementRefused: ``"Login failed"`` (no such user, a wrong or blank password: the
                client is asked for credentials again), ``"User can only log in via
                localhost"``, ``"Not management user"``.
        """
        if not self._credentials_match(name, password):
            refused = ManagementRefused("Login failed", challenge=True)
        elif not self.allowed_from(name, loopback=loopback):
            refused = ManagementRefused("User can only log in via localhost")
        else:
            tags = self.management_tags(name)
            if tags:
                return tags
            refused = ManagementRefused("Not management user")
        self.attempts.record("http", False, address=address, user=name)
        raise refused

    def management_tags(self, name: str) -> frozenset[str]:
        """The management tags of ``name`` (:data:`MANAGEMENT_TAGS`), with what each implies
        (``rabbit_mgmt_util``: an administrator is a monitor and a policymaker too, and each
        of them a management user)."""
        user = self.users.get(name)
        tags = set(user.tags) & set(MANAGEMENT_TAGS) if user is not None else set()
        if "administrator" in tags:
            tags |= set(MANAGEMENT_TAGS)
        if tags & {"monitoring", "policymaker"}:
            tags.add("management")
        return frozenset(tags)

    def authorize(self, name: str, rule: Rule, *, vhost: str | None = None,
                  vhosts: Collection[str] = (), owner: object = NO_ITEM,
                  delete: bool = False, address: str | None = None) -> None:
        """Whether ``name`` (logged in, a management user) may use a method whose route names
        ``rule``: RabbitMQ 3.10.8's ``rabbit_mgmt_util:is_authorized_*`` functions. With an
        ``address`` (the HTTP client's), the answer ends the request's login, and counts in
        :attr:`attempts` as an ``http`` attempt that succeeded or failed.

        Args:
            vhost: the vhost the path names (``None``: it names none); ``vhosts``: the names
                of the vhosts that exist (one that does not passes, for the route to answer
                404).
            owner: for :attr:`Rule.OWNER`, the user of the item the path names
                (:data:`NO_ITEM` when there is none: only those who may see or delete any
                item are told so, everyone else is refused as for another user's item).
            delete: the method is DELETE (:attr:`Rule.OWNER`: administrators, not monitors).

        Raises:
            ManagementRefused: RabbitMQ's reason (``"Not administrator user"``, ``"User not
                authorised to access virtual host"``, ``"User not authorised to access
                object"``...).
        """
        if address is None:
            self._authorize(name, rule, vhost, vhosts, owner, delete)
            return
        try:
            self._authorize(name, rule, vhost, vhosts, owner, delete)
        except ManagementRefused:
            self.attempts.record("http", False, address=address, user=name)
            raise
        self.attempts.record("http", True, address=address, user=name)

    def _authorize(self, name: str, rule: Rule, vhost: str | None, vhosts: Collection[str],
                   owner: object, delete: bool) -> None:
        tags = self.management_tags(name)
        if "administrator" in tags or rule is Rule.PUBLIC or rule is Rule.ANY:
            return  # (an administrator is a monitor and a policymaker, and sees every vhost)
        if rule is Rule.ADMIN:
            raise ManagementRefused(_NOT_ADMIN)
        if rule is Rule.MONITOR:
            if "monitoring" not in tags:
                raise ManagementRefused("Not monitor user")
            return
        if rule is Rule.GLOBAL_PARAMETERS:
            if "policymaker" not in tags:
                raise ManagementRefused(_NO_OBJECT)
            return
        if rule is Rule.OWNER:
            if not delete and "monitoring" in tags:
                return
            if owner is NO_ITEM or owner != name:
                raise ManagementRefused(_NO_OBJECT)
            return
        in_vhost = vhost is None or vhost not in vhosts or \
            self.permissions(name, vhost) is not None
        if rule is Rule.VHOST_VISIBLE:
            in_vhost = in_vhost or "monitoring" in tags
        elif rule is Rule.POLICIES:
            if not (in_vhost and "policymaker" in tags):
                raise ManagementRefused(_NO_OBJECT)
            return
        if not in_vhost:
            raise ManagementRefused(_NO_VHOST)

    def login_vhosts(self, name: str, vhosts: Iterable[str]) -> list[str]:
        """The vhosts of ``vhosts`` where ``name`` has a permissions entry
        (``rabbit_mgmt_util:list_login_vhosts_names``)."""
        return [v for v in vhosts if self.permissions(name, v) is not None]

    def visible_vhosts(self, name: str, vhosts: Iterable[str]) -> list[str]:
        """The vhosts whose existence the management API shows ``name``
        (``list_visible_vhosts``): all of them to monitoring users and administrators, to
        others their :meth:`login_vhosts`."""
        if "monitoring" in self.management_tags(name):
            return list(vhosts)
        return self.login_vhosts(name, vhosts)

    def listed_vhosts(self, name: str, vhosts: Iterable[str]) -> list[str]:
        """The vhosts whose queues, exchanges, bindings and policies the management API's
        listings show ``name`` (``rabbit_mgmt_util:filter_vhost``): all of them to
        administrators, to others (monitoring users too) their :meth:`login_vhosts`."""
        if "administrator" in self.management_tags(name):
            return list(vhosts)
        return self.login_vhosts(name, vhosts)

    def sees_items_of(self, name: str, owner: str) -> bool:
        """Whether the management API lists the connections, channels and consumers of user
        ``owner`` to ``name`` (``rabbit_mgmt_util:filter_user``): their own, and everyone's
        to monitoring users and administrators."""
        return owner == name or "monitoring" in self.management_tags(name)

    def sees_node(self, name: str) -> bool:
        """Whether the management API's overview shows ``name`` the node's details (its name,
        listeners and contexts, and the consumer total): monitoring users and administrators
        (``rabbit_mgmt_wm_overview``: ``rabbit_mgmt_util:is_monitor``)."""
        return "monitoring" in self.management_tags(name)

    # -- authorization -------------------------------------------------------------------------

    def permissions(self, user: str, vhost: str) -> Permissions | None:
        """The permissions ``user`` has in ``vhost`` (None: no access to it)."""
        return self._permissions.get((user, vhost))

    def check_vhost(self, user: str, vhost: str) -> None:
        """Raise NotAllowed (530) unless ``user`` has permissions in ``vhost``."""
        if self.permissions(user, vhost) is None:
            raise NotAllowed(f"access to vhost '{vhost}' refused for user '{user}'",
                             reason=Refusal.PERMISSION)

    def check(self, user: str, vhost: str, kind: str, name: str, permission: str) -> None:
        """Raise AccessRefused (403) unless ``user`` has ``permission`` ("configure", "write"
        or "read") on the ``kind`` ("queue" or "exchange") called ``name`` in ``vhost``."""
        if kind == "exchange" and name == "":
            name = "amq.default"  # rabbit_access_control:check_resource_access/4
        granted = self.permissions(user, vhost)
        if granted is None or not _grants(getattr(granted, permission), name):
            raise AccessRefused(
                f"access to {kind} '{name}' in vhost '{vhost}' refused for user '{user}'",
                reason=Refusal.PERMISSION)

    def sees_message(self, name: str, vhost: str, queues: Iterable[str]) -> bool:
        """Whether what a message carried (its body, the headers an explanation quotes) may be
        shown to ``name``: an administrator, or a user who could get it, with read permission
        on a queue of ``vhost`` it reached (as ``basic.get`` checks it)."""
        if "administrator" in self.management_tags(name):
            return True
        granted = self.permissions(name, vhost)
        return granted is not None and any(_grants(granted.read, queue) for queue in queues)

    def check_topic(self, user: str, vhost: str, exchange: str, routing_key: str,
                    permission: str, variables: Mapping[str, str] | None = None) -> None:
        """Raise AccessRefused (403) unless the topic permission ``permission`` ("write" or
        "read") of ``user`` on ``exchange`` allows ``routing_key`` (no entry allows all), its
        pattern's variables expanded from ``variables`` (:func:`topic_variables`: the user's
        name and the vhost's by default)."""
        entry = self._topic_permissions.get((user, vhost, exchange))
        if entry is None:
            return
        expression = _expand_topic_variables(
            getattr(entry, permission),
            variables if variables is not None else topic_variables(user, vhost))
        if not _grants(expression, routing_key):
            raise AccessRefused(
                f"access to topic '{routing_key}' in exchange '{exchange}' in vhost '{vhost}' "
                f"refused for user '{user}'", reason=Refusal.PERMISSION)

    def topic_permissions(self, user: str, vhost: str) -> list[TopicPermissions]:
        """The topic permissions of ``user`` in ``vhost``, by exchange name."""
        return sorted(entry for (u, v, _x), entry in self._topic_permissions.items()
                      if u == user and v == vhost)

    # -- changes (the broker checks that users and vhosts exist) -------------------------------

    def vhost_added(self, vhost: str, created_by: str | None = None) -> None:
        """A virtual host was created: ``created_by`` (when it is a user) gets full
        permissions on it, and no one else, as RabbitMQ 3.10.8 gives them to the user who
        creates a vhost through the management API (``rabbit_vhost:add/2``, checked live: not
        guest); one created with no creator (in-process, ``rabbitmqctl``) gives them to the
        default users, so that a test's guest can use it."""
        for user in self.users.values():
            if user.name == created_by or (created_by is None and user.default):
                self._permissions.setdefault((user.name, vhost), FULL_ACCESS)

    def vhost_deleted(self, vhost: str) -> None:
        """A virtual host was deleted: every permission and topic permission in it goes."""
        for key in [k for k in self._permissions if k[1] == vhost]:
            del self._permissions[key]
        for tkey in [k for k in self._topic_permissions if k[1] == vhost]:
            del self._topic_permissions[tkey]

    def set_permissions(self, user: str, vhost: str, permissions: Permissions) -> None:
        for expression in permissions:
            _validate_expression(expression)
        self._permissions[(user, vhost)] = permissions

    def clear_permissions(self, user: str, vhost: str) -> None:
        self._permissions.pop((user, vhost), None)

    def set_topic_permissions(self, user: str, vhost: str, permissions: TopicPermissions) -> None:
        _validate_expression(permissions.write)
        _validate_expression(permissions.read)
        self._topic_permissions[(user, vhost, permissions.exchange)] = permissions

    def clear_topic_permissions(self, user: str, vhost: str, exchange: str | None = None) -> None:
        for key in [k for k in self._topic_permissions
                    if k[0] == user and k[1] == vhost and (exchange is None or k[2] == exchange)]:
            del self._topic_permissions[key]

    def forget(self, user: str) -> None:
        """Remove a user with its permissions and topic permissions."""
        self.users.pop(user, None)
        for key in [k for k in self._permissions if k[0] == user]:
            del self._permissions[key]
        for tkey in [k for k in self._topic_permissions if k[0] == user]:
            del self._topic_permissions[tkey]

    def grant(self, user: str, vhost: str, variables: Mapping[str, str] | None = None) -> Grant:
        """What a connection of ``user`` to ``vhost`` may do, checked live; ``variables``
        are what its protocol adds to its topic permissions' variables (MQTT's
        ``client_id``)."""
        return Grant(self, user, vhost, variables)


# -- what one connection may do ------------------------------------------------------------------


@final
class Grant:
    """The permission checks of one connection (``rabbit_channel``'s ``check_*_permitted``),
    each made at the point RabbitMQ makes it: a check is skipped when the model would refuse the
    operation for another reason first (an unknown exchange type, the default exchange...), so
    the error a client sees is RabbitMQ's.

    :data:`UNRESTRICTED` checks nothing (the in-process client's ``broker.connect()``).
    """

    __slots__ = ("_access", "impersonator", "topic_variables", "user", "vhost")

    def __init__(self, access: AccessControl | None, user: str, vhost: str,
                 variables: Mapping[str, str] | None = None) -> None:
        self._access = access
        #: The user checked (``""`` for :data:`UNRESTRICTED`).
        self.user = user
        self.vhost = vhost
        #: The variables its topic permissions' patterns are expanded with
        #: (:func:`topic_variables`).
        self.topic_variables = topic_variables(user, vhost, **(variables or {}))
        known = access.users.get(user) if access is not None else None
        #: Whether the user had the ``impersonator`` tag when it logged in (tags are read at
        #: login, as RabbitMQ's): it may publish with another user's ``user_id``
        #: (``rabbit_channel:check_user_id_header/2``).
        self.impersonator = known is not None and "impersonator" in known.tags

    @property
    def restricted(self) -> bool:
        return self._access is not None

    def __repr__(self) -> str:
        if self._access is None:
            return "<Grant unrestricted>"
        return f"<Grant user '{self.user}' in vhost '{self.vhost}'>"

    def _check(self, kind: str, name: str, permission: str) -> None:
        assert self._access is not None
        self._access.check(self.user, self.vhost, kind, name, permission)

    def exchange_declare(self, vhost: VirtualHost, name: str, type_: str,
                         arguments: Mapping[str, Any] | None) -> None:
        """exchange.declare, not passive (passive declares check nothing)."""
        if self._access is None or type_ not in EXCHANGE_TYPES or is_default_exchange(name):
            return  # 503 unknown type / 403 default exchange come first
        self._check("exchange", name, "configure")
        if name in vhost.exchanges or reserved(name):
            return  # an existing exchange (no AE check) / 403 reserved name
        alternate = (arguments or {}).get("alternate-exchange")
        if isinstance(alternate, str):  # another type is a 406 first
            self._check("exchange", name, "read")
            self._check("exchange", alternate, "write")

    def exchange_delete(self, name: str) -> None:
        if self._access is None or is_default_exchange(name) or reserved(name):
            return  # 403 default exchange / system exchange come first
        self._check("exchange", name, "configure")

    def queue_declare(self, vhost: VirtualHost, name: str, arguments: Mapping[str, Any]) -> None:
        """queue.declare, not passive, once the name is known (a server-made one included)."""
        if self._access is None:
            return
        self._check("queue", name, "configure")
        if name in vhost.queues:
            return
        dead_letter_exchange = arguments.get("x-dead-letter-exchange")
        if isinstance(dead_letter_exchange, str):  # another type is a 406 first
            self._check("queue", name, "read")
            self._check("exchange", dead_letter_exchange, "write")

    def queue_delete(self, name: str) -> None:
        if self._access is not None:
            self._check("queue", name, "configure")

    def read_queue(self, name: str) -> None:
        """basic.consume, basic.get, queue.purge."""
        if self._access is not None:
            self._check("queue", name, "read")

    def write_queue(self, name: str) -> None:
        """Publishing to a stream over the stream protocol (``rabbit_stream_reader`` checks
        write on the stream's queue resource)."""
        if self._access is not None:
            self._check("queue", name, "write")

    def bind(self, vhost: VirtualHost, source: str, kind: str, destination: str,
             routing_key: str) -> None:
        """queue.bind/unbind and exchange.bind/unbind (``kind``: the destination's)."""
        if self._access is None:
            return
        self._check(kind, destination, "write")
        if source == "" or (kind == "exchange" and destination == ""):
            return  # 403 default exchange comes first
        self._check("exchange", source, "read")
        exchange = vhost.exchanges.get(source)
        if exchange is not None and exchange.type == "topic":
            self._access.check_topic(self.user, self.vhost, source, routing_key, "read",
                                     self.topic_variables)

    def super_stream(self, name: str, partitions: Sequence[str]) -> None:
        """Creating or deleting super stream ``name`` over ``partitions`` (RabbitMQ 4.1's
        ``rabbit_stream_utils:check_super_stream_management_permitted/4``): configure on the
        exchange, configure on every partition, read on the exchange, write on every
        partition."""
        if self._access is None:
            return
        self._check("exchange", name, "configure")
        for partition in partitions:
            self._check("queue", partition, "configure")
        self._check("exchange", name, "read")
        for partition in partitions:
            self._check("queue", partition, "write")

    def write_exchange(self, name: str) -> None:
        """Publishing to exchange ``name`` at all: the write permission basic.publish checks
        first (and RabbitMQ 4's AMQP 1.0 checks when a link to the exchange attaches)."""
        if self._access is not None:
            self._check("exchange", name, "write")

    def read_topic(self, exchange: str, routing_key: str) -> None:
        """A subscription to ``routing_key`` of a topic exchange: the topic permission
        ``read`` (RabbitMQ 3.10's STOMP and MQTT plugins ask ``rabbit_access_control:
        check_topic_access/4`` before they subscribe; AMQP 0-9-1 never asks it).

        Raises:
            AccessRefused: (403) its pattern does not allow the key.
        """
        if self._access is not None:
            self._access.check_topic(self.user, self.vhost, exchange, routing_key, "read",
                                     self.topic_variables)

    def write_topic(self, exchange: str, routing_key: str) -> None:
        """A publish's topic authorisation asked before the publish, as RabbitMQ 3.10's MQTT
        plugin asks it (``check_publish/3``: a refusal ends its connection whatever channel
        the publish would have gone on).

        Raises:
            AccessRefused: (403) its pattern does not allow the key.
        """
        if self._access is not None:
            self._access.check_topic(self.user, self.vhost, exchange, routing_key, "write",
                                     self.topic_variables)

    def publish(self, vhost: VirtualHost, message: Message) -> None:
        """basic.publish (after the size check); a refusal is recorded on the trace, as the
        model's own refusals of a publish are."""
        access = self._access
        if access is None:
            return
        try:
            # The write check (AccessControl.check) with its common answer inlined: a user
            # whose write permission is ".*" may write to any exchange.
            granted = access._permissions.get((self.user, self.vhost))
            if granted is None or granted.write != ".*":
                self._check("exchange", message.exchange, "write")
            exchange = vhost.exchanges.get(message.exchange)
            if exchange is None or exchange.internal:
                return  # 404 / 403 internal come first
            if exchange.type == "topic":
                access.check_topic(self.user, self.vhost, message.exchange,
                                   message.routing_key, "write", self.topic_variables)
        except AccessRefused as error:
            vhost.refuse(message, error)


#: The grant of connections that are not checked.
UNRESTRICTED: Final = Grant(None, "", "")


# -- the broker's user administration -------------------------------------------------------------


class UserAdministration:
    """The broker's users and permissions, with ``rabbitmqctl``'s command names.

    Raises (every method):
        AccessControlError: no such user or vhost, a user that exists already, an invalid
            regular expression.
    """

    access: AccessControl
    vhosts: dict[str, VirtualHost]
    connections: dict[int, Connection]
    _lock: threading.RLock
    plugins: Plugins

    @property
    def users(self) -> Mapping[str, str]:
        """The users by name, with their passwords (plain, or a :class:`HashedPassword` that
        compares equal to the passwords it matches): a read-only snapshot, safe to read while
        the listener serves (change users with :meth:`add_user`...)."""
        with self._lock:
            return MappingProxyType({name: user.password
                                     for name, user in self.access.users.items()})

    def _user(self, name: str) -> User:
        try:
            return self.access.users[name]
        except KeyError:
            raise AccessControlError(f"no user '{name}'") from None

    def _vhost_name(self, vhost: str) -> str:
        if vhost not in self.vhosts:
            raise AccessControlError(f"no vhost '{vhost}'")
        return vhost

    def add_user(self, name: str, password: str, *, tags: Iterable[str] = ()) -> None:
        """``rabbitmqctl add_user``: a user with no permissions (see :meth:`set_permissions`).
        ``password`` may be a :class:`HashedPassword`."""
        with self._lock:
            if name in self.access.users:
                raise AccessControlError(f"user '{name}' already exists")
            self.access.users[name] = User(name, password, tags=tags)
            if self.plugins.events is not None:
                self.plugins.events.user_event("user.created", name)
                if tags:
                    self.plugins.events.user_event("user.tags.set", name, tags=list(tags))

    def delete_user(self, name: str) -> None:
        """``rabbitmqctl delete_user``: the user, its permissions and topic permissions go, and
        its connections are closed (320 CONNECTION_FORCED "user 'bob' is deleted")."""
        with self._lock:
            self._user(name)
            self.access.forget(name)
            if self.plugins.events is not None:
                self.plugins.events.user_event("user.deleted", name)
            for connection in list(self.connections.values()):
                if connection.access.restricted and connection.access.user == name:
                    connection.close_by_broker(ConnectionForced(f"user '{name}' is deleted"))

    def change_password(self, name: str, password: str) -> None:
        """``rabbitmqctl change_password`` (open connections stay open)."""
        with self._lock:
            self._user(name).password = password
            if self.plugins.events is not None:
                self.plugins.events.user_event("user.password.changed", name)

    def clear_password(self, name: str) -> None:
        """``rabbitmqctl clear_password``: the user can no longer log in with a password."""
        with self._lock:
            self._user(name).password = HashedPassword("")
            if self.plugins.events is not None:
                self.plugins.events.user_event("user.password.cleared", name)

    def set_user_limits(self, name: str, limits: Mapping[str, Any]) -> None:
        """``rabbitmqctl set_user_limits``: ``max-connections`` and ``max-channels``, integers,
        added to those the user has (RabbitMQ 3.10.8's ``set_user_limits/3``: its
        ``user_limit_validation``, then ``internal_user:update_limits(add, ...)``). A negative
        value is no limit, 0 refuses every connection or channel.

        Raises:
            AccessControlError: no such user; a value that is not an integer, or another key
                (RabbitMQ's reason, the text its management API answers with).
        """
        checked = user_limits(limits)
        with self._lock:
            user = self._user(name)
            user.limits = {**user.limits, **checked}

    def clear_user_limits(self, name: str, limit: str = "all") -> None:
        """``rabbitmqctl clear_user_limits``: one limit (``max-connections``,
        ``max-channels``), or ``all`` of them.

        Raises:
            AccessControlError: no such user.
        """
        with self._lock:
            user = self._user(name)
            if limit == "all":
                user.limits = {}
            else:
                user.limits.pop(limit, None)

    def user_limits(self, name: str | None = None) -> dict[str, dict[str, Any]]:
        """The users' limits by user name, those with limits only (``rabbitmqctl
        list_user_limits``); ``name``: that user's alone (none for a user that does not
        exist)."""
        with self._lock:
            users = self.access.users.values() if name is None else \
                [u for u in (self.access.users.get(name),) if u is not None]
            return {u.name: dict(u.limits) for u in users if u.limits}

    def user_limit(self, name: str, limit: str) -> int | None:
        """The user's limit ``limit`` in force: ``None`` for none, or a negative value
        (``rabbit_auth_backend_internal:get_user_limit/2``)."""
        user = self.access.users.get(name)
        value = user.limits.get(limit) if user is not None else None
        return value if isinstance(value, int) and value >= 0 else None

    def set_user_tags(self, name: str, *tags: str) -> None:
        """``rabbitmqctl set_user_tags``: ``impersonator`` (from the next login), and the
        management tags, which decide what the user may do in the management API
        (:class:`Rule`)."""
        with self._lock:
            self._user(name).tags = list(tags)
            if self.plugins.events is not None:
                self.plugins.events.user_event("user.tags.set", name, tags=list(tags))

    def set_permissions(self, user: str, configure: str, write: str, read: str, *,
                        vhost: str = "/") -> None:
        """``rabbitmqctl set_permissions [-p vhost] user conf write read``: regular expressions
        over the names of the queues and exchanges ``user`` may configure (declare, delete),
        write (publish to, bind to) and read (consume from, get from, purge, bind from)."""
        with self._lock:
            self._user(user)
            self.access.set_permissions(user, self._vhost_name(vhost),
                                        Permissions(configure, write, read))
            if self.plugins.events is not None:
                self.plugins.events.permission_set(user, vhost, configure, write, read)

    def clear_permissions(self, user: str, *, vhost: str = "/") -> None:
        """``rabbitmqctl clear_permissions [-p vhost] user``: no more access to ``vhost`` (open
        connections stay open, and each operation is refused)."""
        with self._lock:
            self._user(user)
            self.access.clear_permissions(user, self._vhost_name(vhost))
            if self.plugins.events is not None:
                self.plugins.events.permission_cleared(user, vhost)

    def set_topic_permissions(self, user: str, exchange: str, write: str, read: str, *,
                              vhost: str = "/") -> None:
        """``rabbitmqctl set_topic_permissions [-p vhost] user exchange write read``: regular
        expressions over the routing keys ``user`` may publish with (write) and bind with
        (read) on the topic exchange ``exchange``; ``{username}`` and ``{vhost}`` are replaced
        by the user's name and the vhost's."""
        with self._lock:
            self._user(user)
            self.access.set_topic_permissions(user, self._vhost_name(vhost),
                                              TopicPermissions(exchange, write, read))
            if self.plugins.events is not None:
                self.plugins.events.topic_permission_set(user, vhost, exchange, write, read)

    def clear_topic_permissions(self, user: str, exchange: str | None = None, *,
                                vhost: str = "/") -> None:
        """``rabbitmqctl clear_topic_permissions [-p vhost] user [exchange]``."""
        with self._lock:
            self._user(user)
            self.access.clear_topic_permissions(user, self._vhost_name(vhost), exchange)
            if self.plugins.events is not None:
                self.plugins.events.topic_permission_cleared(user, vhost)

    def list_permissions(self, vhost: str = "/") -> dict[str, Permissions]:
        """``rabbitmqctl list_permissions [-p vhost]``: user name -> permissions."""
        with self._lock:
            self._vhost_name(vhost)
            found = {name: self.access.permissions(name, vhost) for name in self.access.users}
            return {name: p for name, p in found.items() if p is not None}

    def list_topic_permissions(self, vhost: str = "/") -> dict[str, list[TopicPermissions]]:
        """``rabbitmqctl list_topic_permissions [-p vhost]``: user name -> topic permissions."""
        with self._lock:
            self._vhost_name(vhost)
            found = {name: self.access.topic_permissions(name, vhost)
                     for name in self.access.users}
            return {name: entries for name, entries in found.items() if entries}


# -- definitions: users, permissions, topic permissions ------------------------------------------
# (Each takes one item of a section as the definitions schema made it: the fields of the right
# types, the required ones there; see ._definitions_schema.)


def _hashing_algorithm(item: Mapping[str, Any], version: str | None) -> str:
    # rabbit_auth_backend_internal:hashing_algorithm/2: exports before 3.6 did not say.
    algorithm = item.get("hashing_algorithm")
    if algorithm is not None:
        return str(algorithm)
    if version is not None and re.match(r"3\.[0-5]\.", version):
        return MD5
    return SHA256


def _base64(text: str) -> str:
    try:
        base64.b64decode(text, validate=True)
    except ValueError:
        raise DefinitionsError(f"password_hash is not base64: {text!r}") from None
    return text


def load_user(broker: Broker, item: Mapping[str, Any], version: str | None) -> None:
    """One item of ``users``, as RabbitMQ's import puts it
    (``rabbit_auth_backend_internal:put_user/3``): its limits checked first; an existing user
    gets the new password and tags; a user with neither ``password`` nor ``password_hash``
    gets no password (it cannot log in with one). ``version``: the exporter's (a hash without
    ``hashing_algorithm`` from before 3.6 is MD5).

    Raises:
        AccessControlError: limits RabbitMQ refuses.
        DefinitionsError: an unknown hashing algorithm, a hash that is not base64.
    """
    access = broker.access
    name = item["name"]
    tags = item["tags"] if "tags" in item else ["administrator"] if item["administrator"] else []
    limits = user_limits(item["limits"]) if "limits" in item else None
    password: str
    if "password" in item:
        password = item["password"]
    else:
        stored = HashedPassword(_base64(item.get("password_hash", "")),
                                _hashing_algorithm(item, version))
        known = access.users.get(name)
        # Keep a known plain password that the hash confirms (guest/guest, typically): the
        # listener's URL can then carry it.
        password = known.password if known is not None and stored.matches(
            known.password) and not isinstance(known.password, HashedPassword) else stored
    user = access.users.get(name)
    if user is None:
        access.users[name] = User(name, password, tags=tags, limits=limits)
    else:
        user.password, user.tags = password, tags
        if limits:
            user.limits = limits


def load_permissions(broker: Broker, item: Mapping[str, Any], vhost: str | None) -> None:
    """One item of ``permissions`` (or, with an ``exchange``, of ``topic_permissions``) in
    ``vhost``, checked in RabbitMQ's order (``set_permissions/6``): the expressions, the
    user, the vhost.

    Raises:
        AccessControlError: an expression that is not a regular expression.
        DefinitionsError: no such user or vhost (reason ``["no_such_user", NAME]``,
            ``["no_such_vhost", NAME]``, RabbitMQ's).
    """
    access = broker.access
    topic = "exchange" in item
    permissions: Permissions | TopicPermissions = (
        TopicPermissions(item["exchange"], item["write"], item["read"]) if topic else
        Permissions(item["configure"], item["write"], item["read"]))
    for expression in permissions[1:] if topic else permissions:
        _validate_expression(expression)
    user = item["user"]
    if user not in access.users:
        raise DefinitionsError(f"User '{user}' does not exist", reason=["no_such_user", user])
    if vhost is None or vhost not in broker.vhosts:
        raise no_such_vhost(vhost)
    if isinstance(permissions, TopicPermissions):
        access.set_topic_permissions(user, vhost, permissions)
    else:
        access.set_permissions(user, vhost, permissions)


def export_users(broker: Broker) -> tuple[list[dict[str, Any]], list[dict[str, Any]],
                                          list[dict[str, Any]]]:
    """The ``users``, ``permissions`` and ``topic_permissions`` sections of a definitions
    document (plain passwords as SHA-256 hashes)."""
    access = broker.access
    users = []
    for user in access.users.values():
        if isinstance(user.password, HashedPassword):
            password_hash, algorithm = str(user.password), user.password.algorithm
        else:
            password_hash, algorithm = hash_password(user.password), SHA256
        users.append({"name": user.name, "password_hash": password_hash,
                      "hashing_algorithm": algorithm, "tags": list(user.tags),
                      "limits": dict(user.limits)})
    permissions = []
    for name in access.users:
        for vhost in broker.vhosts:
            granted = access.permissions(name, vhost)
            if granted is not None:
                permissions.append({"user": name, "vhost": vhost, **granted._asdict()})
    topic_permissions = [
        {"user": name, "vhost": vhost, **entry._asdict()}
        for name in access.users for vhost in broker.vhosts
        for entry in access.topic_permissions(name, vhost)]
    return users, permissions, topic_permissions
