"""RabbitMQ's management HTTP API and a web console, served by embroker's own listener.

``broker.serve(management=True)`` (``embroker serve --management-port N``) adds a port to the
listener, served by the same selector loop and thread as the AMQP clients: ``/api/...`` is
RabbitMQ 3.10's management API (:class:`ManagementAPI`), ``/`` a console to watch the broker in a
browser, or RabbitMQ's own UI from the operator's copy of its files (:class:`ManagementUI`,
``--management-ui DIR``), the console then under ``/console/``. The HTTP protocol object
(:class:`HttpConnection`) is sans-IO, over h11, which is imported only when a management port is
served. :mod:`~embroker.management.views` makes RabbitMQ's JSON shapes from the model;
:func:`connection_info` a connection's. The control tools read the broker through these public
views only.
"""

from __future__ import annotations

from . import views as views
from ._api import ManagementAPI as ManagementAPI
from ._connections import connection_info as connection_info
from ._http import HttpConnection as HttpConnection
from ._http import Request as Request
from ._http import Response as Response
from ._http import Work as Work
from ._ui import ManagementUI as ManagementUI

__all__ = ["HttpConnection", "ManagementAPI", "ManagementUI", "Request", "Response", "Work",
           "connection_info", "views"]
