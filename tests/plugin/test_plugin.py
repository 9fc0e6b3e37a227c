"""The pytest plugin, run in pytester sandboxes: fixtures, the marker, the reference option."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from embroker import Broker

pytestmark = pytest.mark.filterwarnings("ignore::pytest.PytestAssertRewriteWarning")


def run(pytester: pytest.Pytester, *args: str) -> pytest.RunResult:
    # Without hypothesis's plugin: each in-process run would import hypothesis afresh (1.5 s).
    return pytester.runpytest_inprocess("-p", "no:cacheprovider", "-p", "no:hypothesispytest",
                                        "-q", *args)


def test_fixtures(pytester: pytest.Pytester) -> None:
    pytester.makepyfile("""
        import pika
        from embroker import Broker
        from embroker.testing import assert_routed, queue_messages

        seen = []

        def test_broker_is_fresh(broker):
            assert isinstance(broker, Broker)
            assert list(broker.queues) == []
            seen.append(broker)

        def test_broker_is_fresh_again(broker):
            assert broker is not seen[0]

        def test_channel_and_url(broker, amqp_channel, amqp_url):
            amqp_channel.queue_declare("jobs")
            conn = pika.BlockingConnection(pika.URLParameters(amqp_url))
            conn.channel().basic_publish("", "jobs", b"hi")
            conn.close()
            assert [m.body for m in queue_messages(broker, "jobs")] == [b"hi"]
            assert_routed(broker, routing_key="jobs", queues=["jobs"])

        def test_server_is_per_test(amqp_server, broker):
            assert amqp_server.broker is broker
            assert amqp_server.url.startswith("amqp://guest:guest@127.0.0.1:")
    """)
    run(pytester).assert_outcomes(passed=4)


def test_marker_configures_the_broker(pytester: pytest.Pytester) -> None:
    topology = {"exchanges": [{"name": "events", "vhost": "/", "type": "topic", "durable": True}],
                "queues": [{"name": "audit", "vhost": "/", "durable": True}],
                "bindings": [{"source": "events", "vhost": "/", "destination": "audit",
                              "destination_type": "queue", "routing_key": "order.*"}]}
    (pytester.path / "defs.json").write_text(json.dumps(topology))
    pytester.makepyfile("""
        import pytest
        from embroker import ManualClock
        from embroker.testing import assert_routes

        pytestmark = pytest.mark.embroker(vhosts=["staging"])

        @pytest.mark.embroker(topology="defs.json", clock=True, users={"app": "pw"})
        def test_marked(broker):
            assert isinstance(broker.clock, ManualClock)
            assert set(broker.vhosts) == {"/", "staging"}
            assert broker.users == {"guest": "guest", "app": "pw"}
            assert_routes(broker, "events", {"order.new": ["audit"], "user.new": []})

        def test_module_marker_only(broker):
            assert set(broker.vhosts) == {"/", "staging"}
            assert "events" not in broker.exchanges
    """)
    run(pytester).assert_outcomes(passed=2)


def test_marker_sets_policies(pytester: pytest.Pytester) -> None:
    topology = {"queues": [{"name": "orders.new", "vhost": "/", "durable": True}],
                "policies": [{"vhost": "/", "name": "ttl", "pattern": "^orders\\.",
                              "apply-to": "queues", "priority": 0,
                              "definition": {"message-ttl": 60000}}],
                "parameters": [{"vhost": "/", "component": "shovel", "name": "move",
                                "value": {"src-uri": "amqp://"}}]}
    (pytester.path / "defs.json").write_text(json.dumps(topology))
    pytester.makepyfile("""
        import pytest

        @pytest.mark.embroker(
            topology="defs.json", ignore_unsupported=True,
            policies=[{"name": "dlx", "pattern": "^orders", "definition":
                       {"dead-letter-exchange": "dlx"}, "priority": 1, "apply_to": "queues"}],
            operator_policies=[{"name": "cap", "pattern": ".*", "definition": {"max-length": 9}}])
        def test_policies(broker):
            q = broker.queues["orders.new"]
            assert (q.policy.name, q.operator_policy.name) == ("dlx", "cap")
            assert q.effective_arguments == {"x-dead-letter-exchange": "dlx", "x-max-length": 9}

        @pytest.mark.embroker(topology="defs.json")
        def test_refused(broker):
            pass
    """)
    result = run(pytester)
    result.assert_outcomes(passed=1, errors=1)
    result.stdout.fnmatch_lines(["*embroker cannot honour these runtime parameters: shovel "
                                 "'move' in vhost '/'*"])


def test_a_failing_helper_explains_the_routing(pytester: pytest.Pytester) -> None:
    pytester.makepyfile("""
        from embroker.testing import assert_routed

        def test_typo(broker, amqp_channel):
            amqp_channel.exchange_declare("events", "topic")
            amqp_channel.queue_declare("audit")
            amqp_channel.queue_bind("audit", "events", "order.created")
            amqp_channel.basic_publish("events", "order.create", b"{}")
            assert_routed(broker, exchange="events", queues=["audit"])
    """)
    result = run(pytester)
    result.assert_outcomes(failed=1)
    out = result.stdout.str()
    assert ("expected a publish with exchange='events' routed to exactly ['audit'], but none was "
            "(1 matching, 1 similar)") in out
    assert "no match -> queue 'audit': pattern 'order.created' does not match 'order.create'" in out
    assert "raise AssertionError(_report(" not in out  # the helper's own frames are hidden


def test_reference_option(pytester: pytest.Pytester) -> None:
    pytester.makepyfile("""
        def test_url(amqp_url):
            assert amqp_url == "amqp://guest:guest@rabbit.example:5672/"

        def test_needs_broker(broker):
            raise AssertionError("not reached")
    """)
    result = run(pytester, "--embroker-reference", "amqp://guest:guest@rabbit.example:5672/",
                 "-rs")
    result.assert_outcomes(passed=1, skipped=1)
    result.stdout.fnmatch_lines(["*the broker fixture needs embroker's internals: not available "
                                 "with the reference RabbitMQ (amqp://guest:guest@rabbit.example*"])


def test_reference_ini_option(pytester: pytest.Pytester) -> None:
    pytester.makeini("[pytest]\nembroker_reference = amqp://u:p@h:5672/\n")
    pytester.makepyfile("""
        def test_url(amqp_url, embroker_reference):
            assert amqp_url == embroker_reference == "amqp://u:p@h:5672/"
    """)
    run(pytester).assert_outcomes(passed=1)


@pytest.mark.skipif(not os.environ.get("EMBROKER_REFERENCE_URL"),
                    reason="needs a reference RabbitMQ (EMBROKER_REFERENCE_URL)")
def test_the_same_test_runs_against_rabbitmq(pytester: pytest.Pytester) -> None:
    pytester.makepyfile("""
        import uuid
        import pika

        def test_roundtrip(amqp_url):
            name = f"pytest-embroker-{uuid.uuid4().hex[:8]}"
            conn = pika.BlockingConnection(pika.URLParameters(amqp_url))
            ch = conn.channel()
            ch.queue_declare(name, auto_delete=True)
            ch.basic_publish("", name, b"x")
            method, _props, body = ch.basic_get(name, auto_ack=True)
            assert body == b"x"
            ch.queue_delete(name)
            conn.close()
    """)
    run(pytester).assert_outcomes(passed=1)
    run(pytester, "--embroker-reference", os.environ["EMBROKER_REFERENCE_URL"]).assert_outcomes(
        passed=1)


def test_local_conftest_fixture_wins(pytester: pytest.Pytester) -> None:
    pytester.makeconftest("""
        import pytest
        from embroker import Broker

        @pytest.fixture
        def broker():
            b = Broker(vhosts=("/", "mine"))
            return b
    """)
    pytester.makepyfile("""
        def test_it(broker, amqp_url):
            assert "mine" in broker.vhosts
            assert amqp_url.startswith("amqp://")
    """)
    run(pytester).assert_outcomes(passed=1)


def test_plugin_is_registered_by_entry_point() -> None:
    from importlib.metadata import entry_points

    (entry,) = [e for e in entry_points(group="pytest11") if e.name == "embroker"]
    assert entry.value == "pytest_embroker.plugin"
    assert Path(entry.load().__file__).parent.name == "pytest_embroker"
    assert Broker.__module__.startswith("embroker")  # the plugin depends on embroker


def test_amqp10_url_serves_proton(pytester: pytest.Pytester) -> None:
    pytest.importorskip("proton")
    pytester.makepyfile("""
        from proton import Message
        from proton.utils import BlockingConnection

        def test_amqp10(broker, amqp10_url, amqp_url):
            broker.connect().channel().queue_declare("jobs")
            assert amqp10_url == amqp_url.rstrip("/")  # one listener serves both protocols
            conn = BlockingConnection(amqp10_url, allowed_mechs="PLAIN")
            conn.create_sender("/queues/jobs").send(Message(body="hi"))
            conn.close()
            assert broker.queues["jobs"].message_count == 1
    """)
    run(pytester).assert_outcomes(passed=1)


def test_amqp10_url_with_the_reference(pytester: pytest.Pytester) -> None:
    pytester.makepyfile("""
        def test_url(amqp10_url):
            assert amqp10_url == "amqp://guest:guest@rabbit.example:5672"
    """)
    run(pytester, "--embroker-reference",
        "amqp://guest:guest@rabbit.example:5672/").assert_outcomes(passed=1)
