"""The pytest plugin, run in pytester sandboxes: fixtures, the marker, the reference option."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pytest

from embroker import Broker

pytestmark = pytest.mark.filterwarnings("ignore::pytest.PytestAssertRewriteWarning")


def run(pytester: pytest.Pytester, *args: str) -> pytest.RunResult:
    # Without hypothesis's plugin: each in-process run would import hypothesis afresh (1.5 s).
    return pytester.runpytest_inprocess("-p", "no:cacheprovider", "-p", "no:hypothesispytest",
                                        "-p", "no:asyncio", "-q", *args)


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
    assert "raise AssertionError(" not in out  # the helper's own frames are hidden


def test_a_wrong_queue_name_says_which_queues_were_missed_and_which_reached(
        pytester: pytest.Pytester) -> None:
    pytester.makepyfile("""
        from embroker.testing import assert_routed

        def test_typo(broker, amqp_channel):
            amqp_channel.exchange_declare("orders", "topic")
            amqp_channel.queue_declare("orders-work")
            amqp_channel.queue_declare("audit")
            amqp_channel.queue_bind("orders-work", "orders", "order.*")
            amqp_channel.basic_publish("orders", "order.created", b"{}")
            assert_routed(broker, exchange="orders", queues=["orders-wrok", "audit"])
    """)
    result = run(pytester)
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines([
        "*The last publish that matched:",
        "*expected, not reached: 'audit' (the queue exists; no binding led the message there)",
        "*expected, not reached: 'orders-wrok' (there is no queue 'orders-wrok' in vhost '/'; "
        "did you mean 'orders-work'?)",
        "*reached instead: 'orders-work'"])


def test_the_report_of_a_failed_test_says_why_a_publish_went_nowhere(
        pytester: pytest.Pytester) -> None:
    """The embroker section shows explain() for a refused, returned or unroutable publish
    (before: its repr alone), with the name meant."""
    pytester.makepyfile("""
        import pytest
        from embroker.errors import NotFound

        def test_misspelt(broker, amqp_channel):
            amqp_channel.exchange_declare("orders", "topic")
            amqp_channel.queue_declare("orders-work")
            with pytest.raises(NotFound):
                amqp_channel.basic_publish("order", "order.created", b"{}")
            channel = broker.connect().channel()
            channel.basic_publish("", "orders-wrk", b"{}", mandatory=True)
            assert False, "the order went nowhere"
    """)
    result = run(pytester)
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines([
        "*refused: 404 NOT_FOUND - no exchange 'order' in vhost '/'; did you mean 'orders'?",
        "*reached no queue: returned to the publisher (mandatory)",
        "*there is no queue 'orders-wrk'; did you mean 'orders-work'?"])


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
    result.stdout.fnmatch_lines(["*the reference RabbitMQ (amqp://guest:guest@rabbit.example:5672/) "
                                 "offers neither its management API nor rabbitmqctl*"])


def test_amqp_url_for_makes_the_user_with_its_permissions(
        pytester: pytest.Pytester) -> None:
    pytester.makepyfile("""
        import pika
        import pytest

        def test_users(broker, amqp_url_for):
            url = amqp_url_for("app", "p@ss:w/rd", vhost="a/b", configure="^app\\\\.",
                               tags=["monitoring"])
            assert url.startswith("amqp://app:p%40ss%3Aw%2Frd@127.0.0.1:")
            assert url.endswith("/a%2Fb")
            with pika.BlockingConnection(pika.URLParameters(url)) as connection:
                channel = connection.channel()
                channel.queue_declare("app.jobs")
                with pytest.raises(pika.exceptions.ChannelClosedByBroker, match="403"):
                    channel.queue_declare("other")
            assert "monitoring" in broker.access.management_tags("app")
            assert amqp_url_for("app", "again").startswith("amqp://app:again@")  # (exists)

        def test_alone(amqp_url_for):
            assert amqp_url_for("app", "pw").endswith("/")
    """)
    run(pytester).assert_outcomes(passed=2)
    result = run(pytester, "--embroker-reference", "amqp://guest:guest@rabbit.example:5672/",
                 "-rs")
    result.assert_outcomes(skipped=2)  # (no vhost can be made there: below for one that can)
    result.stdout.fnmatch_lines(["*offers neither its management API nor rabbitmqctl*"])


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


def test_the_plugin_adds_no_warning_to_a_users_run(pytester: pytest.Pytester) -> None:
    """Issue 35, item 8: a project's pytest run with the plugin shows the project's warnings
    only, deprecations included (pytest-asyncio, if installed here, is left out: it is this
    suite's, not the plugin's; the test below keeps it out of what users install)."""
    pytester.makepyfile(test_app="""
        def test_it(amqp_channel, broker):
            amqp_channel.queue_declare("q")
            assert broker.queues["q"].message_count == 0
    """)
    result = pytester.runpytest_subprocess("-p", "no:asyncio", "-W", "always", "-p",
                                           "no:cacheprovider")
    result.assert_outcomes(passed=1, warnings=0)
    shown = result.stdout.str() + result.stderr.str()
    assert re.findall(r"\w*Warning\b|warnings summary", shown) == []


def test_no_extra_brings_a_pytest_plugin_into_a_users_environment() -> None:
    """What a user installs by an extra's name: no test suite's dependencies (they are the
    'test' dependency group), so no pytest-asyncio, whose warning would show on every run of
    a project that does not configure it."""
    from importlib.metadata import requires

    needs = requires("embroker") or []
    assert not [n for n in needs if "extra == \"test\"" in n or "extra == 'test'" in n]
    assert not [n for n in needs if n.lower().startswith(("pytest", "anyio"))]


# -- the marker's errors -------------------------------------------------------------------------

def test_a_marker_typo_names_the_marker_and_its_arguments(pytester: pytest.Pytester) -> None:
    pytester.makepyfile("""
        import pytest

        @pytest.mark.embroker(topolgy="defs.json")
        def test_typo(broker):
            pass
    """)
    result = run(pytester)
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(["*@pytest.mark.embroker got unknown argument(s) topolgy; its "
                                 "arguments are:", "*topology: a RabbitMQ definitions file*",
                                 "*strict: True*"])


def test_a_missing_topology_names_the_full_path(pytester: pytest.Pytester) -> None:
    pytester.makepyfile("""
        import pytest

        @pytest.mark.embroker(topology="missing.json")
        def test_it(broker):
            pass
    """)
    result = run(pytester)
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines([f"*topology file 'missing.json' not found: tried "
                                 f"{pytester.path / 'missing.json'}*"])


@pytest.mark.parametrize(("topology", "line"), [
    ({"queues": True}, "queues must be a list of objects, not true"),
    ({"queues": [{"name": 5}]}, "queues[0].name must be a string, not 5"),
    ({"policies": [{"name": "p", "pattern": "^x", "definition": {"max-length": "x"}}]},
     'Validation failed: &lt;&lt;"x"&gt;&gt; is not a valid maximum length (//p)'),
])
def test_a_topology_the_model_refuses_fails_the_test_with_one_line(
        pytester: pytest.Pytester, topology: object, line: str) -> None:
    """The model's refusal, as a file and as a dict: the test errors at setup with one line
    that names the marker and what is wrong, and no traceback of embroker's."""
    (pytester.path / "defs.json").write_text(json.dumps(topology))
    pytester.makepyfile(f"""
        import pytest

        @pytest.mark.embroker(topology="defs.json")
        def test_file(broker):
            pass

        @pytest.mark.embroker(topology={topology!r})
        def test_dict(broker):
            pass
    """)
    result = run(pytester)
    result.assert_outcomes(errors=2)
    line = line.replace("[", "[[]")  # (fnmatch's brackets)
    result.stdout.fnmatch_lines([f"*@pytest.mark.embroker(topology='defs.json'): cannot load "
                                 f"the topology: {line}"])
    result.stdout.fnmatch_lines([f"*@pytest.mark.embroker(topology={{*}}): cannot load the "
                                 f"topology: {line}"])
    assert "embroker/model" not in result.stdout.str()
    assert "During handling" not in result.stdout.str()


# -- strict mode ---------------------------------------------------------------------------------

def test_strict_mode_fails_a_test_that_leaves_things_behind(pytester: pytest.Pytester) -> None:
    pytester.makepyfile("""
        import pika
        import pytest

        FORGOTTEN = []  # (alive after the test: not closed by the garbage collector meanwhile)

        @pytest.mark.embroker(strict=True)
        def test_leaves_an_unacked_delivery_and_a_connection(broker, amqp_url):
            params = pika.URLParameters(amqp_url)
            params.client_properties = {"connection_name": "forgotten"}
            FORGOTTEN.append(pika.BlockingConnection(params))
            ch = FORGOTTEN[-1].channel()
            ch.queue_declare("jobs")
            ch.basic_publish("", "jobs", b"x")
            ch.basic_get("jobs")

        @pytest.mark.embroker(strict=True)
        def test_clean(broker, amqp_url):
            conn = pika.BlockingConnection(pika.URLParameters(amqp_url))
            conn.channel().basic_publish("", "nowhere", b"x")
            conn.close()

        @pytest.mark.embroker(strict="unroutable")
        def test_unroutable(amqp_channel):
            amqp_channel.basic_publish("", "nowhere", b"x")
    """)
    result = run(pytester)
    result.assert_outcomes(passed=3, errors=2)
    result.stdout.fnmatch_lines([
        "*strict mode: the test left 2 thing(s) behind:",
        "*- client connection left open: <ClientConnection 'forgotten' from 127.0.0.1:*",
        "*- 1 unacknowledged deliver(ies) on connection 127.0.0.1:*, channel 1 (from 'jobs')",
    ])
    result.stdout.fnmatch_lines(["*- unroutable publish: <RoutingDecision exchange='' "
                                 "routing_key='nowhere' -> unroutable>"])


def test_strict_mode_from_the_ini_file(pytester: pytest.Pytester) -> None:
    pytester.makeini("[pytest]\nembroker_strict = true\n")
    pytester.makepyfile("""
        import pytest

        def test_unacked(broker, amqp_channel):
            amqp_channel.queue_declare("q")
            amqp_channel.basic_publish("", "q", b"x")
            amqp_channel.basic_get("q")
            amqp_channel.connection.close = lambda: None  # the test keeps it open

        @pytest.mark.embroker(strict=False)
        def test_not_strict(broker, amqp_channel):
            amqp_channel.queue_declare("q")
            amqp_channel.basic_publish("", "q", b"x")
            amqp_channel.basic_get("q")
            amqp_channel.connection.close = lambda: None
    """)
    result = run(pytester)
    result.assert_outcomes(passed=2, errors=1)


@pytest.mark.parametrize(("line", "named"), [
    ("embroker_strict = true          # or: unroutable", "embroker_strict"),
    ("embroker_strict = yes-please", "embroker_strict"),
    ("embroker_trace = ten", "embroker_trace"),
    ("embroker_plugins = rabbitmq_delayed_message_exchange rabbitmq_nope", "embroker_plugins"),
    ("embroker_reference = localhost:5672", "embroker_reference"),
    ("embroker_management = 127.0.0.1:15672", "embroker_management"),
])
def test_an_ini_value_the_plugin_cannot_read_stops_the_run_and_says_what_it_takes(
        pytester: pytest.Pytester, line: str, named: str) -> None:
    """(The documented ``embroker_strict = true  # or: unroutable`` turned strict mode off:
    pytest keeps the comment in the value.)"""
    pytester.makeini(f"[pytest]\n{line}\n")
    pytester.makepyfile("def test_it(broker):\n    pass\n")
    result = run(pytester)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([f"*embroker: {named} = *is not a value it takes*"])
    if "#" in line:
        result.stderr.fnmatch_lines(["*comment on a line of its own*"])


def test_a_command_line_value_the_plugin_cannot_read_stops_the_run(
        pytester: pytest.Pytester) -> None:
    pytester.makepyfile("def test_it(broker):\n    pass\n")
    result = run(pytester, "--embroker-trace=-1")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--embroker-trace = -1 is not a value it takes*"])
    result = run(pytester, "--embroker-reference=rabbitmq.local")
    result.stderr.fnmatch_lines(["*--embroker-reference = 'rabbitmq.local'*amqp://*"])


@pytest.mark.parametrize(("value", "errors"), [
    ("yes", 1), ("On", 1), ("1", 1), ("unroutable", 2), ("false", 0), ("0", 0)])
def test_the_strict_values_the_plugin_takes(pytester: pytest.Pytester, value: str,
                                            errors: int) -> None:
    """Each value means what it says: strict fails the test that leaves a delivery
    unacknowledged, unroutable the one that published to no queue too, false neither."""
    pytester.makeini(f"[pytest]\nembroker_strict = {value}\n")
    pytester.makepyfile("""
        def test_unacked(broker, amqp_channel):
            amqp_channel.queue_declare("q")
            amqp_channel.basic_publish("", "q", b"x")
            amqp_channel.basic_get("q")
            amqp_channel.connection.close = lambda: None  # the test keeps it open

        def test_unroutable(broker, amqp_channel):
            amqp_channel.basic_publish("", "no-such-queue", b"x")
    """)
    run(pytester).assert_outcomes(passed=2, errors=errors)


def test_memory_pika_survives_advance_and_its_teardown_a_dropped_connection(
        pytester: pytest.Pytester) -> None:
    pytester.makepyfile("""
        import pytest
        from embroker.testing import advance

        @pytest.mark.embroker(clock=True)
        def test_an_hour_later(broker, memory_pika):
            channel = memory_pika.channel()
            channel.queue_declare("q")
            advance(broker, 3600)
            channel.basic_publish("", "q", b"x")
            assert broker.queues["q"].message_count == 1

        def test_killed(broker, memory_pika, embroker_faults):
            embroker_faults.kill_connection()  # the test never touches it again
    """)
    run(pytester).assert_outcomes(passed=2)


# -- the failure report --------------------------------------------------------------------------

REPORTED = """
    def test_fails(broker, amqp_channel):
        amqp_channel.queue_declare("jobs")
        for n in range(3):
            amqp_channel.basic_publish("", "jobs", b"job-%d" % n)
        amqp_channel.basic_get("jobs")
        assert False, "the application did not do its job"
"""


def test_a_failed_test_reports_the_trace_and_the_queues(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(REPORTED)
    result = run(pytester)
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines([
        "*- embroker -*",
        "<Broker vhosts=['/'] connections=1>: the last 3 of 3 routing decision(s)",
        "- <RoutingDecision exchange='' routing_key='jobs' -> queues ['jobs']>",
        "    taken by basic.get in queue 'jobs' on connection *, channel 1 (delivery tag 1)",
        "    now: queue 'jobs': taken by basic.get on connection *(delivery tag 1, not "
        "acknowledged yet)",
        "queues (1):",
        "  <queue 'jobs' in vhost '/': 2 ready, 1 unacked, 0 consumers>",
        "    1. <Message exchange='' routing_key='jobs' properties={} body=b'job-1'>",
    ])


def test_the_report_says_what_the_broker_refused_and_which_connections_it_dropped(
        pytester: pytest.Pytester) -> None:
    """An application that swallows a channel error, and a client the broker dropped for
    missed heartbeats (py-amqp sends them only when the application calls heartbeat_check):
    the failure report says what was refused (code, text, method) and what was dropped, when
    and why (issue 44)."""
    pytester.makepyfile("""
        import contextlib
        import kombu
        import pika
        import pytest
        import embroker.memory.kombu
        from embroker.testing import advance

        @pytest.mark.embroker(clock=True)
        def test_app(broker, amqp_url):
            params = pika.URLParameters(amqp_url)
            params.client_properties = {"connection_name": "checkout"}
            connection = pika.BlockingConnection(params)
            with contextlib.suppress(pika.exceptions.ChannelClosedByBroker):
                connection.channel().queue_declare("missing", passive=True)
            with kombu.Connection(broker.kombu_url, heartbeat=10) as worker, \\
                    worker.Consumer([kombu.Queue("jobs")]):
                with contextlib.suppress(*worker.connection_errors):
                    for _ in range(10):
                        advance(broker, 5)
                        with contextlib.suppress(TimeoutError):
                            worker.drain_events(timeout=1)
            connection.close()
            assert False, "the application did not do its job"
    """)
    result = run(pytester)
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines([
        "*- embroker -*",
        "closed by the broker (2):",
        "- at t=0.000 (broker clock): channel 1 of connection 127.0.0.1:* ('checkout', user "
        "'guest', "
        "vhost '/') closed: 404 NOT_FOUND - no queue 'missing' in vhost '/' (refusing "
        "queue.declare)",
        "- at t=20.001 (broker clock): connection memory:* (user 'guest', vhost '/') dropped: "
        "501 FRAME_ERROR - missed heartbeats from client, timeout: 10s",
        "    the client sent nothing for two heartbeat intervals while it ran: its library "
        "sends heartbeats only while its I/O loop runs (pika: process_data_events; py-amqp "
        "and kombu: heartbeat_check); heartbeat=0 turns them off",
    ])


def test_embroker_trace_chooses_how_many(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(REPORTED)
    result = run(pytester, "--embroker-trace", "1")
    result.stdout.fnmatch_lines(["*the last 1 of 3 routing decision(s)",
                                 "    1. <Message*job-1'>", "    ... and 1 more"])
    result = run(pytester, "--embroker-trace", "0")
    assert " embroker " not in result.stdout.str()


# -- faults, expectations, the shared broker -----------------------------------------------------

def test_fault_and_expectation_fixtures(pytester: pytest.Pytester) -> None:
    pytester.makepyfile("""
        import pika
        import pytest

        def test_kill(amqp_url, embroker_faults, broker):
            params = pika.URLParameters(amqp_url)
            params.client_properties = {"connection_name": "victim"}
            conn = pika.BlockingConnection(params)
            embroker_faults.kill_connection("victim")
            with pytest.raises(pika.exceptions.AMQPConnectionError):
                conn.process_data_events(1)

        def test_expected(embroker_expectations, amqp_channel):
            embroker_expectations.published(routing_key="a", count=1)
            amqp_channel.basic_publish("amq.topic", "a", b"")

        def test_unexpected(embroker_expectations, amqp_channel):
            embroker_expectations.published(routing_key="a")
            amqp_channel.basic_publish("amq.topic", "b", b"")
    """)
    result = run(pytester)
    result.assert_outcomes(passed=3, errors=1)
    result.stdout.fnmatch_lines(["*2 problem(s) with the expected publishes:"])


def test_a_shared_broker_is_reset_between_tests(pytester: pytest.Pytester) -> None:
    pytester.makeconftest("""
        import pika
        import pytest

        started = []

        @pytest.fixture(scope="session")
        def worker(shared_amqp_url):
            started.append(1)  # a slow worker, started once
            conn = pika.BlockingConnection(pika.URLParameters(shared_amqp_url))
            conn.channel().queue_declare("work")
            yield conn
            conn.close()
    """)
    pytester.makepyfile("""
        from conftest import started

        def test_one(worker, shared_broker):
            ch = shared_broker.connect().channel()
            ch.queue_declare("scratch")
            ch.basic_publish("", "work", b"x")
            assert len(shared_broker.trace) == 1

        def test_two(worker, shared_broker):
            assert started == [1]
            assert sorted(shared_broker.queues) == ["work"]
            assert shared_broker.queues["work"].message_count == 0
            assert len(shared_broker.trace) == 0
    """)
    run(pytester).assert_outcomes(passed=2)


# -- reference mode ------------------------------------------------------------------------------

REFERENCE = os.environ.get("EMBROKER_REFERENCE_URL")
needs_reference = pytest.mark.skipif(not REFERENCE, reason="needs a reference RabbitMQ "
                                                           "(EMBROKER_REFERENCE_URL)")


@needs_reference
def test_the_helpers_run_against_rabbitmq_in_a_vhost_of_their_own(
        pytester: pytest.Pytester) -> None:
    assert REFERENCE is not None
    pytester.makepyfile("""
        import pika
        import pytest
        from embroker.testing import (assert_dead_lettered, assert_routed, published,
                                      queue_messages, advance)

        def publish(url):
            conn = pika.BlockingConnection(pika.URLParameters(url))
            ch = conn.channel()
            ch.exchange_declare("events", "topic")
            ch.queue_declare("audit")
            ch.queue_bind("audit", "events", "order.*")
            ch.confirm_delivery()  # (RabbitMQ has read them when they are confirmed)
            ch.basic_publish("events", "order.created", b'{"id": 1}')
            ch.basic_publish("events", "user.created", b"{}")
            return conn

        def test_routing(broker, amqp_url):
            conn = publish(amqp_url)
            assert_routed(broker, exchange="events", routing_key="order.*", queues=["audit"],
                          json={"id": 1})
            assert published(broker, outcome="unroutable").last.routing_key == "user.created"
            assert [m.body for m in queue_messages(broker, "audit")] == [b'{"id": 1}']
            assert [m.body for m in queue_messages(broker, "audit")] == [b'{"id": 1}']
            conn.close()

        def test_isolated(broker, amqp_url):  # a vhost of its own: nothing from the other test
            conn = pika.BlockingConnection(pika.URLParameters(amqp_url))
            with pytest.raises(pika.exceptions.ChannelClosedByBroker):
                conn.channel().queue_declare("audit", passive=True)
            assert published(broker).call_count == 0

        def test_dead_letters(broker, amqp_url):
            conn = pika.BlockingConnection(pika.URLParameters(amqp_url))
            ch = conn.channel()
            ch.queue_declare("dead")
            ch.queue_declare("work", arguments={"x-dead-letter-exchange": "",
                                                "x-dead-letter-routing-key": "dead"})
            ch.basic_publish("", "work", b"job")
            method, _p, _b = ch.basic_get("work")
            ch.basic_nack(method.delivery_tag, requeue=False)
            assert_dead_lettered(broker, queue="work", reason="rejected", to=["dead"])
            conn.close()

        def test_explain_skips(broker, amqp_url):
            publish(amqp_url).close()
            published(broker).last.explain()

        @pytest.mark.embroker(clock=True)
        def test_clock_skips(broker):
            advance(broker, 1)
    """)
    result = run(pytester, "--embroker-reference", REFERENCE, "-rs")
    result.assert_outcomes(passed=3, skipped=2)
    header = pytester.runpytest_inprocess("-p", "no:cacheprovider", "-p", "no:hypothesispytest",
                                          "-p", "no:asyncio", "--embroker-reference", REFERENCE,
                                          "--co")
    header.stdout.fnmatch_lines([
        "embroker: reference RabbitMQ at *; a vhost per test, created and deleted through the "
        "management HTTP API (http://127.0.0.1:15672/api); routing decisions from its firehose*",
    ])
    result.stdout.fnmatch_lines(["*explain() tells embroker's routing model: needs embroker's "
                                 "internals, not available with the reference RabbitMQ"])
    result.stdout.fnmatch_lines(["*the virtual clock (clock=True) needs embroker's internals*"])


@needs_reference
def test_policies_are_set_on_the_reference_vhost_and_validated_by_rabbitmq(
        pytester: pytest.Pytester) -> None:
    assert REFERENCE is not None
    pytester.makepyfile("""
        import pika
        import pytest
        from embroker import PolicyError

        @pytest.mark.embroker(policies=[{"name": "cap", "pattern": "^jobs$",
                                         "definition": {"max-length": 1}}])
        def test_policies(broker, amqp_url):
            with pytest.raises(PolicyError) as refused:
                broker.set_policy("bad", ".*", {"message-ttl": -1})
            assert refused.value.reason == "-1 is not a valid message TTL"
            broker.set_operator_policy("ttl", "^jobs$", {"message-ttl": 60000})
            conn = pika.BlockingConnection(pika.URLParameters(amqp_url))
            ch = conn.channel()
            ch.confirm_delivery()  # RabbitMQ answers a passive declare ahead of its mailbox
            ch.queue_declare("jobs")
            for body in (b"1", b"2"):
                ch.basic_publish("", "jobs", body)
            assert ch.queue_declare("jobs", passive=True).method.message_count == 1
            conn.close()
    """)
    run(pytester).assert_outcomes(passed=1)
    run(pytester, "--embroker-reference", REFERENCE).assert_outcomes(passed=1)


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


def test_the_management_api_is_served_only_to_tests_that_ask_for_it(
        pytester: pytest.Pytester) -> None:
    pytester.makepyfile("""
        import json
        import urllib.request

        import pytest

        def test_asks_for_its_url(management_url, amqp_server, broker):
            broker.connect().channel().queue_declare("jobs")
            assert management_url == amqp_server.management_url
            request = urllib.request.Request(management_url + "api/queues/%2F/jobs", headers={
                "Authorization": "Basic Z3Vlc3Q6Z3Vlc3Q="})
            with urllib.request.urlopen(request, timeout=10) as answer:
                assert json.load(answer)["messages"] == 0

        @pytest.mark.embroker(management=True)
        def test_marked(amqp_server):
            assert amqp_server.management_port is not None

        def test_not_asked(amqp_server):
            assert amqp_server.management_port is None
    """)
    run(pytester).assert_outcomes(passed=3)


def test_management_url_with_the_reference(pytester: pytest.Pytester) -> None:
    pytester.makepyfile("""
        def test_url(management_url):
            assert management_url == "http://rabbit.example:15672/"
    """)
    run(pytester, "--embroker-reference",
        "amqp://guest:guest@rabbit.example:5672/").assert_outcomes(passed=1)
    run(pytester, "--embroker-reference", "amqp://guest:guest@rabbit.example:5672/",
        "--embroker-management", "http://other.example:8080/api").assert_outcomes(failed=1)
def test_marker_and_ini_enable_plugins(pytester: pytest.Pytester) -> None:
    """``plugins=`` on the marker adds to the ``embroker_plugins`` ini option; ``random_seed``
    seeds x-random."""
    pytester.makeini("""
        [pytest]
        embroker_plugins = rabbitmq_consistent_hash_exchange
    """)
    pytester.makepyfile("""
        import pytest
        from embroker.testing import advance, held_messages

        def test_ini(broker):
            assert broker.plugins.enabled == {"rabbitmq_consistent_hash_exchange"}

        @pytest.mark.embroker(clock=True, plugins=["rabbitmq_delayed_message_exchange"],
                              random_seed=3)
        def test_marker(broker):
            assert broker.plugins.enabled == {"rabbitmq_consistent_hash_exchange",
                                              "rabbitmq_delayed_message_exchange"}
            ch = broker.connect().channel()
            ch.exchange_declare("d", "x-delayed-message", arguments={"x-delayed-type": "fanout"})
            ch.queue_declare("q")
            ch.queue_bind("q", "d")
            ch.basic_publish("d", "", b"later", {"headers": {"x-delay": 500}})
            assert len(held_messages(broker)) == 1
            advance(broker, 0.5)
            assert ch.basic_get("q", auto_ack=True).body == b"later"

        @pytest.mark.embroker(plugins="rabbitmq_random_exchange", random_seed=3)
        def test_seeded(broker):
            import random
            assert broker.plugins.random.random() == random.Random(3).random()
    """)
    result = run(pytester)
    result.assert_outcomes(passed=3)


@pytest.mark.parametrize("kind", ["stomp", "mqtt"])
def test_protocol_fixtures_serve_it_and_its_web_one_on_the_tests_listener(
        pytester: pytest.Pytester, kind: str) -> None:
    """``stomp_url``, ``stomp_address`` and ``web_stomp_url`` (issue 46), ``mqtt_url``,
    ``mqtt_address`` and ``web_mqtt_url`` (issue 47): the test's listener serves the protocol
    and its Web- one on free ports when a test asks for one of them (or is marked
    ``stomp=True``, ``mqtt=True``), not otherwise."""
    pytester.makepyfile(f"""
        import socket

        import pytest

        def test_asks({kind}_url, {kind}_address, web_{kind}_url, amqp_server):
            host, port = {kind}_address
            assert {kind}_url == amqp_server.{kind}_url == f"{kind}://{{host}}:{{port}}"
            assert port == amqp_server.{kind}_port
            assert web_{kind}_url == f"ws://127.0.0.1:{{amqp_server.web_{kind}_port}}/ws"
            with socket.socket() as sock, pytest.raises(OSError, match="in use"):
                sock.bind((host, port))

        def test_web_alone(web_{kind}_url, amqp_server):
            assert amqp_server.{kind}_port is not None

        @pytest.mark.embroker({kind}=True)
        def test_marked(amqp_server):
            assert amqp_server.web_{kind}_port is not None

        def test_not_asked(amqp_server):
            assert (amqp_server.{kind}_port, amqp_server.web_{kind}_port) == (None, None)
    """)
    run(pytester).assert_outcomes(passed=4)


def test_mqtt_address_takes_a_connect(pytester: pytest.Pytester) -> None:
    """End to end, as paho would connect: CONNECT (MQTT 3.1.1, no credentials: the plugin's
    default user) answered CONNACK, accepted."""
    pytester.makepyfile(r"""
        import socket

        def test_connect(mqtt_address):
            with socket.create_connection(mqtt_address, timeout=5) as sock:
                sock.sendall(b"\x10\x0d\x00\x04MQTT\x04\x02\x00\x3c\x00\x01t")
                assert sock.recv(4) == b"\x20\x02\x00\x00"
    """)
    run(pytester).assert_outcomes(passed=1)


def test_stomp_fixtures_with_the_reference(pytester: pytest.Pytester) -> None:
    pytester.makepyfile("""
        def test_urls(stomp_url, stomp_address, web_stomp_url):
            assert stomp_url == "stomp://rabbit.example:61613"
            assert stomp_address == ("rabbit.example", 61613)
            assert web_stomp_url == "ws://rabbit.example:15674/ws"
    """)
    run(pytester, "--embroker-reference",
        "amqp://guest:guest@rabbit.example:5672/").assert_outcomes(passed=1)


@pytest.mark.parametrize(("how", "port"), [
    ((), 1883),  # RabbitMQ's
    (("--embroker-mqtt-port", "1884"), 1884),
    (("-o", "embroker_mqtt_port=1885"), 1885),
    ("variable", 1886),
])
def test_mqtt_fixtures_with_the_reference_on_its_configured_port(
        pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch,
        how: tuple[str, ...] | str, port: int) -> None:
    """The reference's MQTT port: 1883, else what ``--embroker-mqtt-port``, the
    ``embroker_mqtt_port`` ini option or ``EMBROKER_REFERENCE_MQTT_PORT`` says (a machine
    whose 1883 another MQTT broker holds moves the plugin's listener); Web-MQTT's 15675."""
    monkeypatch.delenv("EMBROKER_REFERENCE_MQTT_PORT", raising=False)
    if how == "variable":
        monkeypatch.setenv("EMBROKER_REFERENCE_MQTT_PORT", str(port))
    pytester.makepyfile(f"""
        def test_urls(mqtt_url, mqtt_address, web_mqtt_url):
            assert mqtt_url == "mqtt://rabbit.example:{port}"
            assert mqtt_address == ("rabbit.example", {port})
            assert web_mqtt_url == "ws://rabbit.example:15675/ws"
    """)
    options = () if isinstance(how, str) else how
    run(pytester, *options, "--embroker-reference",
        "amqp://guest:guest@rabbit.example:5672/").assert_outcomes(passed=1)
