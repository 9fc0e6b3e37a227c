"""The differential scenarios of the management API (see ``differential.py``)."""

from __future__ import annotations

from .differential import Step

_USERS = [Step("PUT", f"/users/{{{name}}}", {"password": f"pw-{name}", "tags": tags})
          for name, tags in (("plain", ""), ("mgmt", "management"), ("monitor", "monitoring"),
                             ("policy", "policymaker"), ("admin", "administrator"))]
_GRANT = [Step("PUT", "/vhosts/{vhost}", {}),
          Step("PUT", "/permissions/{vhost}/{mgmt}", {"configure": "^mine", "write": ".*",
                                                      "read": ".*"}),
          Step("PUT", "/permissions/{vhost}/{policy}", {"configure": ".*", "write": ".*",
                                                        "read": ".*"})]

#: Who the authorization scenario asks as: each management tag, with permissions in the vhost
#: (mgmt, policy) or without (monitor, admin), no tag at all (plain), and guest (an
#: administrator with permissions, the vhost's creator).
_WHO = ("plain", "mgmt", "monitor", "policy", "admin", "guest")
#: One route per rule of RabbitMQ's vocabulary (rabbit_mgmt_util:is_authorized_*), and what
#: each user is answered there: the rule decides before anything is looked up.
_RULES = ("/vhosts/{vhost}",                  # is_authorized_admin
          "/queues/{vhost}",                  # is_authorized_vhost
          "/queues/{vhost}/q1",               # is_authorized_vhost, then the queue
          "/queues/{vhost}/no-such-queue",
          "/exchanges/{vhost}/x1",
          "/bindings/{vhost}",
          "/vhosts/{vhost}/connections",
          "/vhost-limits/{vhost}",            # is_authorized_vhost_visible
          "/policies/{vhost}",                # is_authorized_vhost
          "/policies/{vhost}/no-such-policy",  # is_authorized_policies
          "/operator-policies/{vhost}/no-such-policy",  # is_authorized_admin
          "/parameters",                      # is_authorized_policies, no vhost
          "/global-parameters",               # is_authorized_global_parameters
          "/nodes",                           # is_authorized_monitor
          "/consumers/{vhost}",               # is_authorized
          "/definitions/{vhost}",             # is_authorized_admin
          "/healthchecks/node",               # is_authorized
          "/aliveness-test/{vhost}",          # is_authorized_vhost, then a direct connection
          "/vhosts/no-such-vhost",            # admin first, then 404
          "/queues/no-such-vhost/q1")         # a vhost that does not exist passes the rule

#: Queue declares' bodies RabbitMQ refuses (or takes), some of them not JSON at all.
_QUEUE_BODIES: tuple[object, ...] = (
    {"durable": "yes"}, {"durable": 1}, {"auto_delete": None},
    {"arguments": [1, 2]}, {"arguments": "xy"}, {"arguments": {"x-max-length": "x"}},
    b"[1, 2]", b"5", b"1e400", b'{"durable": 1e400}', b"NaN", b"{", b'"{}"',
    {"arguments": []}, b"null", {"zzz": 1}, {"durable": "true"},
)

#: Publishes' bodies RabbitMQ refuses (or takes).
_PUBLISH_BODIES: tuple[dict[str, object], ...] = (
    {"routing_key": "q1", "properties": {"priority": "high"}, "payload": "x",
     "payload_encoding": "string"},
    {"routing_key": 5, "properties": {}, "payload": "x", "payload_encoding": "string"},
    {"routing_key": "q1", "properties": {}, "payload": 5,
     "payload_encoding": "string"},
    {"routing_key": "q1", "properties": {}, "payload": "x",
     "payload_encoding": "rot13"},
    {"routing_key": "q1", "properties": [], "payload": "x",
     "payload_encoding": "string"},
    {"routing_key": "q1", "properties": {"headers": 5}, "payload": "x",
     "payload_encoding": "string"},
    {"routing_key": "q1", "properties": {"delivery_mode": 300}, "payload": "x",
     "payload_encoding": "string"},
    {"routing_key": "q1", "properties": {"nonsense": 1}, "payload": "x",
     "payload_encoding": "string"},
    {"routing_key": "q1", "properties": {}, "payload": "!!",
     "payload_encoding": "base64"},
    {"properties": {}},
)

#: Definitions RabbitMQ's import refuses (``POST /api/definitions``, the whole broker's, and
#: ``POST /api/definitions/{vhost}``): each is refused before it changes anything on RabbitMQ
#: too (checked against rabbit_definitions.erl, v3.10.8: no item here can be created there), or
#: changes only the run's vhost. What a malformed document does to RabbitMQ (a 500, an Erlang
#: term for a reason, an item skipped) and what embroker answers instead is in
#: test_differential.RABBITMQ_FAILS.
_WRONG_SECTIONS: tuple[tuple[str, object], ...] = (
                   ("queues", True), ("users", True), ("vhosts", True), ("permissions", True),
                   ("topic_permissions", 5), ("exchanges", "x"), ("global_parameters", True),
                   ("policies", {}), ("parameters", 5), ("bindings", True), ("queues", [5]),
                   ("exchanges", [5]), ("users", [5]), ("queues", [{"name": 5}]))
_REFUSED_ITEMS: tuple[dict[str, object], ...] = (
    {"queues": [{"name": "q", "vhost": "{vhost}-none"}]},
    {"exchanges": [{"name": "x", "vhost": "{vhost}", "type": "nosuchtype"}]},
    {"permissions": [{"user": "{vhost}-nobody", "vhost": "{vhost}", "configure": ".*",
                      "write": ".*", "read": ".*"}]},
    {"permissions": [{"user": "{vhost}-nobody", "vhost": "{vhost}", "configure": "(",
                      "write": ".*", "read": ".*"}]},
    {"permissions": [{"user": "{vhost}-nobody", "vhost": "{vhost}"}]},
    {"topic_permissions": [{"user": "{vhost}-nobody", "vhost": "{vhost}",
                            "exchange": "amq.topic", "write": ".*", "read": ".*"}]},
    {"users": [{"name": "{vhost}-u"}]},
    {"users": [{"password": "x", "tags": ""}]},
    {"users": [{"name": "{vhost}-u", "password": "x", "password_hash": "eHh4eA==",
                "tags": ""}]},
    {"users": [{"name": "{vhost}-u", "password": "x", "tags": "",
                "limits": {"max-connections": "x"}}]},
    {"policies": [{"vhost": "{vhost}-none", "name": "p", "pattern": "^x",
                   "definition": {"max-length": 1}}]},
    {"policies": [{"vhost": "{vhost}", "name": "p", "pattern": "^x",
                   "definition": {"max-length": "abc"}}]},
    {"policies": [{"vhost": "{vhost}", "pattern": "^x", "definition": {"max-length": 1}}]},
    {"policies": [{"vhost": "{vhost}", "name": "p", "pattern": 5,
                   "definition": {"max-length": 1}}]},
    {"parameters": [{"vhost": "{vhost}", "component": "nosuch", "name": "n", "value": {}}]},
    {"parameters": [{"vhost": "{vhost}", "component": "policy", "name": "n", "value": {}}]},
    {"queues": [{"name": "q", "vhost": "{vhost}", "durable": True, "auto_delete": False,
                 "arguments": {"x-max-length": "abc"}}]},
    {"bindings": [{"source": "x", "vhost": "{vhost}", "destination": "q1"}]},
)
#: What RabbitMQ's import skips: an existing queue (declared otherwise), an amq.* queue, a
#: binding whose source or destination is missing, or whose arguments are refused.
_SKIPPED: tuple[dict[str, object], ...] = (
    {"queues": [{"name": "q1", "vhost": "{vhost}", "durable": False, "auto_delete": True,
                 "arguments": {"x-max-length": 3}},
                {"name": "amq.q", "vhost": "{vhost}", "durable": True, "auto_delete": False,
                 "arguments": {}}]},
    {"bindings": [{"source": "nosuch", "vhost": "{vhost}", "destination": "q1",
                   "destination_type": "queue", "routing_key": "k", "arguments": {}},
                  {"source": "amq.direct", "vhost": "{vhost}", "destination": "nosuch",
                   "destination_type": "queue", "routing_key": "k", "arguments": {}},
                  {"source": "amq.headers", "vhost": "{vhost}", "destination": "q1",
                   "destination_type": "queue", "routing_key": "",
                   "arguments": {"x-match": "nope"}}]},
)
#: Queue a5 of ten refused: the sections before it and the other queues are imported, the
#: binding (a section after) is not.
_PARTIAL = {
    "exchanges": [{"name": "ax", "vhost": "{vhost}", "type": "direct", "durable": True,
                   "auto_delete": False, "internal": False, "arguments": {}}],
    "queues": [{"name": f"a{i}", "vhost": "{vhost}", "durable": True, "auto_delete": False,
                "arguments": {"x-max-length": "abc"} if i == 5 else {}} for i in range(1, 11)],
    "bindings": [{"source": "ax", "vhost": "{vhost}", "destination": "a1",
                  "destination_type": "queue", "routing_key": "k", "arguments": {}}],
    "policies": [{"vhost": "{vhost}", "name": "ap", "pattern": "^a", "apply-to": "queues",
                  "definition": {"max-length": 5}, "priority": 0}]}
#: A vhost's own import (``apply_defs/4``): its sections only, each item in the path's vhost.
_VHOST_DOCUMENTS: tuple[object, ...] = (
    b"not json", b"[]", {"queues": True},
    {"queues": [{"name": "b1", "arguments": {"x-max-length": "abc"}}]},
    {"exchanges": [{"name": "bx", "type": "nosuchtype"}]},
    {"policies": [{"name": "bp", "pattern": "^x", "definition": {"max-length": "abc"}}]},
    {"users": [5], "exchanges": [{"name": "amq.bx", "type": "direct"}]},
)
_BAD_DEFINITIONS = [
    Step("PUT", "/vhosts/{vhost}", {}),
    Step("PUT", "/queues/{vhost}/q1", {"durable": True}),
    *[Step("POST", "/definitions", body, show_body=True)
      for body in (b"not json", b"[]", b"5", b"null", b'"x"', b"  ", b"")],
    *[Step("POST", "/definitions", {section: value}, show_body=True)
      for section, value in _WRONG_SECTIONS],
    *[Step("POST", "/definitions", body, show_body=True) for body in _REFUSED_ITEMS],
    *[Step("POST", "/definitions", body, show_body=True) for body in _SKIPPED],
    Step("GET", "/queues/{vhost}/q1", values=("durable", "auto_delete", "arguments"),
         shape=False),  # (its statistics come and go)
    Step("GET", "/queues/{vhost}/q1/bindings", values=("*",), shape=False),
    Step("GET", "/queues/{vhost}/amq.q"),
    Step("POST", "/definitions", _PARTIAL),
    # (RabbitMQ answers the refusal as soon as it is in, while the other queues are still
    # being declared: the listing waits for them)
    Step("GET", "/queues/{vhost}?columns=name&sort=name", values=("*",), shape=False,
         settle=True),
    Step("GET", "/exchanges/{vhost}/ax/bindings/source", values=("*",), shape=False),
    Step("GET", "/policies/{vhost}", values=("0.name", "1.name")),
    *[Step("POST", "/definitions/{vhost}", body, show_body=True) for body in _VHOST_DOCUMENTS],
    Step("GET", "/exchanges/{vhost}/amq.bx"),
    Step("POST", "/definitions/{vhost}-none", {}),
    Step("POST", "/definitions/{vhost}-none", b"nope"),
]

SCENARIOS: dict[str, list[Step]] = {
    # Who may do what (issue #34): each rule as each kind of user, an administrator without
    # permissions in the vhost, and connections read and closed by their owner, by a monitor,
    # by another user and by an administrator.
    "authorization": [
        *_USERS, *_GRANT,
        Step("PUT", "/permissions/{vhost}/{plain}", {"configure": ".*", "write": ".*",
                                                     "read": ".*"}),
        Step("PUT", "/queues/{vhost}/q1", {}),
        Step("PUT", "/exchanges/{vhost}/x1", {"type": "fanout"}),
        Step("GET", "/auth", user=""),
        # (statuses and errors: the answers' shapes are the other scenarios')
        *[Step("GET", path, user=who, shape=False) for path in _RULES for who in _WHO],
        # An administrator without permissions: sees and reads (is_authorized_vhost lets
        # administrators through), but the work goes through a direct connection as itself.
        Step("GET", "/queues/{vhost}/q1", user="admin", values=("name", "vhost"), shape=False),
        Step("PUT", "/queues/{vhost}/q2", {}, user="admin"),
        Step("DELETE", "/queues/{vhost}/q1", user="admin"),
        Step("POST", "/queues/{vhost}/q1/get", {"count": 1, "ackmode": "ack_requeue_true",
                                                "encoding": "auto"}, user="admin"),
        Step("POST", "/exchanges/{vhost}/amq.default/publish", {
            "routing_key": "q1", "properties": {}, "payload": "x",
            "payload_encoding": "string"}, user="admin"),
        Step("DELETE", "/queues/{vhost}/q1", user="monitor"),
        Step("DELETE", "/queues/{vhost}/q1/contents", user="monitor"),
        Step("PUT", "/queues/{vhost}/q3", {}, user="monitor"),
        Step("POST", "/queues/{vhost}/q1/actions", {"action": "sync"}, user="policy"),
        Step("PUT", "/policies/{vhost}/p1", {"pattern": "^q", "definition": {
            "max-length": 5}}, user="mgmt"),
        Step("PUT", "/policies/{vhost}/p1", {"pattern": "^q", "definition": {
            "max-length": 5}}, user="monitor"),
        Step("PUT", "/policies/{vhost}/p1", {"pattern": "^q", "definition": {
            "max-length": 5}}, user="admin"),
        Step("DELETE", "/policies/{vhost}/p1", user="policy"),
        Step("PUT", "/vhost-limits/{vhost}/max-queues", {"value": 5}, user="policy"),
        Step("PUT", "/users/{plain}", {"password": "x", "tags": ""}, user="monitor"),
        Step("DELETE", "/vhosts/{vhost}", user="monitor"),
        # Connections: each user's own, a monitor's view of all, an administrator's closes.
        Step("CONNECT", "g", user="guest"),
        Step("CONNECT", "m", user="mgmt"),
        Step("CONNECT", "p", user="plain"),
        *[Step("GET", "/connections/{conn:g}", user=who, values=("user", "name"), shape=False)
          for who in _WHO],
        Step("GET", "/connections/{conn:m}", user="mgmt", values=("user", "name"), shape=False),
        Step("GET", "/connections/{conn:g}/channels", user="mgmt"),
        Step("GET", "/connections/{conn:g}/channels", user="monitor", values=("0.name",), shape=False),
        Step("GET", "/channels/{chan:g:1}", user="mgmt"),
        Step("GET", "/channels/{chan:g:1}", user="monitor", values=("name", "user"), shape=False),
        Step("GET", "/channels/{chan:m:1}", user="mgmt", values=("name", "user"), shape=False),
        Step("GET", "/connections/no-such-connection", user="monitor"),
        Step("GET", "/connections/username/{mgmt}", user="monitor", values=("0.user",), shape=False),
        Step("GET", "/connections/username/{mgmt}", user="mgmt"),
        Step("DELETE", "/connections/{conn:g}", user="monitor"),
        Step("DELETE", "/connections/{conn:g}", user="mgmt"),
        Step("DELETE", "/connections/{conn:g}", user="policy"),
        Step("DELETE", "/connections/no-such-connection", user="monitor"),
        Step("DELETE", "/connections/no-such-connection", user="admin"),
        Step("DELETE", "/connections/{conn:m}", user="mgmt"),
        Step("DELETE", "/connections/{conn:g}", user="admin"),
        Step("DELETE", "/connections/username/{plain}", user="plain"),
        Step("DELETE", "/connections/username/{plain}", user="admin"),
    ],
    # Bodies that are not what a route takes: RabbitMQ's 400s, and, where RabbitMQ itself
    # fails (500, no body), embroker's 400 (test_differential.RABBITMQ_FAILS says which).
    "bad_bodies": [
        *_USERS, Step("PUT", "/vhosts/{vhost}", {}),
        Step("PUT", "/queues/{vhost}/q1", {}),
        *[Step("PUT", "/queues/{vhost}/qb", body, show_body=True) for body in _QUEUE_BODIES],
        Step("DELETE", "/queues/{vhost}/qb"),
        *[Step("PUT", "/exchanges/{vhost}/xb", body, show_body=True) for body in (
            {"type": 5}, {"type": "direct", "internal": "maybe"}, {"arguments": 7},
            {"type": "direct", "durable": "false"})],
        Step("DELETE", "/exchanges/{vhost}/xb"),
        *[Step("PUT", "/users/{vhost}-u", body, show_body=True) for body in (
            {}, {"password": "a"}, {"password": None, "tags": ""}, {"password": 5, "tags": ""},
            {"password": "a", "tags": 5}, {"password": "a", "tags": ["a", 5]},
            {"password": "a", "password_hash": "b", "tags": ""},
            {"password_hash": "!!!", "tags": ""},
            {"password": "a", "tags": "", "limits": {"max-connections": "x"}},
            {"password": "a", "tags": "", "limits": {"max-connections": 5}})],
        Step("GET", "/users/{vhost}-u", values=("name", "tags", "limits")),
        Step("PUT", "/users/{vhost}-u", {"tags": "management"}),
        Step("GET", "/users/{vhost}-u", values=("name", "tags", "limits")),
        Step("DELETE", "/users/{vhost}-u"),
        *[Step("POST", "/exchanges/{vhost}/amq.default/publish", body, show_body=True)
          for body in _PUBLISH_BODIES],
        *[Step("POST", "/queues/{vhost}/q1/get", body, show_body=True) for body in (
            {"count": "x", "ackmode": "ack_requeue_true", "encoding": "auto"},
            {"count": 1, "ackmode": "nope", "encoding": "auto"},
            {"count": 1, "ackmode": "ack_requeue_true", "encoding": "nope"},
            {"count": 1, "ackmode": "ack_requeue_true", "encoding": "auto",
             "truncate": "x"},
            {"count": 1})],
        *[Step("PUT", "/permissions/{vhost}/{plain}", body, show_body=True) for body in (
            {"configure": 5, "write": ".*", "read": ".*"},
            {"configure": "(", "write": ".*", "read": ".*"}, {"configure": ".*"})],
        *[Step("PUT", "/policies/{vhost}/pb", body, show_body=True) for body in (
            {"pattern": 5, "definition": {"max-length": 1}},
            {"pattern": "x", "definition": [1]},
            {"pattern": "x", "definition": {"max-length": 1}, "priority": "high"},
            {"pattern": "x", "definition": {"max-length": "x"}},
            {"pattern": "x", "definition": {"max-length": 1}, "apply-to": "all-the-things"})],
        *[Step("PUT", "/vhost-limits/{vhost}/max-queues", body, show_body=True) for body in (
            {"value": "x"}, {}, {"value": None})],
        *[Step("PUT", "/vhosts/{vhost}", body, show_body=True) for body in (
            {"tracing": "maybe"}, {"description": 5}, {"tags": 5})],
        *[Step("POST", "/bindings/{vhost}/e/amq.direct/q/q1", body, show_body=True) for body in (
            {"routing_key": 5}, {"arguments": 5})],
        Step("POST", "/users/bulk-delete", {"users": "x"}, show_body=True),
        Step("POST", "/users/bulk-delete", {}, show_body=True),
        Step("POST", "/queues/{vhost}/q1/actions", {"action": "explode"}, show_body=True),
        Step("POST", "/definitions/{vhost}", {"queues": 5}, show_body=True),
        Step("POST", "/definitions/{vhost}", {"queues": [5]}, show_body=True),
    ],

    "errors_and_auth": [
        Step("GET", "/overview", user=""),
        Step("GET", "/overview", user="nobody"),
        Step("POST", "/overview", {}),
        Step("PATCH", "/queues/{vhost}/q"),
        Step("GET", "/no-such-thing"),
        Step("GET", "/queues/{vhost}/no-such-queue"),
        Step("GET", "/exchanges/{vhost}/no-such-exchange"),
        Step("PUT", "/queues/{vhost}/q", {}),  # no such vhost yet
        *_USERS, *_GRANT,
        Step("GET", "/overview", user="plain"),
        Step("GET", "/whoami", user="mgmt", values=("*",)),
        Step("GET", "/whoami", user="admin", values=("*",)),
        Step("GET", "/users", user="mgmt"),
        Step("GET", "/users", user="monitor"),
        Step("GET", "/nodes", user="mgmt"),
        Step("GET", "/queues/{vhost}", user="monitor", values=("*",)),
        Step("GET", "/policies/{vhost}", user="mgmt"),
        Step("GET", "/policies/{vhost}", user="policy", values=("*",)),
        Step("PUT", "/vhosts/{vhost}", {}, user="policy"),
        Step("PUT", "/queues/{vhost}/mine-1", {}, user="mgmt"),
        Step("PUT", "/queues/{vhost}/theirs", {}, user="mgmt"),
        Step("PUT", "/queues/{vhost}/bad", {"arguments": {"x-max-length": "x"}}),
        Step("PUT", "/queues/{vhost}/q2", "not an object"),
        Step("PUT", "/exchanges/{vhost}/amq.mine", {"type": "direct"}),
        Step("DELETE", "/exchanges/{vhost}/amq.direct"),
        # (a type named after the run: RabbitMQ says "unknown exchange type" for a name that
        # is no Erlang atom and "invalid exchange type" for one that is, and anything may have
        # made "nope" an atom in the reference node before)
        Step("PUT", "/exchanges/{vhost}/x1", {"type": "nope-{vhost}"}),
        Step("GET", "/users/{mgmt}", values=("name", "tags", "hashing_algorithm", "limits")),
        Step("GET", "/permissions/{vhost}/{mgmt}", values=("*",)),
        Step("GET", "/vhosts/{vhost}/permissions", values=("*",), shape=False),
        Step("DELETE", "/permissions/{vhost}/{mgmt}"),
        Step("GET", "/permissions/{vhost}/{mgmt}"),
        Step("DELETE", "/permissions/{vhost}/{mgmt}"),
        Step("PUT", "/permissions/{vhost}/nobody", {"configure": ".*", "write": ".*",
                                                   "read": ".*"}),
        Step("PUT", "/permissions/{vhost}/{mgmt}", {"configure": ".*", "write": ".*"}),
        Step("PUT", "/topic-permissions/{vhost}/{mgmt}", {"exchange": "amq.topic",
                                                          "write": "^a", "read": ".*"}),
        Step("PUT", "/topic-permissions/{vhost}/{mgmt}", {"exchange": "amq.topic",
                                                          "write": "^b", "read": ".*"}),
        Step("PUT", "/topic-permissions/{vhost}/{mgmt}", {"exchange": "amq.topic"}),
        Step("PUT", "/topic-permissions/{vhost}/nobody", {"exchange": "amq.topic",
                                                          "write": ".*", "read": ".*"}),
        Step("GET", "/topic-permissions/{vhost}/{mgmt}", values=("*",)),
        Step("DELETE", "/topic-permissions/{vhost}/{mgmt}"),
        Step("GET", "/topic-permissions/{vhost}/{mgmt}"),
        Step("DELETE", "/topic-permissions/{vhost}/{mgmt}"),
        Step("DELETE", "/users/{plain}"),
        Step("GET", "/users/{plain}"),
        Step("DELETE", "/vhosts/{vhost}"),
        Step("GET", "/vhosts/{vhost}"),
        Step("DELETE", "/vhosts/{vhost}"),
    ],
    "topology": [
        Step("PUT", "/vhosts/{vhost}", {"description": "for a test", "tags": "a,b"}),
        Step("PUT", "/vhosts/{vhost}", {}),
        Step("GET", "/vhosts/{vhost}", values=("name", "description", "tags", "metadata",
                                               "tracing", "messages")),
        Step("PUT", "/exchanges/{vhost}/events", {"type": "topic", "durable": True}),
        Step("PUT", "/exchanges/{vhost}/events", {"type": "topic", "durable": True}),
        Step("PUT", "/exchanges/{vhost}/events", {"type": "direct", "durable": True}),
        Step("PUT", "/exchanges/{vhost}/plain", {}),
        Step("GET", "/exchanges/{vhost}/plain", values=("type", "durable", "auto_delete",
                                                        "internal", "arguments")),
        Step("GET", "/exchanges/{vhost}/events"),
        Step("PUT", "/queues/{vhost}/audit", {"durable": True,
                                              "arguments": {"x-message-ttl": 60000}}),
        Step("PUT", "/queues/{vhost}/audit", {"durable": True,
                                              "arguments": {"x-message-ttl": 60000}}),
        Step("PUT", "/queues/{vhost}/audit", {"durable": False}),
        Step("PUT", "/queues/{vhost}/empty", {}),
        Step("POST", "/bindings/{vhost}/e/events/q/audit", {"routing_key": "order.*"}),
        Step("POST", "/bindings/{vhost}/e/events/q/nope", {"routing_key": "x"}),
        Step("POST", "/bindings/{vhost}/e/events/e/plain", {"routing_key": "#"}),
        Step("GET", "/bindings/{vhost}", values=("*",)),
        Step("GET", "/queues/{vhost}/audit/bindings", values=("*",)),
        Step("GET", "/exchanges/{vhost}/events/bindings/source", values=("*",)),
        Step("GET", "/exchanges/{vhost}/plain/bindings/destination", values=("*",)),
        Step("GET", "/bindings/{vhost}/e/events/q/audit", values=("*",)),
        Step("GET", "/bindings/{vhost}/e/events/q/audit/order.%252A", values=("*",)),
        Step("GET", "/bindings/{vhost}/e/events/q/audit/nope"),
        Step("POST", "/exchanges/{vhost}/events/publish",
             {"properties": {"content_type": "text/plain", "headers": {"h": 1}},
              "routing_key": "order.created", "payload": "hello", "payload_encoding": "string"},
             values=("*",)),
        Step("POST", "/exchanges/{vhost}/events/publish",
             {"properties": {}, "routing_key": "nothing", "payload": "aGk=",
              "payload_encoding": "base64"}, values=("*",)),
        Step("POST", "/exchanges/{vhost}/no-such/publish",
             {"properties": {}, "routing_key": "a", "payload": "x",
              "payload_encoding": "string"}),
        Step("POST", "/exchanges/{vhost}/events/publish", {"routing_key": "a"}),
        Step("GET", "/queues/{vhost}/audit", settle=True,
             values=("name", "durable", "arguments", "messages", "messages_ready",
                     "messages_unacknowledged", "consumers", "type", "state", "policy",
                     "exclusive", "effective_policy_definition")),
        Step("GET", "/queues/{vhost}", values=("0.name", "1.name", "0.messages",
                                               "1.messages")),
        Step("POST", "/queues/{vhost}/audit/get", {"count": 5}),
        Step("POST", "/queues/{vhost}/audit/get",
             {"count": 5, "ackmode": "ack_requeue_true", "encoding": "auto",
              "truncate": 50000}, values=("*",)),
        Step("POST", "/queues/{vhost}/audit/get",
             {"count": 1, "ackmode": "ack_requeue_true", "encoding": "base64"},
             values=("0.payload", "0.payload_encoding", "0.payload_bytes", "0.redelivered")),
        Step("DELETE", "/queues/{vhost}/audit?if-empty=true"),
        Step("DELETE", "/exchanges/{vhost}/events?if-unused=true"),
        Step("DELETE", "/queues/{vhost}/audit/contents"),
        Step("GET", "/queues/{vhost}/audit", settle=True, values=("messages",)),
        Step("DELETE", "/bindings/{vhost}/e/events/q/audit/order.%252A"),
        Step("DELETE", "/bindings/{vhost}/e/events/q/audit/order.%252A"),
        Step("GET", "/queues/{vhost}/audit/bindings", values=("*",)),
        Step("DELETE", "/queues/{vhost}/audit"),
        Step("DELETE", "/queues/{vhost}/audit"),
        Step("DELETE", "/exchanges/{vhost}/events"),
        Step("GET", "/exchanges/{vhost}/events"),
    ],
    "connections_and_consumers": [
        Step("PUT", "/vhosts/{vhost}", {}),
        Step("PUT", "/queues/{vhost}/work", {}),
        Step("POST", "/exchanges/{vhost}/amq.default/publish",
             {"properties": {}, "routing_key": "work", "payload": "job",
              "payload_encoding": "string"}, values=("*",)),
        Step("CONSUME", "work"),
        Step("GET", "/vhosts/{vhost}/connections", settle=True,
             values=("0.user", "0.vhost", "0.type", "0.protocol",
                     "0.user_provided_name", "0.auth_mechanism", "0.ssl", "0.state")),
        Step("GET", "/vhosts/{vhost}/channels",
             values=("0.number", "0.prefetch_count", "0.consumer_count",
                     "0.messages_unacknowledged", "0.confirm", "0.transactional",
                     "0.vhost", "0.user")),
        Step("GET", "/consumers/{vhost}",
             values=("0.consumer_tag", "0.ack_required", "0.prefetch_count", "0.queue",
                     "0.exclusive", "0.active", "0.activity_status", "0.arguments")),
        Step("GET", "/queues/{vhost}/work",
             values=("messages", "messages_ready", "messages_unacknowledged", "consumers",
                     "consumer_details.0.consumer_tag")),
        Step("GET", "/overview", values=("management_version", "rates_mode")),
        Step("GET", "/nodes"),
        Step("GET", "/aliveness-test/{vhost}", values=("*",)),
        Step("GET", "/health/checks/alarms", values=("*",)),
        Step("GET", "/health/checks/virtual-hosts", values=("*",)),
        Step("GET", "/health/checks/node-is-quorum-critical", values=("*",)),
        Step("GET", "/health/checks/port-listener/1", values=("status",)),
    ],
    "policies_limits_definitions": [
        Step("PUT", "/vhosts/{vhost}", {}),
        Step("PUT", "/policies/{vhost}/ttl", {"pattern": "^q", "definition":
                                              {"message-ttl": 1000}, "priority": 1,
                                              "apply-to": "queues"}),
        Step("PUT", "/policies/{vhost}/ttl", {"pattern": "^q", "definition":
                                              {"message-ttl": 2000}, "priority": 1,
                                              "apply-to": "queues"}),
        Step("PUT", "/policies/{vhost}/bad", {"pattern": "^q", "definition":
                                              {"message-ttl": "x"}}),
        Step("PUT", "/policies/{vhost}/bad", {"pattern": "^q"}),
        Step("GET", "/policies/{vhost}/ttl", values=("*",)),
        Step("GET", "/policies/{vhost}", values=("*",)),
        Step("PUT", "/operator-policies/{vhost}/cap", {"pattern": ".*", "definition":
                                                       {"max-length": 10},
                                                       "apply-to": "queues"}),
        Step("GET", "/operator-policies/{vhost}", values=("*",)),
        Step("PUT", "/queues/{vhost}/q1", {}),
        Step("GET", "/queues/{vhost}/q1", settle=True,
             values=("policy", "operator_policy", "effective_policy_definition")),
        Step("PUT", "/vhost-limits/{vhost}/max-queues", {"value": 5}),
        Step("GET", "/vhost-limits/{vhost}", values=("*",)),
        Step("DELETE", "/vhost-limits/{vhost}/max-queues"),
        Step("GET", "/vhost-limits/{vhost}", values=("*",)),
        Step("POST", "/definitions/{vhost}", {
            "queues": [{"name": "q2", "durable": True, "auto_delete": False,
                        "arguments": {}}],
            "exchanges": [{"name": "x2", "type": "fanout", "durable": True,
                           "auto_delete": False, "internal": False, "arguments": {}}],
            "bindings": [{"source": "x2", "destination": "q2", "destination_type": "queue",
                          "routing_key": "", "arguments": {}}]}),
        Step("GET", "/definitions/{vhost}", values=("*",)),
        Step("DELETE", "/policies/{vhost}/ttl"),
        Step("DELETE", "/policies/{vhost}/ttl"),
        Step("DELETE", "/operator-policies/{vhost}/cap"),
    ],
    # The tracing plugin (rabbitmq_tracing): the trace is named after the run's vhost, and so
    # is its log file, unique on a node the runs share.
    "tracing": [
        *_USERS,
        Step("PUT", "/vhosts/{vhost}", {}),
        Step("PUT", "/traces/{vhost}/{vhost}", {}),
        Step("PUT", "/traces/{vhost}/{vhost}", {"format": "xml", "pattern": "#"}),
        Step("PUT", "/traces/{vhost}/{vhost}", {"format": "json", "pattern": "#",
                                                "max_payload_bytes": "x"}),
        Step("PUT", "/traces/{vhost}/{vhost}", {"format": "json", "pattern": "#"},
             user="mgmt"),
        Step("PUT", "/traces/{vhost}/{vhost}", {"format": "json", "pattern": "publish.#",
                                                "max_payload_bytes": 5}),
        Step("PUT", "/queues/{vhost}/q", {}),
        Step("POST", "/exchanges/{vhost}/amq.default/publish", {
            "properties": {"headers": {"h": 1}, "content_type": "text/plain",
                           "delivery_mode": 2},
            "routing_key": "q", "payload": "hello world", "payload_encoding": "string"}),
        Step("GET", "/traces/{vhost}/{vhost}", settle=True,  # (one wait for both)
             values=("name", "vhost", "format", "pattern", "max_payload_bytes",
                     "queue.exclusive", "queue.durable", "queue.consumers", "queue.messages",
                     "queue.vhost")),
        Step("GET", "/traces/{vhost}/nope"),
        Step("GET", "/vhosts/{vhost}", values=("tracing",)),
        Step("GET", "/trace-files/{vhost}.log",
             values=("type", "exchange", "routing_keys", "routed_queues", "queue", "payload",
                     "properties", "user", "channel", "vhost")),
        Step("GET", "/trace-files"),
        Step("GET", "/trace-files/{vhost}.log", user="mgmt"),
        Step("DELETE", "/traces/{vhost}/{vhost}"),
        Step("DELETE", "/traces/{vhost}/{vhost}"),
        Step("DELETE", "/trace-files/{vhost}.log"),
        Step("GET", "/trace-files/{vhost}.log"),
        Step("DELETE", "/trace-files/{vhost}.log"),
    ],
    # What definitions RabbitMQ refuses, skips or imports in part, on both routes (issue 44).
    "bad_definitions": _BAD_DEFINITIONS,
}
