"""Channels: listing, a vhost's, one by name (``rabbit_mgmt_wm_channels``, ``_channels_vhost``,
``_channel``): a user sees its own, monitoring users everyone's (RabbitMQ's
``is_authorized_user`` and ``filter_conn_ch_list``)."""

from __future__ import annotations

import itertools
from typing import TYPE_CHECKING, Any

from ..model._access import NO_ITEM, Rule
from . import _samples, views
from . import _steps as steps
from ._http import Response
from ._routes import Call, not_found, route
from ._steps import Steps

if TYPE_CHECKING:
    from ..model import Channel, Connection
    from ._api import ManagementAPI


def channel_info(api: ManagementAPI, channel: Channel, name: str, peer: tuple[str, int],
                 user: str, who: str, ranges: _samples.Ranges | None) -> dict[str, Any]:
    """:func:`views.channel_info` with the channel's history for ``ranges`` (``None``: a
    listing asked none, rates 0.0), under the lock."""
    if ranges is None:
        return views.channel_info(channel, name, peer, user, who)
    msg_rates, data_rates = api.sampler.histories([channel], ranges.msg_rates,
                                                  ranges.data_rates)
    return views.channel_info(channel, name, peer, user, who, msg_rates=msg_rates,
                              data_rates=data_rates)


@route("GET", "channels", Rule.ANY)
@route("GET", "vhosts/{vhost}/channels", Rule.VHOST)
def _channels(api: ManagementAPI, call: Call) -> Steps[Response]:
    lock = api.broker.locked()
    with lock:
        wire = api.wire()
        connections = api.listed_connections(call)
        ranges = _samples.asked(call, api.broker)
    asked = ranges if ranges != _samples.NO_RANGES else None

    def channels_of(connection: Connection) -> list[dict[str, Any]]:
        name, peer = api.identity(connection, wire)
        return [channel_info(api, ch, name, peer, connection.user, call.user, asked)
                for ch in sorted(views.amqp_channels(connection).values(),
                                 key=lambda c: c.number)]
    found = yield from steps.each(connections, channels_of, lock)
    return (yield from api.listing(call, list(itertools.chain.from_iterable(found))))


def _named_channel(api: ManagementAPI, call: Call) -> tuple[Any, Connection, str,
                                                             tuple[str, int]] | None:
    wire = api.wire()
    for connection in api.broker.connections.values():
        if not connection.is_open:
            continue
        name, peer = api.identity(connection, wire)
        for channel in views.amqp_channels(connection).values():
            if views.channel_name(name, channel.number) == call.params["name"]:
                return channel, connection, name, peer
    return None


def _channel_owner(api: ManagementAPI, call: Call) -> object:
    found = _named_channel(api, call)
    return found[1].user if found is not None else NO_ITEM


@route("GET", "channels/{name}", Rule.OWNER, owner=_channel_owner)
def _channel_get(api: ManagementAPI, call: Call) -> Any:
    with api.broker.locked():
        found = _named_channel(api, call)
        if found is None:
            raise not_found()
        channel, connection, name, peer = found
        info = channel_info(api, channel, name, peer, connection.user, call.user,
                            _samples.asked(call, api.broker))
        info["consumer_details"] = [views.consumer_info(c, name, peer, connection.user)
                                    for c in channel.consumers.values()]
    info.update({"deliveries": [], "publishes": []})
    return dict(sorted(info.items()))
