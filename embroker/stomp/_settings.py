"""The STOMP plugin's settings (RabbitMQ 3.10.8's ``rabbitmq_stomp`` application environment,
``rabbitmq.conf``'s ``stomp.*`` keys), as a listener hands them to its STOMP connections.

A :class:`~embroker.server.Server` keeps them in ``port_settings["stomp"]`` (the same object
for Web-STOMP, whose handler reads the STOMP plugin's environment too: ``default_user``,
``ssl_cert_login``); a connection reads them as it is accepted.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import final

__all__ = ["StompSettings"]


@final
@dataclass(frozen=True, slots=True)
class StompSettings:
    """What ``rabbitmq_stomp`` is configured with (each default is RabbitMQ 3.10.8's).

    Attributes:
        default_user: ``(login, passcode)`` a CONNECT without ``login`` logs in with
            (``stomp.default_user``/``stomp.default_pass``); ``None``: such a CONNECT is refused
            (``Missing login or passcode header(s)``). RabbitMQ's own default is guest/guest.
        implicit_connect: a first frame other than CONNECT logs in with the default user
            (``stomp.implicit_connect``; never over Web-STOMP).
        ssl_cert_login: over TLS, a CONNECT without ``login`` logs in as the client
            certificate's name (``stomp.ssl_cert_login``).
        default_vhost: the virtual host of a CONNECT without ``host`` (``stomp.default_vhost``).
        default_topic_exchange: the exchange ``/topic/...`` names (``stomp.default_topic_exchange``).
        default_nack_requeue: whether a NACK without ``requeue`` requeues
            (``stomp.default_nack_requeue``).
        hide_server_info: CONNECTED carries no ``server`` header (``stomp.hide_server_info``).
        login_timeout: seconds a connection may take to log in (``stomp.login_timeout``, in
            milliseconds there).
        trailing_lf: each frame the broker sends ends with a line feed after its NUL
            (``stomp.trailing_lf``).
        max_frame: the largest frame read once logged in, in bytes (RabbitMQ 3.10 has no such
            bound; embroker's is the broker's largest message plus headers, see
            :mod:`embroker.stomp`).
    """

    default_user: tuple[str, str] | None = ("guest", "guest")
    implicit_connect: bool = False
    ssl_cert_login: bool = False
    default_vhost: str = "/"
    default_topic_exchange: str = "amq.topic"
    default_nack_requeue: bool = True
    hide_server_info: bool = False
    login_timeout: float = 10.0
    trailing_lf: bool = True
