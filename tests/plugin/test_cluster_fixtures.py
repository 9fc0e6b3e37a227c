"""The plugin's cluster, run in pytester sandboxes: ``@pytest.mark.embroker(nodes=3)`` gives the
test a broker of three nodes and a listener per node (``amqp_servers``, ``amqp_urls``), and
``embroker_faults.stop_node(name)`` / ``start_node(name)`` stop and start one."""

from __future__ import annotations

import pytest

from embroker import Broker
from embroker.faults import Faults
from tests.plugin.test_plugin import run

pytestmark = pytest.mark.filterwarnings("ignore::pytest.PytestAssertRewriteWarning")


def test_a_cluster_marker_gives_a_listener_and_a_url_per_node(pytester: pytest.Pytester) -> None:
    pytester.makepyfile("""
        import pika
        import pytest

        @pytest.mark.embroker(nodes=3)
        def test_urls(broker, amqp_urls, amqp_servers, amqp_server, amqp_url):
            assert [n.name for n in broker.nodes] == [
                "embroker@localhost", "embroker-2@localhost", "embroker-3@localhost"]
            assert amqp_urls == amqp_servers.urls
            assert len(set(amqp_urls)) == 3
            assert amqp_server is amqp_servers[0] and amqp_url == amqp_urls[0]
            for url, node in zip(amqp_urls, broker.nodes):
                with pika.BlockingConnection(pika.URLParameters(url)):
                    assert [c.node for c in node.connections] == [node]

        def test_one_node(broker, amqp_urls, amqp_server):
            assert amqp_urls == [amqp_server.url]
    """)
    run(pytester).assert_outcomes(passed=2)


def test_a_stopped_node_sends_pika_to_the_next_address(pytester: pytest.Pytester) -> None:
    pytester.makepyfile("""
        import pika
        import pytest
        from embroker.testing import wait_until

        @pytest.mark.embroker(nodes=3, strict=True)
        def test_failover(broker, amqp_urls, embroker_faults):
            on_first = pika.BlockingConnection(pika.URLParameters(amqp_urls[0]))
            on_first.channel().queue_declare("orders", durable=True)
            embroker_faults.stop_node("embroker@localhost")
            with pytest.raises(pika.exceptions.ConnectionClosedByBroker):
                wait_until(lambda: on_first.process_data_events(0.01) and False)
            conn = pika.BlockingConnection([pika.URLParameters(u) for u in amqp_urls])
            assert [len(n.connections) for n in broker.nodes] == [0, 1, 0]
            with pytest.raises(pika.exceptions.ChannelClosedByBroker) as refused:
                conn.channel().queue_declare("orders", durable=True)
            assert refused.value.reply_code == 404
            embroker_faults.start_node("embroker@localhost")
            conn.channel().queue_declare("orders", durable=True)
            conn.close()
    """)
    run(pytester).assert_outcomes(passed=1)


def test_the_nodes_marker_is_in_the_markers_help(pytester: pytest.Pytester) -> None:
    result = run(pytester, "--markers")
    result.stdout.fnmatch_lines(["*nodes: a cluster of N nodes*"])


def test_faults_stop_a_node_no_listener_serves_in_the_model() -> None:
    broker = Broker(nodes=2)
    second = broker.connect(node="embroker-2@localhost")
    second.channel().queue_declare("dq", durable=True)
    faults = Faults(broker)
    faults.stop_node("embroker-2@localhost")
    assert not broker.nodes[1].running
    assert not second.is_open
    faults.start_node(broker.nodes[1])
    assert broker.nodes[1].running
    with pytest.raises(KeyError):
        faults.stop_node("embroker-9@localhost")


def test_faults_reach_the_connections_of_every_nodes_listener() -> None:
    import pika

    broker = Broker(nodes=2)
    with broker.serve_nodes() as servers:
        faults = Faults(broker, servers)
        assert faults.server is servers[0]
        conn = pika.BlockingConnection(pika.URLParameters(servers.urls[1]))
        (found,) = faults.connections
        assert found.model is not None
        assert found.model.node is broker.nodes[1]
        conn.close()


def test_memory_urls_name_each_node_and_a_stopped_one_refuses(pytester: pytest.Pytester) -> None:
    pytester.makepyfile("""
        import pika
        import pytest

        @pytest.mark.embroker(nodes=3)
        def test_memory(broker, memory_urls):
            assert memory_urls == broker.memory_urls and len(set(memory_urls)) == 3
            broker.nodes[0].stop()
            conn = broker.pika_connection([pika.URLParameters(u) for u in memory_urls])
            assert [len(node.connections) for node in broker.nodes] == [0, 1, 0]
            conn.close()
    """)
    run(pytester).assert_outcomes(passed=1)
