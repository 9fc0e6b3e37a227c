"""What the tools and a node share of the control interface: the error a command fails with,
the tools' exit codes, and what each listing may show (the handshake is :mod:`._handshake`).
Light on purpose: the tools import it, and nothing of the broker (see :mod:`._ctl`)."""

from __future__ import annotations

from typing import Any

__all__ = ["EX_DATAERR", "EX_NOUSER", "EX_SOFTWARE", "EX_TEMPFAIL",
           "EX_UNAVAILABLE", "EX_USAGE", "INFO_KEYS", "ControlError"]

#: The tools' exit codes (sysexits.h, as RabbitMQ's tools use them).
EX_USAGE, EX_DATAERR, EX_NOUSER, EX_UNAVAILABLE, EX_SOFTWARE, EX_TEMPFAIL = 64, 65, 67, 69, 70, 75


class ControlError(Exception):
    """A command that failed the way RabbitMQ's would: the text its tool prints after
    ``Error:`` (or in full when ``plain``), and the tool's exit code (``sysexits``: 64 usage,
    65 data, 69 unavailable, 70 software)."""

    def __init__(self, message: str, code: int = 70, *, plain: bool = False) -> None:
        super().__init__(message)
        self.message = message
        self.code = code
        self.plain = plain

    def as_json(self) -> dict[str, Any]:
        return {"message": self.message, "code": self.code, "plain": self.plain}


#: What each listing may show (``rabbitmqctl list_*``'s info keys, v3.10.8), in RabbitMQ's
#: order, and what it shows when none are named.
INFO_KEYS: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    "queues": (("name", "durable", "auto_delete", "arguments", "policy", "pid", "owner_pid",
                "exclusive", "exclusive_consumer_pid", "exclusive_consumer_tag",
                "messages_ready", "messages_unacknowledged", "messages", "messages_ready_ram",
                "messages_unacknowledged_ram", "messages_ram", "messages_persistent",
                "message_bytes", "message_bytes_ready", "message_bytes_unacknowledged",
                "message_bytes_ram", "message_bytes_persistent", "head_message_timestamp",
                "disk_reads", "disk_writes", "consumers", "consumer_utilisation",
                "consumer_capacity", "memory", "slave_pids", "synchronised_slave_pids",
                "state", "type", "leader", "members", "online"), ("name", "messages")),
    "exchanges": (("name", "type", "durable", "auto_delete", "internal", "arguments",
                   "policy"), ("name", "type")),
    "bindings": (("source_name", "source_kind", "destination_name", "destination_kind",
                  "routing_key", "arguments"),
                 ("source_name", "source_kind", "destination_name", "destination_kind",
                  "routing_key", "arguments")),
    # the plugins' own listings (rabbit_stomp.hrl's and rabbit_mqtt.hrl's ?INFO_ITEMS, v3.10.8)
    "stomp_connections": (("conn_name", "connection", "connection_state", "session_id",
                           "channel", "version", "implicit_connect", "auth_login",
                           "auth_mechanism", "peer_addr", "host", "port", "peer_host",
                           "peer_port", "protocol", "channels", "channel_max", "frame_max",
                           "client_properties", "ssl", "ssl_protocol", "ssl_key_exchange",
                           "ssl_cipher", "ssl_hash"), ("session_id", "conn_name")),
    "mqtt_connections": (("host", "port", "peer_host", "peer_port", "protocol", "channels",
                          "channel_max", "frame_max", "client_properties", "ssl",
                          "ssl_protocol", "ssl_key_exchange", "ssl_cipher", "ssl_hash",
                          "conn_name", "connection_state", "connection", "consumer_tags",
                          "unacked_pubs", "awaiting_ack", "awaiting_seqno", "message_id",
                          "client_id", "clean_sess", "will_msg", "exchange", "ssl_login_name",
                          "retainer_pid", "user", "vhost"), ("client_id", "conn_name")),
    "connections": (("pid", "name", "port", "host", "peer_port", "peer_host", "ssl",
                     "ssl_protocol", "ssl_key_exchange", "ssl_cipher", "ssl_hash",
                     "peer_cert_subject", "peer_cert_issuer", "peer_cert_validity", "state",
                     "channels", "protocol", "auth_mechanism", "user", "vhost", "timeout",
                     "frame_max", "channel_max", "client_properties", "recv_oct", "recv_cnt",
                     "send_oct", "send_cnt", "send_pend", "connected_at"),
                    ("user", "peer_host", "peer_port", "state")),
    "channels": (("pid", "connection", "name", "number", "user", "vhost", "transactional",
                  "confirm", "consumer_count", "messages_unacknowledged",
                  "messages_uncommitted", "acks_uncommitted", "messages_unconfirmed",
                  "prefetch_count", "global_prefetch_count"),
                 ("pid", "user", "consumer_count", "messages_unacknowledged")),
    "consumers": (("queue_name", "channel_pid", "consumer_tag", "ack_required",
                   "prefetch_count", "active", "activity_status", "arguments"),
                  ("queue_name", "channel_pid", "consumer_tag", "ack_required",
                   "prefetch_count", "active", "arguments")),
    "vhosts": (("name", "description", "tags", "default_queue_type", "tracing",
                "cluster_state"), ("name",)),
}
