"""TLS settings for the listener's TLS ports, named as RabbitMQ names them (``ssl_options.*``
in ``rabbitmq.conf``; docs/tls.md puts them side by side).

>>> TLSOptions(certfile="server.pem", verify="verify_peer").cert_reqs.name
'CERT_OPTIONAL'
"""

from __future__ import annotations

import ssl
import warnings
from dataclasses import dataclass
from typing import Final, Literal

__all__ = ["TLS_VERSIONS", "TLSOptions", "server_context"]

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
