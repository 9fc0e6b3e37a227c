"""Runtime parameters: the global ones, and those of a vhost's components, as RabbitMQ 3.10
keeps them (``rabbit_runtime_parameters``).

Theory of operation
-------------------
A *global parameter* (``rabbitmqctl set_global_parameter NAME VALUE``) is any JSON value under
a name. RabbitMQ reads two of its own: ``cluster_name`` (the cluster's name, which
``PUT /api/cluster-name`` sets too; without it the name is the node's) and
``internal_cluster_id`` (made when the node first starts, ``rabbitmq-cluster-id-`` and 22
characters of base64). Others are kept for whoever reads them. A top-level JSON object is
kept as RabbitMQ keeps it, a list of pairs, so an empty one reads back as ``[]``.

A *vhost parameter* belongs to a component that validates it and acts on it
(``rabbitmqctl set_parameter COMPONENT NAME VALUE``). embroker has the two components a
RabbitMQ without plugins has besides policies (:data:`COMPONENTS`): ``vhost-limits`` (the
vhost's limits, named ``limits``) and ``operator_policy``; federation and shovel
components need links to other brokers, and, as on a RabbitMQ without those plugins, setting
one is refused (``component federation-upstream not found``). Policies are parameters of the
``policy`` component, listed with the others when asked for by name, but set and cleared only
as policies (``policies may not be set using this method``).

A value is checked as RabbitMQ checks it (``rabbit_parameter_validation:proplist``): every
reason is reported, a line each, unknown keys first.
"""

from __future__ import annotations

import base64
import os
import threading
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Final

from .. import _erlang
from ..errors import PolicyError
from ._policy import Policy, limit_errors, policy_errors

if TYPE_CHECKING:
    from ._profile import Profile
    from ._vhost import VirtualHost

__all__ = ["COMPONENTS", "ParameterCommands"]

#: The vhost components embroker has (a RabbitMQ 3.10 without plugins has these and
#: ``policy``).
COMPONENTS: Final = ("operator_policy", "vhost-limits")
#: What a ``policy`` parameter holds, and the checks of each key (``rabbit_policy``'s
#: ``policy_validation/0``, in its order; all but ``apply-to`` mandatory).
_POLICY_KEYS: Final = ("priority", "pattern", "apply-to", "definition")


def _stored(value: Any) -> Any:
    """A value as RabbitMQ keeps it: a top-level object is a list of pairs, so an empty one
    is ``[]``."""
    return [] if isinstance(value, dict) and not value else value


def new_cluster_id() -> str:
    """A fresh ``internal_cluster_id`` (``rabbit_nodes:seed_internal_cluster_id``)."""
    return "rabbitmq-cluster-id-" + base64.urlsafe_b64encode(os.urandom(16)).decode().rstrip("=")


class ParameterCommands:
    """``rabbitmqctl``'s runtime parameter commands (a part of
    :class:`~embroker.model.Broker`), with its names and arguments."""

    _lock: threading.RLock
    vhosts: dict[str, VirtualHost]
    profile: Profile
    server_properties: dict[str, Any]
    _global_parameters: dict[str, Any]
    _default_cluster_name: str

    def _init_parameters(self) -> None:
        self._global_parameters = {"internal_cluster_id": new_cluster_id()}
        self._default_cluster_name = str(self.server_properties.get("cluster_name", ""))

    # -- global parameters -------------------------------------------------------------------

    def set_global_parameter(self, name: str, value: Any) -> None:
        """``rabbitmqctl set_global_parameter NAME VALUE``: set a global parameter (a JSON
        value). ``cluster_name`` renames the cluster: what clients are told
        (``server_properties``) and the management API shows.

        Raises:
            PolicyError: a ``cluster_name`` that is not a string (RabbitMQ takes it, then
                fails to open connections).
        """
        if name == "cluster_name" and not isinstance(value, str):
            raise PolicyError(f"cluster_name should be a string, actually was "
                              f"{_erlang.term(value)}")
        with self._lock:
            self._global_parameters[name] = _stored(value)
            if name == "cluster_name":
                self.server_properties["cluster_name"] = value

    def clear_global_parameter(self, name: str) -> None:
        """``rabbitmqctl clear_global_parameter NAME``; clearing ``cluster_name`` gives the
        cluster its first name back.

        Raises:
            PolicyError: ``Parameter does not exist``.
        """
        with self._lock:
            if name not in self._global_parameters:
                raise PolicyError("Parameter does not exist")
            del self._global_parameters[name]
            if name == "cluster_name":
                self.server_properties["cluster_name"] = self._default_cluster_name

    def global_parameters(self) -> dict[str, Any]:
        """``rabbitmqctl list_global_parameters``: name -> value."""
        with self._lock:
            return dict(self._global_parameters)

    @property
    def cluster_name(self) -> str:
        """The cluster's name: the ``cluster_name`` global parameter, else the broker's
        own."""
        with self._lock:
            return str(self.server_properties.get("cluster_name", self._default_cluster_name))

    # -- vhost parameters ----------------------------------------------------------------------

    def _vhost(self, vhost: str) -> VirtualHost:
        found = self.vhosts.get(vhost)
        if found is None:
            raise PolicyError(f"Virtual host '{vhost}' does not exist")
        return found

    def parameters(self, component: str | None = None,
                   vhost: str | None = None) -> list[dict[str, Any]]:
        """``rabbitmqctl list_parameters``: the vhost parameters (``vhost``, ``component``,
        ``name``, ``value``) of ``vhost`` (all by default) and of ``component`` (all but
        policies by default; ``"policy"`` names them).

        Raises:
            PolicyError: no such vhost.
        """
        with self._lock:
            hosts = [self._vhost(vhost)] if vhost is not None else list(self.vhosts.values())
            found = []
            for host in hosts:
                policies = host.policies
                if component == "policy":
                    found += [_as_parameter(p) for p in policies.policies.values()]
                    continue
                if component in (None, "vhost-limits") and policies.limits:
                    found.append({"vhost": host.name, "component": "vhost-limits",
                                  "name": "limits", "value": dict(policies.limits)})
                if component in (None, "operator_policy"):
                    found += [_as_parameter(p) for p in policies.operator_policies.values()]
            return found

    def parameter(self, component: str, name: str, *, vhost: str = "/") -> dict[str, Any] | None:
        """One vhost parameter as :meth:`parameters` lists it, or ``None``."""
        with self._lock:
            if vhost not in self.vhosts:
                return None
            return next((p for p in self.parameters(component, vhost) if p["name"] == name),
                        None)

    def set_parameter(self, component: str, name: str, value: Any, *,
                      vhost: str = "/") -> None:
        """``rabbitmqctl set_parameter [--vhost] COMPONENT NAME VALUE``: a vhost's limits
        (``vhost-limits``, named ``limits``) or an operator policy (``operator_policy``:
        ``pattern``, ``priority``, ``definition`` and optionally ``apply-to``), applied at
        once as :meth:`set_vhost_limits` and :meth:`set_operator_policy` apply them.

        Raises:
            PolicyError: ``Validation failed`` and every reason RabbitMQ gives (an unknown
                component among them), ``policies may not be set using this method``, no
                such vhost; ``vhost-limits`` under another name than ``limits`` (RabbitMQ
                keeps it and fails).
        """
        if component == "policy":
            raise PolicyError("policies may not be set using this method")
        with self._lock:
            host = self._vhost(vhost)
            if component not in COMPONENTS:
                raise PolicyError.validation(f"component {component} not found")
            if component == "vhost-limits":
                if name != "limits":
                    raise PolicyError(f"a vhost's limits are the vhost-limits parameter "
                                      f"named 'limits', not '{name}'")
                limits = {} if value == [] else value  # (an empty list of pairs)
                errors = limit_errors(limits)
                if errors:
                    raise PolicyError.validation("\n".join(errors))
                host.policies.set_limits(limits)
                return
            errors = _proplist_errors(name, value, self.profile)
            if errors:
                raise PolicyError.validation("\n".join(errors))
            host.policies.set(Policy(name, value["pattern"], value["definition"],
                                     value["priority"], value.get("apply-to", "all"), vhost,
                                     True, self.profile.rabbitmq4))

    def clear_parameter(self, component: str, name: str, *, vhost: str = "/") -> None:
        """``rabbitmqctl clear_parameter [--vhost] COMPONENT NAME``.

        Raises:
            PolicyError: ``Parameter does not exist``, ``policies may not be cleared using
                this method``, no such vhost.
        """
        if component == "policy":
            raise PolicyError("policies may not be cleared using this method")
        with self._lock:
            host = self._vhost(vhost)
            if self.parameter(component, name, vhost=vhost) is None:
                raise PolicyError("Parameter does not exist")
            if component == "vhost-limits":
                host.policies.set_limits({})
            else:
                host.policies.clear(name, operator=True)


def _as_parameter(policy: Policy) -> dict[str, Any]:
    value = policy.to_definitions()
    return {"vhost": policy.vhost, "component": "operator_policy" if policy.operator
            else "policy", "name": policy.name,
            "value": {k: value[k] for k in ("apply-to", "definition", "pattern", "priority")}}


def _proplist_errors(name: str, value: Any, profile: Profile) -> list[str]:
    """An operator policy's value checked as ``rabbit_parameter_validation:proplist`` checks
    it: unknown keys, then each key's reasons (the last key's first), a missing one named."""
    if not isinstance(value, Mapping):
        return [f"{name} not a list {_erlang.term(value)}"]
    unknown = sorted(((k, v) for k, v in value.items() if k not in _POLICY_KEYS),
                     key=lambda kv: str(kv[0]).encode())
    errors = [f"Unrecognised terms {_erlang.term(unknown)} in {name}"] if unknown else []
    for key in reversed(_POLICY_KEYS):
        if key not in value:
            if key != "apply-to":
                errors.append(f'Key "{key}" not found in {name}')
            continue
        errors += policy_errors(**{key.replace("-", "_"): value[key]}, operator=True,
                                profile=profile)
    return errors

