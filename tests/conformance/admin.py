"""Policies on the reference RabbitMQ: ``rabbitmqctl``'s policy commands, run by the driver.

A scenario that needs policies calls ``set_policy``, ``clear_policy``, ``set_operator_policy``
or ``clear_operator_policy`` with rabbitmqctl's names and arguments (see
``scenarios_policies.Admin``), which the drivers run in ``policy_command`` (apart from
``Session.admin``, whose rabbitmqctl commands take strings and fail the scenario when refused).
On embroker the driver calls the broker's methods of the same names; on RabbitMQ,
:class:`ReferenceAdmin` does what rabbitmqctl does, through the management HTTP API when
``rabbitmq_management`` answers on port 15672 of the AMQP URL's host (a request takes
milliseconds, ``rabbitmqctl`` about two seconds), else by running ``rabbitmqctl``. Both end in
``rabbit_policy:set/7`` and give the same reasons for a refusal (the HTTP API escapes them as
HTML: they are unescaped here); a refusal raises :class:`~.harness.BrokerError` with scope
``"admin"`` and the reason alone (``-1 is not a valid message TTL``).
"""

from __future__ import annotations

import base64
import html
import json
import shutil
import subprocess
import urllib.error
import urllib.request
from typing import Any
from urllib.parse import quote, unquote, urlsplit

from .harness import BrokerError

#: The policy commands a scenario may run, and whether each is about operator policies.
COMMANDS = {"set_policy": False, "clear_policy": False, "set_operator_policy": True,
            "clear_operator_policy": True}

_VALIDATION = "Validation failed\n\n"


def _reason(text: str) -> str:
    text = html.unescape(text).strip()
    return text[len(_VALIDATION):].strip() if text.startswith(_VALIDATION) else text


class ReferenceAdmin:
    """Runs the policy commands on the RabbitMQ behind an AMQP URL, on the URL's vhost."""

    def __init__(self, amqp_url: str) -> None:
        parts = urlsplit(amqp_url)
        self.host = parts.hostname or "127.0.0.1"
        self.vhost = unquote(parts.path[1:]) if len(parts.path) > 1 else "/"
        credentials = f"{unquote(parts.username or 'guest')}:{unquote(parts.password or 'guest')}"
        self._auth = "Basic " + base64.b64encode(credentials.encode()).decode()
        self._api = f"http://{self.host}:15672/api"
        self._http: bool | None = None

    def _http_answers(self) -> bool:
        if self._http is None:
            try:
                self._request("GET", "/overview")
                self._http = True
            except (OSError, BrokerError):
                self._http = False
        return self._http

    def _request(self, method: str, path: str, body: Any = None) -> None:
        data = None if body is None else json.dumps(body).encode()
        request = urllib.request.Request(
            self._api + path, data=data, method=method,
            headers={"Authorization": self._auth, "content-type": "application/json"})
        try:
            with urllib.request.urlopen(request, timeout=10):
                return
        except urllib.error.HTTPError as exc:
            if exc.code == 404 and method == "DELETE":
                raise BrokerError("admin", 0, "Parameter does not exist") from None
            try:
                reason = json.loads(exc.read()).get("reason", "")
            except ValueError:
                reason = str(exc)
            raise BrokerError("admin", 0, _reason(reason)) from None

    def _ctl(self, *args: str) -> None:
        if shutil.which("rabbitmqctl") is None:
            raise RuntimeError("no way to set policies on the reference RabbitMQ: enable "
                               "rabbitmq_management or run where rabbitmqctl works")
        done = subprocess.run(["rabbitmqctl", "-q", *args], capture_output=True, text=True,
                              timeout=60, check=False)
        if done.returncode != 0:
            out = (done.stderr or done.stdout).strip()
            raise BrokerError("admin", 0, _reason(out.removeprefix("Error:").strip()))

    def call(self, command: str, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
        """Run ``command`` (one of :data:`COMMANDS`) as the broker's method would be called."""
        operator = COMMANDS[command]
        name = args[0]
        kind = "operator-policies" if operator else "policies"
        if command.startswith("clear"):
            if self._http_answers():
                self._request("DELETE", f"/{kind}/{quote(self.vhost, safe='')}/"
                                        f"{quote(name, safe='')}")
            else:
                self._ctl(command, "-p", self.vhost, name)
            return
        pattern, definition = args[1], args[2]
        priority, apply_to = kwargs.get("priority", 0), kwargs.get("apply_to", "all")
        if self._http_answers():
            self._request("PUT", f"/{kind}/{quote(self.vhost, safe='')}/{quote(name, safe='')}",
                          {"pattern": pattern, "definition": definition, "priority": priority,
                           "apply-to": apply_to})
        else:
            self._ctl(command, "-p", self.vhost, "--priority", str(priority), "--apply-to",
                      apply_to, name, pattern, json.dumps(definition))


def model_admin(broker: Any, command: str, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
    """Run ``command`` on an embroker broker (the drivers on embroker); a refusal raises
    BrokerError as on RabbitMQ. embroker's PolicyWarnings are not observations: they are
    silenced here."""
    import warnings

    from embroker.errors import PolicyError, PolicyWarning

    if command not in COMMANDS:
        raise ValueError(f"unknown admin command {command!r}")
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", PolicyWarning)
            getattr(broker, command)(*args, **kwargs)
    except PolicyError as exc:
        raise BrokerError("admin", 0, exc.reason) from exc
