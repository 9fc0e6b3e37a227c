"""What a definitions document may hold, checked once, in the model: any document (or any bytes)
either loads or is refused with :class:`DefinitionsError`, naming what is wrong; a malformed one
changes nothing; a refused item leaves the rest as RabbitMQ 3.10.8's import leaves it.

(The texts of the refusals that RabbitMQ answers too are compared with its own in
``tests/management/golden/bad_definitions.json`` and
``tests/control/golden/rabbitmqctl/import_definitions_refused_*.json``.)
"""

from __future__ import annotations

import contextlib
import json
import os
from typing import Any

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from embroker import Broker
from embroker.errors import DefinitionsError
from embroker.model._definitions_schema import MAX_BYTES, MAX_DEPTH, SECTIONS

# -- any document ---------------------------------------------------------------------------------

_LEAVES = st.one_of(
    st.none(), st.booleans(), st.integers(-(2**70), 2**70),
    st.floats(allow_nan=True, allow_infinity=True), st.text(max_size=6),
    st.sampled_from(["q", "x", "/", "v", "", "guest", "amq.direct", "amq.topic", "amq.q",
                     "queue", "exchange", "direct", "topic", "fanout", "headers", "classic",
                     "quorum", "stream", ".*", "(", "^x", "true", "a,b", "\ud800",
                     "rabbit_password_hashing_md5", "eHh4eA==", "x-delayed-message",
                     "vhost-limits", "operator_policy", "shovel", "cluster_name", "all",
                     "queues", "exchanges"]))
_JSON = st.recursive(_LEAVES, lambda inner: st.lists(inner, max_size=3)
                     | st.dictionaries(st.text(max_size=4), inner, max_size=3), max_leaves=8)
_ARGUMENT_NAMES = ["x-max-length", "x-message-ttl", "x-queue-type", "x-dead-letter-exchange",
                   "x-expires", "x-max-priority", "x-overflow", "alternate-exchange",
                   "x-match", "x-delayed-type", "max-length", "message-ttl", "max-queues",
                   "max-connections", "max-channels", "pattern", "definition", "apply-to",
                   "priority", "description", "tags", "default_queue_type", "ha-mode"]
_OBJECTS = st.dictionaries(st.sampled_from(_ARGUMENT_NAMES) | st.text(max_size=3),
                           _LEAVES | _JSON, max_size=3)
_NAMES = st.sampled_from(["q", "x", "x2", "guest", "u", "amq.direct", "amq.topic", "amq.q", "",
                          "nope", "limits"])
#: Values of the right type for each field, most of the time (a field of the wrong type is
#: refused before anything happens: the model's own refusals need the right types to show).
_PLAUSIBLE: dict[str, st.SearchStrategy[Any]] = {
    "vhost": st.sampled_from(["/", "v", "nowhere"]),
    "type": st.sampled_from(["direct", "topic", "fanout", "headers", "x-delayed-message",
                             "x-consistent-hash", "classic", "quorum", "stream", "nope"]),
    "destination_type": st.sampled_from(["queue", "exchange", "topic"]),
    "component": st.sampled_from(["vhost-limits", "operator_policy", "policy", "shovel",
                                  "nope"]),
    "hashing_algorithm": st.sampled_from(["rabbit_password_hashing_sha256",
                                          "rabbit_password_hashing_md5", "rot13"]),
    "password_hash": st.sampled_from(["", "eHh4eA==", "not base64!",
                                      "9uuBgtZ8H2s8O3Lr5ipjHCjtjiWG8kp6WR7wcc+BG8nsWqwj"]),
    "configure": st.sampled_from([".*", "^x", "(", ""]),
    "apply-to": st.sampled_from(["all", "queues", "exchanges", "nope"]),
    "tags": st.sampled_from(["", "administrator", "a,b"]) | st.lists(st.text(max_size=3),
                                                                      max_size=2),
    "administrator": st.sampled_from([True, False, "true", "no"]),
    "durable": st.booleans(), "auto_delete": st.booleans(), "internal": st.booleans(),
    "tracing": st.booleans(), "priority": st.integers(-2, 2),
    "routing_key": st.sampled_from(["", "k", "a.#"]),
    "arguments": _OBJECTS, "definition": _OBJECTS, "value": _OBJECTS | _JSON,
    "limits": _OBJECTS, "metadata": _OBJECTS,
}
for _name in ("write", "read", "pattern"):
    _PLAUSIBLE[_name] = _PLAUSIBLE["configure"]


def _items(section: str) -> st.SearchStrategy[dict[str, Any]]:
    """Items of ``section``: most with the fields it requires and values of the right types,
    some with anything."""
    fields = SECTIONS[section]
    plausible = {name: _PLAUSIBLE.get(name, _NAMES) for name in fields}
    required = {name: plausible[name] for name, field in fields.items() if field.required}
    return st.one_of(
        st.fixed_dictionaries(required, optional={
            name: value for name, value in plausible.items() if name not in required}),
        st.fixed_dictionaries(required, optional={
            name: value for name, value in plausible.items() if name not in required}),
        st.fixed_dictionaries({}, optional={name: value | _LEAVES
                                            for name, value in plausible.items()}))


_SECTIONS = {section: st.lists(_items(section), max_size=4) for section in SECTIONS}
_SECTIONS["vhosts"] = st.lists(_items("vhosts") | st.just({"name": "v"}), max_size=3)
_DOCUMENTS = st.fixed_dictionaries({}, optional={
    **_SECTIONS, "rabbit_version": st.sampled_from(["3.5.7", "3.10.8"])}) | st.dictionaries(
    st.sampled_from([*SECTIONS, "rabbit_version", "rabbitmq_version", "product_name"]),
    st.lists(_OBJECTS | _JSON, max_size=3) | _JSON, max_size=4) | _JSON


def _load(broker: Broker, source: Any, **options: Any) -> None:
    refused: DefinitionsError | None = None
    try:
        broker.load_definitions(source, **options)
    except DefinitionsError as error:  # (the one error; anything else fails the test)
        refused = error
    if refused is not None:
        assert str(refused)
        assert refused.line
        assert "\n" not in refused.line
    broker._check()


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(document=_DOCUMENTS, vhost=st.sampled_from(["/", None]), scoped=st.booleans())
@example(document={"queues": True}, vhost="/", scoped=False)
@example(document={"queues": [{"name": 5}]}, vhost="/", scoped=False)
@example(document={"vhosts": [{"name": "v", "metadata": {"tags": 5}}]}, vhost="/", scoped=False)
def test_any_document_loads_or_is_one_definitions_error(document: Any, vhost: str | None,
                                                        scoped: bool) -> None:
    from embroker.model import _definitions

    broker = Broker(plugins=["rabbitmq_delayed_message_exchange"])
    if scoped:
        with contextlib.suppress(DefinitionsError):
            _definitions.load_definitions(broker, document, vhost="/", scoped=True)
        broker._check()
    else:
        _load(broker, document, vhost=vhost)
    json.dumps(broker.definitions())  # what was loaded exports again


@settings(max_examples=200, deadline=None)
@given(raw=st.binary(max_size=200) | _DOCUMENTS.map(
    lambda d: json.dumps(d, allow_nan=True).encode()))
@example(raw=b'{"queues": true}')
@example(raw=b'{"queues": [{"name": "\\ud800"}]}')
@example(raw=b'{"queues": [{"name": "q", "arguments": {"x-max-length": 1e400}}]}')
@example(raw=b"[" * 100_000)
def test_any_bytes_load_or_are_one_definitions_error(raw: bytes) -> None:
    _load(Broker(), raw)


# -- the refusals -----------------------------------------------------------------------------------

#: (document, the error's text, its reason where that is RabbitMQ's term and not the text)
REFUSED: list[tuple[Any, str, Any]] = [
    ({"queues": True}, "queues must be a list of objects, not true", None),
    ({"queues": [{"name": 5}]}, "queues[0].name must be a string, not 5", None),
    ({"queues": [5]}, "queues[0] must be an object, not 5", None),
    ({"queues": [{"durable": True}]}, """queues[0] has no 'name': {"durable":true}""", None),
    ({"queues": [{"name": "q", "durable": "yes"}]},
     'queues[0].durable must be true or false, not "yes"', None),
    ({"queues": [{"name": "q", "arguments": [1]}]},
     "queues[0].arguments must be an object, not [1]", None),
    ({"exchanges": [{"name": "x"}]}, """exchanges[0] has no 'type': {"name":"x"}""", None),
    ({"exchanges": [{"name": "x", "type": "direct", "internal": 1}]},
     "exchanges[0].internal must be true or false, not 1", None),
    ({"bindings": [{"source": "x", "destination": "q", "destination_type": "topic"}]},
     'bindings[0].destination_type must be "queue" or "exchange", not "topic"', None),
    ({"bindings": [{"source": "x", "destination": ["q"], "destination_type": "queue"}]},
     'bindings[0].destination must be a string, not ["q"]', None),
    ({"bindings": [{"source": "x", "destination": "q"}]},
     """bindings[0] has no 'destination_type': {"source":"x","destination":"q"}""", None),
    ({"users": 5}, "users must be a list of objects, not 5", None),
    ({"users": [{"password": "x", "tags": ""}]},
     """users[0] has no 'name': {"password":"x","tags":""}""", None),
    ({"users": [{"name": "u", "password": "x"}]}, "users[0] ('u') has no 'tags'",
     "tags_not_present"),
    ({"users": [{"name": "u", "tags": 5}]},
     'users[0].tags must be a list of strings or a string ("a,b"), not 5', None),
    ({"users": [{"name": "u", "password": "x", "password_hash": "eHh4eA==", "tags": ""}]},
     "user 'u' has both password and password_hash",
     "both_password_and_password_hash_are_provided"),
    ({"vhosts": [{"name": "v", "metadata": {"tags": 5}}]},
     'vhosts[0].metadata.tags must be a list of strings or a string ("a,b"), not 5', None),
    ({"vhosts": [{}]}, "vhosts[0] has no 'name': {}", None),
    ({"permissions": [{"user": "guest", "vhost": "/"}]},
     """permissions[0] has no 'configure': {"user":"guest","vhost":"/"}""", None),
    ({"topic_permissions": [{"user": "guest", "exchange": "amq.topic", "write": 5,
                             "read": ".*"}]},
     "topic_permissions[0].write must be a string, not 5", None),
    ({"parameters": [{"component": "vhost-limits", "name": "limits"}]},
     """parameters[0] has no 'value': {"component":"vhost-limits","name":"limits"}""", None),
    ({"global_parameters": [{"name": 5, "value": 1}]},
     "global_parameters[0].name must be a string, not 5", None),
    ({"policies": {}}, "policies must be a list of objects, not {}", None),
    ({"rabbit_version": 3}, "rabbit_version must be a string, not 3", None),
    ([], "a definitions document is a JSON object, not []", "failed_to_parse_json"),
    ({"queues": [{"name": "q", "arguments": {"x": float("nan")}}]},
     "queues[0].arguments.x is nan, which JSON has not", None),
    ({"queues": [{"name": "\ud800"}]},
     'queues[0].name has text that is not Unicode (a lone surrogate): "\\ud800"', None),
    ({"queues": [{"name": "q", "vhost": "nowhere"}]},
     'Please create virtual host "nowhere" prior to importing definitions.',
     ["no_such_vhost", "nowhere"]),
    ({"permissions": [{"user": "nobody", "vhost": "/", "configure": "", "write": "",
                       "read": ""}]},
     "User 'nobody' does not exist", ["no_such_user", "nobody"]),
    ({"queues": [{"name": "q", "vhost": "/", "arguments": {"x-max-length": "abc"}}]},
     "precondition_failed: invalid arg 'x-max-length' for queue 'q' in vhost '/': "
     '"expected integer, got longstr"', None),
    ({"exchanges": [{"name": "x", "vhost": "/", "type": "nope"}]},
     "command_invalid: unknown exchange type 'nope'", None),
    ({"policies": [{"vhost": "/", "name": "p", "pattern": "^x",
                    "definition": {"max-length": "abc"}}]},
     'Validation failed\n\n&lt;&lt;"abc"&gt;&gt; is not a valid maximum length\n (//p)', None),
    ({"parameters": [{"vhost": "/", "component": "nope", "name": "n", "value": {}}]},
     "Validation failed\n\ncomponent nope not found\n (//nope/n)", None),
]


@pytest.mark.parametrize(("document", "text", "reason"), REFUSED,
                         ids=[json.dumps(d, default=str)[:60] for d, _, _ in REFUSED])
def test_a_bad_document_is_refused_naming_what_is_wrong(document: Any, text: str,
                                                        reason: Any) -> None:
    broker = Broker()
    with pytest.raises(DefinitionsError) as refused:
        broker.load_definitions(document)
    assert (str(refused.value), refused.value.reason) == (
        text, text if reason is None else reason)
    assert "\n" not in refused.value.line


def test_an_item_without_vhost_is_refused_when_the_caller_names_none() -> None:
    """``vhost=None`` is RabbitMQ's import of the whole broker (``rabbitmqctl
    import_definitions``, ``POST /api/definitions``, ``load_definitions`` at boot): an item
    names its vhost, or fails as RabbitMQ's (``{no_such_vhost,undefined}``)."""
    with pytest.raises(DefinitionsError) as refused:
        Broker().load_definitions({"queues": [{"name": "q"}]}, vhost=None)
    assert (str(refused.value), refused.value.reason) == (
        "Virtual host does not exist and is not specified in definitions file.",
        ["no_such_vhost", "undefined"])


def test_the_document_as_a_whole_is_bounded(tmp_path: Any) -> None:
    deep: Any = {}
    for _ in range(MAX_DEPTH):
        deep = {"x": deep}
    with pytest.raises(DefinitionsError, match=f"nested more than {MAX_DEPTH} levels deep"):
        Broker().load_definitions({"queues": [{"name": "q", "arguments": deep}]})
    with pytest.raises(DefinitionsError, match="nested more than"):
        Broker().load_definitions(b"[" * 100_000)
    big = tmp_path / "big.json"
    big.write_bytes(b'{"x": "' + b"a" * MAX_BYTES + b'"}')
    with pytest.raises(DefinitionsError) as refused:
        Broker().load_definitions(big)
    assert str(refused.value) == (f"a definitions document has at most {MAX_BYTES} bytes; "
                                  f"this one has {MAX_BYTES + 9}")
    with pytest.raises(DefinitionsError) as refused:
        Broker().load_definitions(b"not json")
    assert refused.value.reason == "failed_to_parse_json"
    assert str(refused.value).startswith("not JSON: ")
    with pytest.raises(DefinitionsError, match=r"cannot read .*missing\.json: No such file"):
        Broker().load_definitions(tmp_path / "missing.json")
    fifo = tmp_path / "fifo.json"
    os.mkfifo(fifo)  # (opened without waiting for a writer, and refused)
    with pytest.raises(DefinitionsError, match=r"cannot read .*fifo\.json: not a file"):
        Broker().load_definitions(fifo)


# -- what a refusal leaves ----------------------------------------------------------------------------

def _state(broker: Broker) -> dict[str, Any]:
    """The broker's definitions, users' password hashes (salted afresh each time) left out."""
    document = broker.definitions()
    for user in document["users"]:
        user.pop("password_hash")
    return document


def test_a_malformed_document_changes_nothing() -> None:
    """RabbitMQ 3.10.8 imports the sections before a malformed one, then fails (a 500, a stack
    trace); embroker checks the whole document first."""
    broker = Broker()
    before = _state(broker)
    with pytest.raises(DefinitionsError, match=r"bindings\[1\]\.routing_key"):
        broker.load_definitions({
            "vhosts": [{"name": "v"}],
            "users": [{"name": "u", "password": "pw", "tags": ""}],
            "exchanges": [{"name": "x", "vhost": "v", "type": "direct"}],
            "queues": [{"name": "q", "vhost": "v"}],
            "bindings": [{"source": "x", "vhost": "v", "destination": "q",
                          "destination_type": "queue"},
                         {"source": "x", "vhost": "v", "destination": "q",
                          "destination_type": "queue", "routing_key": 7}]})
    assert _state(broker) == before


def test_a_refused_queue_leaves_the_others_as_rabbitmq_does() -> None:
    """Checked live on RabbitMQ 3.10.8 (``POST /api/definitions``, queue 5 of 10 with a bad
    ``x-max-length``): the vhost, the exchange and the policy (sections before) are there, the
    nine other queues too (a section's items are declared each on its own, and the first
    refusal is the answer), the binding (a section after) is not."""
    queues = [{"name": f"q{i}", "vhost": "v", "durable": True, "auto_delete": False,
               "arguments": {"x-max-length": "abc"} if i == 5 else {}} for i in range(1, 11)]
    broker = Broker()
    with pytest.raises(DefinitionsError) as refused:
        broker.load_definitions({
            "vhosts": [{"name": "v"}],
            "exchanges": [{"name": "x1", "vhost": "v", "type": "direct"}],
            "queues": queues,
            "bindings": [{"source": "x1", "vhost": "v", "destination": "q1",
                          "destination_type": "queue", "routing_key": "k"}],
            "policies": [{"vhost": "v", "name": "p1", "pattern": "^q", "apply-to": "queues",
                          "definition": {"max-length": 5}}]})
    assert str(refused.value) == ("precondition_failed: invalid arg 'x-max-length' for queue "
                                  "'q5' in vhost 'v': \"expected integer, got longstr\"")
    vhost = broker.vhosts["v"]
    assert sorted(vhost.queues) == sorted(f"q{i}" for i in range(1, 11) if i != 5)
    assert "x1" in vhost.exchanges
    assert "p1" in vhost.policies.policies
    assert not vhost.exchanges["x1"].bindings


def test_a_policy_refused_stops_its_section_as_rabbitmq() -> None:
    """Policies are set one after the other (RabbitMQ's ``sequential_for_all``): those before
    the refused one are set, those after are not."""
    broker = Broker()
    policies = [{"vhost": "/", "name": name, "pattern": "^q", "definition": definition}
                for name, definition in (("a", {"max-length": 1}), ("b", {"max-length": "x"}),
                                         ("c", {"max-length": 2}))]
    with pytest.raises(DefinitionsError, match=r"\(//b\)"):
        broker.load_definitions({"policies": policies})
    assert sorted(broker.vhosts["/"].policies.policies) == ["a"]


def test_what_rabbitmq_skips_is_skipped() -> None:
    """Checked live on RabbitMQ 3.10.8: an exchange or a queue that exists is left as it is
    (no equivalence check: ``rabbit_definitions:add_exchange_int``, ``add_queue_int``), a
    queue named ``amq.*`` is skipped (with a warning in its log), and a binding whose source
    or destination does not exist is not made, silently (``rabbit_binding:add``'s error is
    not looked at)."""
    broker = Broker()
    ch = broker.connect().channel()
    ch.exchange_declare("events", "direct", durable=True)
    ch.queue_declare("q1", durable=True)
    broker.load_definitions({
        "exchanges": [{"name": "events", "vhost": "/", "type": "topic", "durable": False}],
        "queues": [{"name": "q1", "vhost": "/", "durable": False, "auto_delete": True,
                    "arguments": {"x-max-length": 3}},
                   {"name": "amq.mine", "vhost": "/"}],
        "bindings": [{"source": "nosuch", "vhost": "/", "destination": "q1",
                      "destination_type": "queue", "routing_key": "k"},
                     {"source": "amq.direct", "vhost": "/", "destination": "nosuch",
                      "destination_type": "queue", "routing_key": "k"},
                     {"source": "amq.direct", "vhost": "/", "destination": "q1",
                      "destination_type": "queue", "routing_key": "ok"}]})
    assert (broker.exchanges["events"].type, broker.exchanges["events"].durable) == (
        "direct", True)
    q1 = broker.queues["q1"]
    assert (q1.durable, q1.auto_delete, q1.arguments) == (True, False, {})
    assert "amq.mine" not in broker.queues
    assert [b.routing_key for b in q1.bindings.values() if b.source.name] == ["ok"]


def test_a_folder_of_files_loads_in_name_order_and_names_the_file_that_fails(
        tmp_path: Any) -> None:
    """As RabbitMQ's ``load_definitions`` of a folder (``rabbit_definitions_import_local_
    filesystem``): each file in name order; a file that fails stops the load, named."""
    (tmp_path / "1.json").write_text(json.dumps({"vhosts": [{"name": "v"}]}))
    (tmp_path / "2.json").write_text(json.dumps({"queues": [{"name": "q", "vhost": "v"}]}))
    broker = Broker()
    broker.load_definitions(tmp_path)
    assert "q" in broker.vhosts["v"].queues
    (tmp_path / "3.json").write_text('{"queues": true}')
    with pytest.raises(DefinitionsError) as refused:
        Broker().load_definitions(tmp_path)
    assert str(refused.value) == f"{tmp_path / '3.json'}: queues must be a list of objects, not true"
