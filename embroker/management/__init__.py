"""RabbitMQ's management HTTP API and a web console, served by embroker's own listener.

``broker.serve(management=True)`` (``embroker serve --management-port N``) adds a port to the
listener, served by the same selector loop and thread as the AMQP clients: ``/api/...`` is
RabbitMQ 3.10's management API (:class:`ManagementAPI`), ``/`` a console to watch the broker in a
browser. The HTTP protocol object (:class:`HttpConnection`) is sans-IO, over h11, which is
imported only when a management port is served.
"""

from __future__ import annotations

from ._api import ManagementAPI as ManagementAPI
from ._http import HttpConnection as HttpConnection
from ._http import Request as Request
from ._http import Response as Response

__all__ = ["HttpConnection", "ManagementAPI", "Request", "Response"]
