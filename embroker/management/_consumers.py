"""Consumers (``rabbit_mgmt_wm_consumers``): a user sees its own, monitoring users everyone's."""

from __future__ import annotations

import itertools
from typing import TYPE_CHECKING, Any

from ..model._access import Rule
from . import _steps as steps
from . import views
from ._http import Response
from ._routes import Call, route
from ._steps import Steps

if TYPE_CHECKING:
    from ..model import Queue
    from ._api import ManagementAPI


@route("GET", "consumers", Rule.ANY)
@route("GET", "consumers/{vhost}", Rule.ANY)
def _consumers(api: ManagementAPI, call: Call) -> Steps[Response]:
    """Every consumer of the path's vhost (404 if there is none) or of every vhost, then the
    user's own unless it is a monitoring user (``rabbit_mgmt_wm_consumers``: ``filter_user``
    on the consumer's channel)."""
    lock = api.broker.locked()
    with lock:
        vhost = call.params.get("vhost")
        hosts = [api.vhost(call)] if vhost is not None else list(api.broker.vhosts.values())
        wire = api.wire()
        queues = [q for host in hosts for q in host.queues.values() if q.consumer_count]

    def consumers_of(queue: Queue) -> list[dict[str, Any]]:
        found = []
        for consumer in queue.consumers:
            connection = consumer.channel.connection
            if api.sees_items_of(call, connection.user):
                name, peer = api.identity(connection, wire)
                found.append(views.consumer_info(consumer, name, peer, connection.user))
        return found
    found = yield from steps.each(queues, consumers_of, lock)
    return (yield from api.listing(call, list(itertools.chain.from_iterable(found))))
