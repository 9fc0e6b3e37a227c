"""Queue arguments are checked at declare time with RabbitMQ's texts."""

from __future__ import annotations

import pytest

from embroker import Broker
from embroker.errors import PreconditionFailed


@pytest.mark.parametrize(("arguments", "reason"), [
    ({"x-message-ttl": "soon"}, "invalid arg 'x-message-ttl' for queue 'q' in vhost '/': "
                                '"expected integer, got longstr"'),
    ({"x-message-ttl": -1}, "invalid arg 'x-message-ttl' for queue 'q' in vhost '/': {value_negative,-1}"),
    ({"x-expires": 0}, "invalid arg 'x-expires' for queue 'q' in vhost '/': {value_zero,0}"),
    ({"x-max-length": -1}, "invalid arg 'x-max-length' for queue 'q' in vhost '/': {value_negative,-1}"),
    ({"x-max-priority": 256}, "invalid arg 'x-max-priority' for queue 'q' in vhost '/': "
                              "{max_value_exceeded,256}"),
    ({"x-overflow": "drop-tail"}, "invalid arg 'x-overflow' for queue 'q' in vhost '/': invalid_overflow"),
    ({"x-single-active-consumer": 1}, "invalid arg 'x-single-active-consumer' for queue 'q' in vhost '/': "
                                      "{unacceptable_type,signedint}"),
    ({"x-dead-letter-routing-key": "k"}, "invalid arg 'x-dead-letter-routing-key' for queue 'q' in "
                                         "vhost '/': routing_key_but_no_dlx_defined"),
    ({"x-dead-letter-exchange": 5}, "invalid type 'signedint' for arg 'x-dead-letter-exchange' in "
                                    "queue 'q' in vhost '/'"),
])
def test_invalid_queue_argument_is_refused(arguments: dict[str, object], reason: str) -> None:
    broker = Broker()
    ch = broker.connect().channel()
    with pytest.raises(PreconditionFailed) as err:
        ch.queue_declare("q", arguments=arguments)
    assert err.value.reply_text == f"PRECONDITION_FAILED - {reason}"
    assert "q" not in broker.queues


def test_valid_queue_arguments_are_kept() -> None:
    broker = Broker()
    args = {"x-message-ttl": 1000, "x-max-length": 10, "x-overflow": "reject-publish",
            "x-dead-letter-exchange": "dlx", "x-dead-letter-routing-key": "dead", "my-own": [1]}
    broker.connect().channel().queue_declare("q", arguments=args)
    assert broker.queues["q"].arguments == args
