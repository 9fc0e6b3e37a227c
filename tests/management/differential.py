"""Differential HTTP scenarios: the same requests to RabbitMQ's management API and embroker's.

A scenario is a list of steps (method, path, JSON body, and which values of the answer matter).
Running it against an API gives a transcript: per step the status, the error body when there is
one, the **shape** of a JSON answer (every object's field names, recursively, and each value's
JSON type) and the values the step names. RabbitMQ's transcripts are recorded as golden files
(``golden/<scenario>.json``, ``python -m tests.management.record``); offline embroker's
transcript must equal them, and with ``EMBROKER_REFERENCE_URL`` a fresh RabbitMQ run must too.

Each run gets its own vhost (``{vhost}`` in the paths) and users (``{user}``), named uniquely,
and deletes them at the end. RabbitMQ's counts lag by its statistics interval: a step with
``settle=True`` waits for them on RabbitMQ (embroker's are exact at once). One interval is not
always enough on a loaded machine (CI once saw a purged queue still counted a message 6 s
later), so a run that knows the answers to expect asks again until they come, within a bound.
"""

from __future__ import annotations

import base64
import contextlib
import json
import re
import time
import urllib.error
import urllib.parse
import urllib.request
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

GOLDEN = Path(__file__).parent / "golden"
RECORD_COMMAND = "python -m tests.management.record"

#: Fields whose JSON type RabbitMQ and embroker show alike but whose values are per node (names,
#: times, Erlang figures): their shape is compared, never their value.
_ANY_SCALAR = "scalar"


@dataclass
class Step:
    method: str
    path: str
    body: Any = None
    #: Dotted paths of values compared exactly (``"0.name"``, ``"messages"``); ``"*"``: all.
    values: tuple[str, ...] = ()
    #: Wait for RabbitMQ's statistics before this step (it lags; embroker does not).
    settle: bool = False
    #: Compare the answer's shape (field names and types); off for answers that list what
    #: other tests of the node left (users, permissions...).
    shape: bool = True
    user: str = "guest"
    headers: dict[str, str] = field(default_factory=dict)
    #: Compare only the keys of the first item of a list (lists of the node's own things).
    first_only: bool = True
    #: Name the step by its body too (steps that differ only by their body); a body of
    #: ``bytes`` is sent as it is (not JSON: ``b"null"``, ``b"1e400"``).
    show_body: bool = False

    @property
    def name(self) -> str:
        """What the transcript calls the step: method and path, the user when it is not
        guest, and the body when :attr:`show_body`."""
        text = f"{self.method} {self.path}"
        if self.user != "guest":
            text += f" as {self.user or 'nobody'}"
        if self.show_body:
            shown = self.body.decode() if isinstance(self.body, bytes) else json.dumps(
                self.body, sort_keys=True)
            text += f" {shown}"
        return text


@dataclass
class Target:
    base: str  # http://host:port/api
    vhost: str
    users: dict[str, str]  # name in scenarios -> real name
    settle_seconds: float = 0.0
    amqp_url: str = ""  # amqp://guest:guest@host:port/ (for CONSUME steps)
    opened: list[Any] = field(default_factory=list)
    #: The names of the connections CONNECT steps opened, by their label.
    connections: dict[str, str] = field(default_factory=dict)

    def password(self, user: str) -> str:
        return "guest" if user == "guest" else "pw-" + user

    def connect(self, label: str, user: str) -> None:
        """Open a pika connection to the vhost as ``user`` (named ``mgmt-diff-LABEL``, with a
        channel), kept until :func:`cleanup`, and learn the name the API gives it (RabbitMQ
        lists a connection once its statistics are in: asked again until it is, within
        :data:`SETTLE_BOUND_SECONDS`)."""
        import pika

        real = self.users.get(user, user)
        parts = urllib.parse.urlsplit(self.amqp_url)
        params = pika.ConnectionParameters(
            parts.hostname or "127.0.0.1", parts.port or 5672, self.vhost,
            pika.PlainCredentials(real, self.password(user)),
            client_properties={"connection_name": f"mgmt-diff-{label}"})
        connection = pika.BlockingConnection(params)
        connection.channel()
        self.opened.append(connection)
        deadline = time.monotonic() + SETTLE_BOUND_SECONDS
        while True:
            status, raw, _ = self.call(Step("GET", "/connections"))
            found = [c["name"] for c in json.loads(raw) if status == 200 and
                     c.get("user_provided_name") == f"mgmt-diff-{label}"]
            if found or time.monotonic() > deadline:
                break
            time.sleep(0.5)
        assert found, f"the connection {label} never showed in /api/connections"
        self.connections[label] = found[0]

    def path(self, step: Step) -> str:
        """The step's path with this run's names: ``{vhost}``, the users', and
        ``{conn:LABEL}`` / ``{chan:LABEL:N}`` for the connections CONNECT steps opened (and
        their channel N)."""
        def connection(match: re.Match[str]) -> str:
            name = self.connections[match.group(2)]
            if match.group(1) == "chan":
                name = f"{name} ({match.group(3)})"
            return urllib.parse.quote(name, safe="")
        path = re.sub(r"\{(conn|chan):(\w+)(?::(\d+))?\}", connection, step.path)
        return path.format(vhost=urllib.parse.quote(self.vhost, safe=""),
                           **{k: urllib.parse.quote(v, safe="") for k, v in self.users.items()})

    def consume(self, queue: str) -> None:
        """Open a pika connection to the vhost with a consumer on ``queue`` (prefetch 5), kept
        until :func:`cleanup`; one message stays unacknowledged if there is one."""
        import pika

        params = pika.URLParameters(self.amqp_url.rstrip("/") + "/"
                                    + urllib.parse.quote(self.vhost, safe=""))
        params.client_properties = {"connection_name": "mgmt-diff"}
        connection = pika.BlockingConnection(params)
        channel = connection.channel()
        channel.basic_qos(prefetch_count=5)
        channel.basic_consume(queue, lambda *_: None, consumer_tag="diff-consumer")
        connection.process_data_events(0.3)
        self.opened.append(connection)

    def call(self, step: Step, password: str = "guest") -> tuple[int, bytes, dict[str, str]]:
        path = self.path(step)
        user = self.users.get(step.user, step.user)
        secret = self.password(step.user)
        body = step.body
        if isinstance(body, (dict, list)):  # "{vhost}" in a text of the body: this run's
            body = _named(body, self.vhost)
        data = body if isinstance(body, bytes) else (
            json.dumps(body).encode() if body is not None else None)
        headers = {"content-type": "application/json", **step.headers}
        if step.user != "":
            headers["authorization"] = "Basic " + base64.b64encode(
                f"{user}:{secret}".encode()).decode()
        request = urllib.request.Request(self.base + path, data=data, method=step.method,
                                         headers=headers)
        try:
            with urllib.request.urlopen(request, timeout=10) as response:
                return response.status, response.read(), {k.lower(): v for k, v in
                                                          response.headers.items()}
        except urllib.error.HTTPError as error:
            return error.code, error.read(), {k.lower(): v for k, v in error.headers.items()}


def _named(value: Any, vhost: str) -> Any:
    """``value`` with ``{vhost}`` in each of its texts replaced by ``vhost``."""
    if isinstance(value, str):
        return value.replace("{vhost}", vhost)
    if isinstance(value, dict):
        return {k: _named(v, vhost) for k, v in value.items()}
    if isinstance(value, list):
        return [_named(v, vhost) for v in value]
    return value


def shape(value: Any, first_only: bool = True) -> Any:
    """The field names and JSON types of ``value``, recursively (lists by their first item)."""
    if isinstance(value, dict):
        return {k: shape(v, first_only) for k, v in sorted(value.items())}
    if isinstance(value, list):
        return [shape(value[0], first_only)] if value else []
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, (int, float)):
        return "number"
    if value is None:
        return "null"
    return "string"


def pick(value: Any, path: str) -> Any:
    for part in path.split("."):
        if isinstance(value, list):
            value = value[int(part)] if part.isdigit() and int(part) < len(value) else None
        elif isinstance(value, dict):
            value = value.get(part)
        else:
            return None
    return value


#: How long a settling step asks again for the answer it expects (several statistics intervals).
SETTLE_BOUND_SECONDS = 30.0


def run(steps: list[Step], target: Target,
        expected: Callable[[int, dict[str, Any]], bool] | None = None) -> list[dict[str, Any]]:
    """The transcript of ``steps`` on ``target``. With ``expected`` (step index, entry -> is it
    the answer expected), a settling step on a lagging target is asked again until it is, for
    up to :data:`SETTLE_BOUND_SECONDS`; the last answer is kept either way."""
    transcript: list[dict[str, Any]] = []
    for step in steps:
        if step.settle and target.settle_seconds:
            time.sleep(target.settle_seconds)
        if step.method == "CONSUME":
            target.consume(step.path)
            transcript.append({"step": f"CONSUME {step.path}"})
            continue
        if step.method == "CONNECT":
            target.connect(step.path, step.user)
            transcript.append({"step": f"CONNECT {step.path} as {step.user}"})
            continue
        entry = _answer(step, target)
        if step.settle and target.settle_seconds and expected is not None:
            deadline = time.monotonic() + SETTLE_BOUND_SECONDS
            while not expected(len(transcript), entry) and time.monotonic() < deadline:
                time.sleep(0.5)
                entry = _answer(step, target)
        transcript.append(entry)
    return transcript


def _answer(step: Step, target: Target) -> dict[str, Any]:
    status, raw, headers = target.call(step)
    entry: dict[str, Any] = {"step": step.name, "status": status}
    try:
        answer = json.loads(raw) if raw.strip() else None
    except ValueError:
        answer = raw.decode("utf-8", "replace")
    if status >= 400:
        entry["body"] = answer
        if "www-authenticate" in headers:
            entry["www-authenticate"] = headers["www-authenticate"]
        if status == 405:
            entry["allow"] = headers.get("allow")
    elif answer is not None:
        if step.shape:
            entry["shape"] = shape(answer, step.first_only)
        for path in step.values:
            entry.setdefault("values", {})[path] = answer if path == "*" else pick(
                answer, path)
    return _anonymous(entry, target)


def _anonymous(entry: dict[str, Any], target: Target) -> dict[str, Any]:
    """The entry with this run's vhost and user names as their placeholders."""
    text = json.dumps(entry)
    for label, name in target.connections.items():
        text = text.replace(json.dumps(name)[1:-1], "{conn:" + label + "}")
    for name, real in sorted(target.users.items(), key=lambda kv: -len(kv[1])):
        text = text.replace(real, "{" + name + "}")
    text = text.replace(target.vhost, "{vhost}")
    found: dict[str, Any] = json.loads(text)
    return found


def new_target(base: str, amqp_url: str, settle_seconds: float = 0.0) -> Target:
    tag = uuid.uuid4().hex[:8]
    return Target(base.rstrip("/"), f"mgmt-diff-{tag}",
                  {name: f"mgmt-diff-{name}-{tag}" for name in
                   ("plain", "mgmt", "monitor", "policy", "admin")}, settle_seconds,
                  amqp_url)


def cleanup(target: Target) -> None:
    for connection in target.opened:
        if connection.is_open:
            with contextlib.suppress(Exception):  # (one the API closed: pika learns it late)
                connection.close()
    for step in [Step("DELETE", "/traces/{vhost}/{vhost}"),  # the tracing scenario's
                 Step("DELETE", "/trace-files/{vhost}.log"),
                 Step("DELETE", "/vhosts/{vhost}"),
                 *[Step("DELETE", f"/users/{{{u}}}") for u in target.users]]:
        target.call(step)
