"""TLS settings for the listener's TLS ports, named as RabbitMQ names them (``ssl_options.*``
in ``rabbitmq.conf``; docs/tls.md puts them side by side).

>>> TLSOptions(certfile="server.pem", verify="verify_peer").cert_reqs.name
'CERT_OPTIONAL'
"""

from __future__ import annotations

import ssl
import warnings
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final, Literal

__all__ = ["TLS_VERSIONS", "TLSOptions", "certificate_login", "server_context"]

#: ``ssl_options.versions.N`` values and the ``ssl`` versions they name.
TLS_VERSIONS: Final = {
    "tlsv1": ssl.TLSVersion.TLSv1, "tlsv1.1": ssl.TLSVersion.TLSv1_1,
    "tlsv1.2": ssl.TLSVersion.TLSv1_2, "tlsv1.3": ssl.TLSVersion.TLSv1_3,
}


@dataclass(frozen=True, slots=True)
class TLSOptions:
    """A TLS port's settings, as RabbitMQ's ``ssl_options``.

    Attributes:
        certfile: the server's certificate (PEM; may hold its chain after it).
        keyfile: its private key (PEM, RSA in either encoding, or EC); ``None``: in
            ``certfile``.
        cacertfile: the certificate authorities a client's certificate is checked against.
        password: the key's password, if it is encrypted.
        verify: ``"verify_none"`` (no client certificate is asked for) or ``"verify_peer"``
            (one is asked for and checked when sent).
        fail_if_no_peer_cert: with ``verify_peer``, refuse a client that sends none.
        versions: the TLS versions taken. RabbitMQ 3.10's default is every version its
            Erlang has but SSL 3 (``rabbit_ssl_options:fix_ssl_protocol_versions/1``): 1.3,
            1.2, 1.1 and 1.0 (checked live: a TLS 1.1 client connects).
        ciphers: an OpenSSL cipher list (TLS 1.2 and below), or ``None`` for ``ssl``'s default.
    """

    certfile: str
    keyfile: str | None = None
    cacertfile: str | None = None
    password: str | None = None
    verify: Literal["verify_none", "verify_peer"] = "verify_none"
    fail_if_no_peer_cert: bool = False
    versions: tuple[str, ...] = ("tlsv1.3", "tlsv1.2", "tlsv1.1", "tlsv1")
    ciphers: str | None = None

    def __post_init__(self) -> None:
        if self.verify not in ("verify_none", "verify_peer"):
            raise ValueError(f"verify must be 'verify_none' or 'verify_peer', not "
                             f"{self.verify!r}")
        unknown = [v for v in self.versions if v not in TLS_VERSIONS]
        if unknown or not self.versions:
            raise ValueError(f"versions: give some of {', '.join(TLS_VERSIONS)}, not "
                             f"{', '.join(unknown) or 'none'}")

    @property
    def cert_reqs(self) -> ssl.VerifyMode:
        """What ``ssl`` asks of a client's certificate."""
        if self.verify == "verify_none":
            return ssl.CERT_NONE
        return ssl.CERT_REQUIRED if self.fail_if_no_peer_cert else ssl.CERT_OPTIONAL

    def context(self) -> ssl.SSLContext:
        """A server-side ``ssl.SSLContext`` with these settings.

        Raises:
            OSError, ssl.SSLError: a file that cannot be read, a key that does not match its
                certificate or cannot be decrypted.
        """
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        versions = sorted(TLS_VERSIONS[v] for v in self.versions)
        if TLS_VERSIONS["tlsv1.1"] >= versions[0]:
            context.set_ciphers("DEFAULT:@SECLEVEL=0")  # (OpenSSL 3 refuses them at level 1)
        with warnings.catch_warnings():  # (ssl deprecates 1.0 and 1.1: RabbitMQ takes them)
            warnings.simplefilter("ignore", DeprecationWarning)
            context.minimum_version = versions[0]
            context.maximum_version = versions[-1]
        if self.ciphers is not None:
            context.set_ciphers(self.ciphers)
        context.load_cert_chain(self.certfile, self.keyfile, self.password)
        if self.cacertfile is not None:
            context.load_verify_locations(self.cacertfile)
        context.verify_mode = self.cert_reqs
        return context


def server_context(tls: ssl.SSLContext | TLSOptions) -> ssl.SSLContext:
    """The context of a listener's TLS ports: one given, or made of :class:`TLSOptions`."""
    if isinstance(tls, ssl.SSLContext):
        return tls
    return tls.context()


#: ``ssl``'s names of subject attributes and RabbitMQ's (``rabbit_cert_info:format_rdn/1``).
_ATTRIBUTES: Final = {
    "surname": "SN", "givenName": "GIVENNAME", "initials": "INITIALS",
    "generationQualifier": "GENERATIONQUALIFIER", "commonName": "CN", "localityName": "L",
    "stateOrProvinceName": "ST", "organizationName": "O", "organizationalUnitName": "OU",
    "title": "TITLE", "countryName": "C", "serialNumber": "SERIALNUMBER",
    "pseudonym": "PSEUDONYM", "domainComponent": "DC", "emailAddress": "EMAILADDRESS",
    "streetAddress": "STREET", "userId": "UID",
}


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
