"""The stream protocol's Metadata on a cluster (``Broker(nodes=3)``): each stream's leader and
running replicas, named by the host and port each node advertises, as RabbitMQ 3.10.8's
``rabbit_stream_reader`` answers ``{metadata, Streams}`` with ``rabbit_stream_manager:
topology/2`` (checked live on a 3-node cluster with one node, then two, stopped:
/work/notes/clustersurf/probe_surfaces.py). Nodes stop by :meth:`Node.stop
<embroker.model.Node.stop>`; a stream whose leader is down (no majority left to elect another,
which the model does not reach yet) is made by marking its leader's node not running."""

from __future__ import annotations

from embroker import Broker
from embroker.model import Node
from embroker.stream import Code, Key, response_key

from .test_connection import Peer

STREAM = {"x-queue-type": "stream"}
OK, MISSING, NONE = Code.OK, Code.STREAM_DOES_NOT_EXIST, 0xFFFF


def metadata(peer: Peer, *streams: str) -> tuple[list[tuple[int, str, int]],
                                                 list[tuple[str, int, int, list[int]]]]:
    """A Metadata's answer: the brokers (reference, host, port) and each stream's (name,
    code, leader reference, replica references)."""
    ((key, f),) = peer.send(peer.request(Key.METADATA).strings(list(streams)).frame())
    assert key == response_key(Key.METADATA)
    f.uint32()
    brokers = [(f.uint16(), f.string(), f.uint32()) for _ in range(f.count())]
    entries = [(f.string(), f.uint16(), f.uint16(), [f.uint16() for _ in range(f.count())])
               for _ in range(f.count())]
    return brokers, entries


def cluster() -> Broker:
    """Three nodes; from a connection on the second, a stream on every node (``st``) and one
    on one node (``st1``), as the live recording's."""
    broker = Broker(nodes=3)
    channel = broker.open_connection(node=broker.nodes[1]).open_channel(1)
    channel.queue_declare("st", durable=True, arguments=STREAM)
    channel.queue_declare("st1", durable=True, arguments={**STREAM, "x-initial-cluster-size": 1})
    return broker


def opened(broker: Broker, ports: dict[str, int] | None = None) -> Peer:
    """A client of the first node; each node advertising ``localhost`` and its port in
    ``ports`` when given (else, as today, this listener's 127.0.0.1:5552)."""
    peer = Peer(broker)
    if ports is not None:
        def endpoint(node: Node) -> tuple[str, int]:
            return "localhost", ports[node.name]
        peer.conn.endpoint_of = endpoint
    peer.open()
    return peer


#: The live recording's ports: the second node's sorts first, then the first's, the third's.
PORTS = {"embroker-2@localhost": 33243, "embroker@localhost": 49705,
         "embroker-3@localhost": 58751}


def test_the_brokers_are_the_streams_nodes_sorted_by_endpoint_and_referred_to_by_index() -> None:
    """rabbit_stream_reader.erl ({metadata, Streams}): the nodes the streams involve, each
    asked for its host and port; the brokers are those endpoints, distinct and sorted, the
    leader and each replica referred to by its endpoint's index; rabbit_stream_manager.erl
    (topology/2): the replicas are the members other than the writer, by node name. Live:
    brokers [(0, localhost, 33243), (1, ..49705), (2, ..58751)], st leader 0, replicas [1, 2];
    st1 leader 0, no replica."""
    broker = cluster()
    brokers, entries = metadata(opened(broker, PORTS), "st", "st1", "missing")
    assert brokers == [(0, "localhost", 33243), (1, "localhost", 49705),
                       (2, "localhost", 58751)]
    # (replicas by name: embroker-3@localhost sorts before embroker@localhost)
    assert entries == [("st", OK, 0, [2, 1]), ("st1", OK, 0, []), ("missing", MISSING, NONE, [])]


def test_a_stopped_replica_is_left_out_and_a_stopped_leader_is_no_reference() -> None:
    """topology/2 skips a member without a pid (its node down); a writer without one leaves
    no leader (0xFFFF: element_index/2's -1). Live, the third node stopped: brokers of the
    first two only, st's replicas [1]; the second stopped too: one broker, st leader 0xFFFF,
    replicas [0], st1 leader 0xFFFF."""
    broker = cluster()
    broker.nodes[2].stop()
    brokers, entries = metadata(opened(broker, PORTS), "st", "st1")
    assert brokers == [(0, "localhost", 33243), (1, "localhost", 49705)]
    assert entries == [("st", OK, 0, [1]), ("st1", OK, 0, [])]
    broker.nodes[1].running = False  # (the leader down, no other elected)
    brokers, entries = metadata(opened(broker, PORTS), "st", "st1")
    assert brokers == [(0, "localhost", 49705)]
    assert entries == [("st", OK, NONE, [0]), ("st1", OK, NONE, [])]


def test_nodes_advertising_one_endpoint_are_one_broker() -> None:
    """A connection no listener made names every node by its own advertised host and port
    (a listener names each node's own: tests/server/test_node_listeners.py): the brokers are
    one endpoint (rabbit_stream_reader.erl: lists:usort of the nodes' endpoints), which the
    leader and every replica refer to."""
    brokers, entries = metadata(opened(cluster()), "st", "st1")
    assert brokers == [(0, "127.0.0.1", 5552)]
    assert entries == [("st", OK, 0, [0, 0]), ("st1", OK, 0, [])]


def test_a_metadata_of_no_existing_stream_names_no_broker() -> None:
    """No stream found, no node involved: no broker (checked live on RabbitMQ 3.10.8:
    Metadata of a missing stream alone answers 0 brokers, the stream 0xFFFF)."""
    broker = Broker()
    brokers, entries = metadata(opened(broker), "missing")
    assert (brokers, entries) == ([], [("missing", MISSING, NONE, [])])


def test_a_single_node_broker_names_its_listener_as_every_streams_leader() -> None:
    broker = Broker()
    broker.connect().channel().queue_declare("s", durable=True, arguments=STREAM)
    assert metadata(opened(broker), "s") == ([(0, "127.0.0.1", 5552)], [("s", OK, 0, [])])
