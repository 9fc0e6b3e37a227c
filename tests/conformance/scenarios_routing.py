"""Scenarios: routing by the direct, fanout, topic and headers exchanges; CC/BCC; mandatory."""

from __future__ import annotations

from typing import Any

from .harness import ChannelProxy, Session


def _queues(s: Session, ch: ChannelProxy, x: str, bindings: dict[str, list[Any]]) -> dict[str, str]:
    """Declare one queue per entry, bound to ``x`` with each key (or (key, arguments))."""
    names = {}
    for base, keys in bindings.items():
        q = s.name(base)
        ch.queue_declare(q)
        for key in keys:
            if isinstance(key, tuple):
                ch.queue_bind(q, x, key[0], arguments=key[1])
            else:
                ch.queue_bind(q, x, key)
        names[base] = q
    return names


def _routes(s: Session, ch: ChannelProxy, x: str, queues: dict[str, str],
            publishes: list[tuple[str, dict | None]]) -> dict[str, list[str]]:
    """Publish each (routing key, properties) with its index as body; which queue got which."""
    for i, (rk, props) in enumerate(publishes):
        ch.basic_publish(x, rk, str(i).encode(), props)
    got: dict[str, list[str]] = {}
    for base, q in queues.items():
        got[base] = [publishes[int(b)][0] for b in ch.drain(q)]
    return got


# --------------------------------------------------------------------------------------------
# direct and fanout


def scenario_route_direct(s: Session) -> None:
    ch = s.channel()
    x = s.name("x")
    ch.exchange_declare(x, "direct")
    qs = _queues(s, ch, x, {"qa": ["a", "b"], "qa2": ["a"], "qempty": [""], "qcase": ["A"]})
    got = _routes(s, ch, x, qs, [(k, None) for k in ("a", "b", "c", "", "A", "a.b", "*", "#")])
    s.expect(got, {"qa": ["a", "b"], "qa2": ["a"], "qempty": [""], "qcase": ["A"]})


def scenario_route_direct_ignores_wildcards(s: Session) -> None:
    ch = s.channel()
    x = s.name("x")
    ch.exchange_declare(x, "direct")
    qs = _queues(s, ch, x, {"qstar": ["*"], "qhash": ["#"]})
    got = _routes(s, ch, x, qs, [("a", None), ("*", None), ("#", None)])
    s.expect(got, {"qstar": ["*"], "qhash": ["#"]})


def scenario_route_fanout(s: Session) -> None:
    ch = s.channel()
    x = s.name("x")
    ch.exchange_declare(x, "fanout")
    qs = _queues(s, ch, x, {"q1": [""], "q2": ["anything"], "q3": ["a", "b"]})
    got = _routes(s, ch, x, qs, [("k", None), ("", None)])
    s.expect(got, {"q1": ["k", ""], "q2": ["k", ""], "q3": ["k", ""]},
             "fanout ignores keys; two bindings of one queue deliver once")


def scenario_route_amq_exchanges(s: Session) -> None:
    """The predeclared exchanges route like any other (unique keys keep strangers out)."""
    ch = s.channel()
    q = s.name("q")
    key = s.name("k")
    ch.queue_declare(q, exclusive=True)
    ch.queue_bind(q, "amq.direct", key)
    ch.queue_bind(q, "amq.topic", key + ".*")
    ch.basic_publish("amq.direct", key, b"direct")
    ch.basic_publish("amq.topic", key + ".x", b"topic")
    s.expect_bodies(ch, q, [b"direct", b"topic"])
    ch.queue_unbind(q, "amq.direct", key)
    ch.queue_unbind(q, "amq.topic", key + ".*")


# --------------------------------------------------------------------------------------------
# default exchange and mandatory


def scenario_route_default_exchange(s: Session) -> None:
    ch = s.channel()
    q = s.name("q")
    ch.queue_declare(q)
    ch.basic_publish("", q, b"to q")
    ch.basic_publish("", s.name("missing"), b"dropped")
    s.expect(ch.is_open, True, "publishing to a missing queue is not an error")
    ch.basic_publish("", s.name("missing"), b"returned", {"message_id": "m"}, mandatory=True)
    s.expect([tuple(r) for r in ch.returned],
             [(312, "NO_ROUTE", "", "missing", {"message_id": "m"}, b"returned")])
    ch.basic_publish("", q, b"mandatory, routed", mandatory=True)
    s.expect(len(ch.returned), 1, "no return when routed")
    ch.basic_publish("", "", b"empty key", mandatory=True)
    s.expect(len(ch.returned), 2, "routing key '' names no queue")
    m = ch.basic_get(q, auto_ack=True)
    s.expect((getattr(m, "exchange", None), getattr(m, "routing_key", None)), ("", "q"))
    s.expect_bodies(ch, q, [b"mandatory, routed"])


def scenario_route_mandatory_unroutable(s: Session) -> None:
    ch = s.channel()
    x = s.name("x")
    ch.exchange_declare(x, "direct")
    props = {"content_type": "text/plain", "headers": {"a": 1, "s": "x"}, "delivery_mode": 2,
             "priority": 3, "correlation_id": "c", "reply_to": "r", "expiration": "60000",
             "message_id": "m", "timestamp": 1700000000, "type": "t", "app_id": "app",
             "content_encoding": "utf-8", "user_id": "guest", "cluster_id": "cl"}
    ch.basic_publish(x, "nowhere", b"body", props, mandatory=True)
    ch.basic_publish(x, "nowhere", b"not mandatory")
    ch.basic_publish(x, "nowhere", b"", mandatory=True)
    s.expect([(r.reply_code, r.reply_text, r.exchange, r.routing_key, r.body)
              for r in ch.returned],
             [(312, "NO_ROUTE", "x", "nowhere", b"body"), (312, "NO_ROUTE", "x", "nowhere", b"")])
    s.expect(ch.returned[0].properties if ch.returned else None, props)


def scenario_route_mandatory_fanout_no_bindings(s: Session) -> None:
    ch = s.channel()
    x = s.name("x")
    ch.exchange_declare(x, "fanout")
    ch.basic_publish(x, "", b"m", mandatory=True)
    s.expect([r.reply_code for r in ch.returned], [312])


def scenario_route_user_id_must_match(s: Session) -> None:
    ch = s.channel()
    q = s.name("q")
    ch.queue_declare(q)
    r = ch.basic_publish("", q, b"m", {"user_id": "somebody-else"})
    s.expect_error(r, 406, "PRECONDITION_FAILED - user_id property set to 'somebody-else' but"
                   " authenticated user was 'guest'")


# --------------------------------------------------------------------------------------------
# topic

TOPIC_KEYS = ["", "a", "b", "a.b", "a.b.c", "a..b", ".a", "a.", ".", "..", "a.b.b", "b.a",
              "a.x.b", "a.x.y.b", "*", "#", "a.*", "a.#"]


def _topic(s: Session, patterns: dict[str, list[str]]) -> dict[str, list[str]]:
    ch = s.channel()
    x = s.name("x")
    ch.exchange_declare(x, "topic")
    qs = _queues(s, ch, x, patterns)
    got = _routes(s, ch, x, qs, [(k, None) for k in TOPIC_KEYS])
    s.note("routes", got)
    return got


def scenario_route_topic_basics(s: Session) -> None:
    got = _topic(s, {"exact": ["a.b"], "star": ["a.*"], "star2": ["*.*"], "starfirst": ["*.b"],
                     "empty": [""], "one": ["*"]})
    s.expect(got["exact"], ["a.b"])
    s.expect(got["star"], ["a.b", "a.", "a.*", "a.#"], "a.* matches an empty second word")
    s.expect(got["empty"], [""], "the empty pattern matches only the empty key")
    s.expect(got["one"], ["a", "b", "*", "#"], "* matches one word, but not the empty key")


def scenario_route_topic_hash(s: Session) -> None:
    got = _topic(s, {"hash": ["#"], "hashfirst": ["#.b"], "hashlast": ["a.#"],
                     "hashmid": ["a.#.b"], "hashhash": ["#.#"], "hashstar": ["#.*"],
                     "starhash": ["*.#"], "hashstarhash": ["#.*.#"]})
    s.expect(got["hash"], TOPIC_KEYS, "# matches everything, including the empty key")
    s.expect(got["hashhash"], TOPIC_KEYS)
    s.expect(got["hashmid"], ["a.b", "a..b", "a.b.b", "a.x.b", "a.x.y.b"],
             "# in the middle matches zero or more words")
    s.expect(got["hashstar"], TOPIC_KEYS[1:], "#.* needs at least one word")
    s.expect(got["hashstarhash"], TOPIC_KEYS[1:])
    s.expect(got["hashfirst"], ["b", "a.b", "a..b", "a.b.b", "a.x.b", "a.x.y.b"])
    s.expect(got["hashlast"], ["a", "a.b", "a.b.c", "a..b", "a.", "a.b.b", "a.x.b", "a.x.y.b",
                               "a.*", "a.#"])


def scenario_route_topic_empty_words(s: Session) -> None:
    got = _topic(s, {"a..b": ["a..b"], "lead": [".a"], "trail": ["a."], "dot": ["."],
                     "star.star": ["*.*"], "a.*.b": ["a.*.b"], ".*": [".*"], "*.": ["*."]})
    s.expect(got["a..b"], ["a..b"])
    s.expect(got["a.*.b"], ["a..b", "a.b.b", "a.x.b"], "* matches an empty word")
    s.expect(got["dot"], ["."])
    s.expect(got["star.star"], ["a.b", ".a", "a.", ".", "b.a", "a.*", "a.#"],
             "two words, empty or not")
    s.expect(got[".*"], [".a", "."])
    s.expect(got["*."], ["a.", "."])


def scenario_route_topic_multiple_bindings_once(s: Session) -> None:
    got = _topic(s, {"q": ["a.*", "a.#", "#", "a.b", "*.b"]})
    s.expect(got["q"], TOPIC_KEYS, "a queue gets a message once however many bindings match")


def scenario_route_topic_wildcards_in_words(s: Session) -> None:
    """Only whole words are wildcards: 'a*' and 'a#' are plain words."""
    ch = s.channel()
    x = s.name("x")
    ch.exchange_declare(x, "topic")
    qs = _queues(s, ch, x, {"astar": ["a*"], "ahash": ["a#.b"], "literal": ["a.*"]})
    got = _routes(s, ch, x, qs, [(k, None) for k in ("a", "ab", "a*", "a#.b", "ax.b", "a.*")])
    s.expect(got, {"astar": ["a*"], "ahash": ["a#.b"], "literal": ["a.*"]})


def scenario_route_topic_unbind(s: Session) -> None:
    ch = s.channel()
    x, q = s.name("x"), s.name("q")
    ch.exchange_declare(x, "topic")
    ch.queue_declare(q)
    ch.queue_bind(q, x, "a.#")
    ch.queue_bind(q, x, "a.*")
    ch.queue_unbind(q, x, "a.#")
    ch.basic_publish(x, "a.b", b"still a.*")
    ch.basic_publish(x, "a.b.c", b"no longer")
    s.expect_bodies(ch, q, [b"still a.*"])


# --------------------------------------------------------------------------------------------
# headers


def _headers(s: Session, bindings: dict[str, list[dict]], messages: list[dict | None]
             ) -> dict[str, list[int]]:
    """Bind one queue per entry with each argument table; publish each headers table."""
    ch = s.channel()
    x = s.name("x")
    ch.exchange_declare(x, "headers")
    qs = _queues(s, ch, x, {k: [("", a) for a in v] for k, v in bindings.items()})
    for i, h in enumerate(messages):
        ch.basic_publish(x, "", str(i).encode(), None if h is None else {"headers": h})
    got = {base: [int(b) for b in ch.drain(q)] for base, q in qs.items()}
    s.note("routes", got)
    return got


def scenario_route_headers_all_any(s: Session) -> None:
    got = _headers(s, {
        "all": [{"x-match": "all", "a": "1", "b": "2"}],
        "any": [{"x-match": "any", "a": "1", "b": "2"}],
        "default": [{"a": "1", "b": "2"}],
        "empty_all": [{"x-match": "all"}],
        "empty_any": [{"x-match": "any"}],
        "no_args": [{}],
    }, [
        {"a": "1", "b": "2"},  # 0
        {"a": "1"},  # 1
        {"a": "1", "b": "3"},  # 2
        {"a": "1", "b": "2", "c": "3"},  # 3
        {},  # 4
        None,  # 5 no headers at all
        {"b": "2"},  # 6
    ])
    s.expect(got["all"], [0, 3])
    s.expect(got["default"], [0, 3], "x-match defaults to all")
    s.expect(got["any"], [0, 1, 2, 3, 6])
    s.expect(got["empty_all"], [0, 1, 2, 3, 4, 5, 6], "nothing to match: all matches")
    s.expect(got["no_args"], [0, 1, 2, 3, 4, 5, 6])
    s.expect(got["empty_any"], [], "nothing to match: any matches nothing")


def scenario_route_headers_x_keys(s: Session) -> None:
    """Binding keys starting with x- are ignored, unless x-match ends in -with-x."""
    got = _headers(s, {
        "all": [{"x-match": "all", "x-k": "1", "a": "1"}],
        "any": [{"x-match": "any", "x-k": "1"}],
        "any_a": [{"x-match": "any", "x-k": "1", "a": "1"}],
        "all_with_x": [{"x-match": "all-with-x", "x-k": "1", "a": "1"}],
        "any_with_x": [{"x-match": "any-with-x", "x-k": "1", "a": "2"}],
    }, [
        {"a": "1"},  # 0
        {"a": "1", "x-k": "1"},  # 1
        {"x-k": "1"},  # 2
        {"x-k": "2", "a": "2"},  # 3
        {},  # 4
    ])
    s.expect(got["all"], [0, 1], "x-k ignored in the binding")
    s.expect(got["any"], [], "only x- keys: any has nothing to match")
    s.expect(got["any_a"], [0, 1])
    s.expect(got["all_with_x"], [1])
    s.expect(got["any_with_x"], [1, 2, 3])


def scenario_route_headers_x_match_invalid(s: Session) -> None:
    ch = s.channel()
    x, q = s.name("x"), s.name("q")
    ch.exchange_declare(x, "headers")
    ch.queue_declare(q)
    r = ch.queue_bind(q, x, "", arguments={"x-match": "some"})
    s.expect_error(r, 406, "PRECONDITION_FAILED - Invalid x-match field value <<\"some\">>;"
                   " expected all, any, all-with-x, or any-with-x")
    ch = s.channel()
    r = ch.queue_bind(q, x, "", arguments={"x-match": 1})
    s.expect_error(r, 406, "PRECONDITION_FAILED - Invalid x-match field type signedint (value 1);"
                   " expected longstr")


def scenario_route_headers_types(s: Session) -> None:
    """How a binding value compares with a header value of another type."""
    got = _headers(s, {
        "int1": [{"v": 1}],
        "str1": [{"v": "1"}],
        "float1": [{"v": 1.0}],
        "true": [{"v": True}],
        "void": [{"v": None}],
        "long": [{"v": 2**40}],
        "bytes": [{"v": b"1"}],
        "list": [{"v": ["1"]}],
        "table": [{"v": {"k": "1"}}],
        "false": [{"v": False}],
        "zero": [{"v": 0}],
    }, [
        {"v": 1},  # 0
        {"v": "1"},  # 1
        {"v": 1.0},  # 2
        {"v": True},  # 3
        {"v": None},  # 4
        {"v": 2**40},  # 5
        {"v": b"1"},  # 6
        {"v": ["1"]},  # 7
        {"v": {"k": "1"}},  # 8
        {"v": 0},  # 9
        {"w": 1},  # 10
        {"v": False},  # 11
    ])
    # RabbitMQ 3.10 compares values, not types, as Erlang's == does: 1 == 1.0, a longstr
    # equals a byte array with the same bytes, but true is not 1.
    s.expect(got, {"int1": [0, 2], "str1": [1, 6], "float1": [0, 2], "true": [3],
                   "void": [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 11], "long": [5], "bytes": [1, 6],
                   "list": [7], "table": [8], "false": [11], "zero": [9]},
             "void binding value: presence")


def scenario_route_headers_int_widths(s: Session) -> None:
    """1 as a 32-bit int (pika's 'I') and as a 64-bit long ('l') compare equal."""
    got = _headers(s, {"i": [{"v": 1}], "l": [{"v": 2**40}]},
                   [{"v": 1}, {"v": 2**40}, {"v": 2**40 + 1}])
    s.expect(got, {"i": [0], "l": [1]})


def scenario_route_headers_any_with_missing(s: Session) -> None:
    got = _headers(s, {"any": [{"x-match": "any", "a": "1", "b": None}],
                       "all": [{"x-match": "all", "a": "1", "b": None}]},
                   [{"a": "1"}, {"b": "anything"}, {"a": "1", "b": 5}, {"c": 1}])
    s.expect(got, {"any": [0, 1, 2], "all": [2]})


def scenario_route_headers_routing_key_ignored(s: Session) -> None:
    ch = s.channel()
    x, q = s.name("x"), s.name("q")
    ch.exchange_declare(x, "headers")
    ch.queue_declare(q)
    ch.queue_bind(q, x, "some-key", arguments={"a": "1"})
    ch.basic_publish(x, "other-key", b"m", {"headers": {"a": "1"}})
    s.expect_bodies(ch, q, [b"m"])


def scenario_route_headers_two_bindings_once(s: Session) -> None:
    got = _headers(s, {"q": [{"a": "1"}, {"x-match": "any", "a": "1", "b": "2"}]},
                   [{"a": "1", "b": "2"}])
    s.expect(got, {"q": [0]})


# --------------------------------------------------------------------------------------------
# CC and BCC


def _cc(s: Session, ex_type: str = "direct") -> tuple[ChannelProxy, str, dict[str, str]]:
    ch = s.channel()
    x = s.name("x")
    ch.exchange_declare(x, ex_type)
    qs = _queues(s, ch, x, {"qk": ["k"], "qc1": ["c1"], "qc2": ["c2"], "qb": ["b1"]})
    return ch, x, qs


def _got(s: Session, ch: ChannelProxy, qs: dict[str, str]) -> dict[str, list[Any]]:
    """Per queue: (routing_key, headers) of each message received."""
    out: dict[str, list[Any]] = {}
    for base, q in qs.items():
        out[base] = []
        for _ in range(100):
            m = ch.basic_get(q, auto_ack=True)
            if m is None or not hasattr(m, "properties"):
                break
            out[base].append((m.routing_key, m.properties.get("headers", "<absent>")))
    return out


def scenario_route_cc_bcc(s: Session) -> None:
    ch, x, qs = _cc(s)
    ch.basic_publish(x, "k", b"m", {"headers": {"CC": ["c1"], "BCC": ["b1"], "other": 1}})
    got = _got(s, ch, qs)
    kept = {"CC": ["c1"], "other": 1}
    s.expect(got, {"qk": [("k", kept)], "qc1": [("k", kept)], "qc2": [], "qb": [("k", kept)]},
             "CC/BCC route as extra keys; BCC is removed; the routing key is unchanged")


def scenario_route_cc_only_and_bcc_only(s: Session) -> None:
    ch, x, qs = _cc(s)
    ch.basic_publish(x, "none", b"cc", {"headers": {"CC": ["c1", "c2", "c1"]}})
    ch.basic_publish(x, "none", b"bcc", {"headers": {"BCC": ["b1"]}})
    ch.basic_publish(x, "none", b"bcc+props", {"headers": {"BCC": ["b1"]}, "message_id": "i"})
    got = _got(s, ch, qs)
    cc = {"CC": ["c1", "c2", "c1"]}
    s.expect(got, {"qk": [], "qc1": [("none", cc)], "qc2": [("none", cc)],
                   "qb": [("none", {}), ("none", {})]},
             "duplicate CC keys deliver once; removing BCC leaves an empty headers table")


def scenario_route_cc_not_an_array(s: Session) -> None:
    _, x, qs = _cc(s)
    for headers, field, amqp_type in (({"CC": "c1"}, "CC", "longstr"),
                                      ({"BCC": "b1"}, "BCC", "longstr"),
                                      ({"CC": 5}, "CC", "signedint"),
                                      ({"CC": {"a": "c1"}}, "CC", "table")):
        r = s.channel().basic_publish(x, "k", b"m", {"headers": headers})
        s.expect_error(r, 406, "PRECONDITION_FAILED - invalid message: {unacceptable_type_in_header,"
                       f'"{field}",{amqp_type}}}', what="CC/BCC must be arrays")
    ch2 = s.channel()
    ch2.basic_publish(x, "k", b"cc array of ints", {"headers": {"CC": [1, "c2"]}})
    ch2.basic_publish(x, "k", b"cc empty array", {"headers": {"CC": []}})
    got = _got(s, ch2, qs)
    s.expect(got, {"qk": [("k", {"CC": [1, "c2"]}), ("k", {"CC": []})], "qc1": [],
                   "qc2": [("k", {"CC": [1, "c2"]})], "qb": []},
             "array elements that are not strings are skipped")


def scenario_route_cc_lowercase_and_bytes(s: Session) -> None:
    ch, x, qs = _cc(s)
    ch.basic_publish(x, "none", b"lowercase cc", {"headers": {"cc": ["c1"]}})
    ch.basic_publish(x, "none", b"bytes in cc", {"headers": {"CC": [b"c1"]}})
    got = _got(s, ch, qs)
    s.expect(got, {"qk": [], "qc1": [], "qc2": [], "qb": []},
             "only 'CC' counts, and only its longstr elements")


def scenario_route_cc_topic_fanout_headers(s: Session) -> None:
    ch = s.channel()
    t, f = s.name("t"), s.name("f")
    ch.exchange_declare(t, "topic")
    ch.exchange_declare(f, "fanout")
    qs = _queues(s, ch, t, {"qt": ["a.*"]})
    qs.update(_queues(s, ch, f, {"qf": [""]}))
    ch.basic_publish(t, "zzz", b"topic cc", {"headers": {"CC": ["a.b"]}})
    ch.basic_publish(f, "", b"fanout cc", {"headers": {"CC": ["x"]}})
    got = _got(s, ch, qs)
    s.expect(got, {"qt": [("zzz", {"CC": ["a.b"]})], "qf": [("", {"CC": ["x"]})]})


def scenario_route_cc_default_exchange(s: Session) -> None:
    ch = s.channel()
    q1, q2 = s.name("q1"), s.name("q2")
    ch.queue_declare(q1)
    ch.queue_declare(q2)
    ch.basic_publish("", q1, b"m", {"headers": {"BCC": [q2]}})
    got = _got(s, ch, {"q1": q1, "q2": q2})
    s.expect(got, {"q1": [("q1", {})], "q2": [("q1", {})]})


def scenario_route_cc_mandatory(s: Session) -> None:
    ch, x, qs = _cc(s)
    ch.basic_publish(x, "none", b"routed by CC only", {"headers": {"CC": ["c1"]}}, mandatory=True)
    ch.basic_publish(x, "none", b"unroutable", {"headers": {"BCC": ["none2"]}}, mandatory=True)
    s.expect([(r.body, r.properties) for r in ch.returned], [(b"unroutable", {"headers": {}})],
             "routed by CC: not returned; the returned message has lost its BCC")
    _got(s, ch, qs)


def scenario_route_cc_through_exchange_binding(s: Session) -> None:
    """CC keys are used again at each exchange along an exchange-to-exchange path."""
    ch = s.channel()
    x, y = s.name("x"), s.name("y")
    ch.exchange_declare(x, "direct")
    ch.exchange_declare(y, "direct")
    ch.exchange_bind(y, x, "c1")
    qs = _queues(s, ch, y, {"qk": ["k"], "qc1": ["c1"]})
    ch.basic_publish(x, "k", b"m", {"headers": {"CC": ["c1"]}})
    s.expect(_got(s, ch, qs), {"qk": [("k", {"CC": ["c1"]})], "qc1": [("k", {"CC": ["c1"]})]})
