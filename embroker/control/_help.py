"""What RabbitMQ 3.10.8's tools print for help: the usage of each tool (``rabbitmqctl help``,
``--help``, or no command at all), its commands grouped in RabbitMQ's sections with their
one-line descriptions, for the commands embroker's tools have. Light: no broker import."""

from __future__ import annotations

from collections.abc import Iterable

__all__ = ["BOLD", "CLI_VERSION", "PLAIN", "SECTIONS", "usage"]

#: The version of RabbitMQ's tools these are (``rabbitmqctl version``): 3.10.8, the RabbitMQ
#: embroker follows by default. (A node's own version is ``rabbitmq-diagnostics
#: server_version``: its profile's.)
CLI_VERSION = "3.10.8"

#: How RabbitMQ's tools set a heading in bold (on a pipe too).
BOLD, PLAIN = "\x1b[1m", "\x1b[0m"

#: Each tool's sections, in the order its help lists them.
SECTIONS: dict[str, tuple[str, ...]] = {
    "rabbitmqctl": ("Help", "Nodes", "Cluster", "Replication", "Users", "Access Control",
                    "Monitoring, observability and health checks", "Parameters", "Policies",
                    "Virtual hosts", "Configuration and Environment", "Definitions",
                    "Feature flags", "Operations", "Queues", "AMQP 1.0 plugin", "Stream plugin",
                    "Deprecated"),
    "rabbitmq-diagnostics": ("Help", "Nodes", "Cluster", "Users", "Access Control",
                             "Monitoring, observability and health checks", "Parameters",
                             "Policies", "Virtual hosts", "Configuration and Environment",
                             "Feature flags", "Operations", "AMQP 1.0 plugin",
                             "Consistent Hash Exchange plugin", "Stream plugin", "Deprecated"),
    "rabbitmq-queues": ("Help", "Cluster", "Replication",
                        "Monitoring, observability and health checks"),
    "rabbitmq-plugins": ("Help", "Monitoring, observability and health checks",
                         "Plugin Management"),
}

_MONITORING = "Monitoring, observability and health checks"

#: Each command's section and description, as RabbitMQ's help shows them.
DESCRIPTIONS: dict[str, tuple[str, str]] = {
    "add_user": ("Users", "Creates a new user in the internal database. This user will have no permissions "
        "for any virtual hosts by default."),
    "add_member": ("Replication", "Adds a quorum queue member (replica) on the given node."),
    "add_vhost": ("Virtual hosts", "Creates a virtual host"),
    "alarms": (_MONITORING, "Lists resource alarms (local or cluster-wide) in effect on the target node"),
    "authenticate_user": ("Users", "Attempts to authenticate a user. Exits with a non-zero code if "
        "authentication fails."),
    "await_startup": ("Nodes", "Waits for the RabbitMQ application to start on the target node"),
    "change_password": ("Users", "Changes the user password"),
    "check_if_node_is_mirror_sync_critical": (_MONITORING, "Health check that exits with a non-zero "
        "code if there are classic mirrored queues without online synchronised mirrors (queues that "
        "would potentially lose data if the target node is shut down)"),
    "check_if_node_is_quorum_critical": (_MONITORING, "Health check that exits with a non-zero code if "
        "there are queues with minimum online quorum (queues that would lose their quorum if the target "
        "node is shut down)"),
    "check_local_alarms": (_MONITORING, "Health check that exits with a non-zero code if the target node "
        "reports any local alarms"),
    "check_port_connectivity": (_MONITORING, "Basic TCP connectivity health check for each listener's port "
        "on the target node"),
    "check_port_listener": (_MONITORING, "Health check that exits with a non-zero code if target node does "
        "not have an active listener for given port"),
    "check_running": (_MONITORING, "Health check that exits with a non-zero code if the RabbitMQ app on the "
        "target node is not running"),
    "check_virtual_hosts": (_MONITORING, "Health check that checks if all vhosts are running in the target "
        "node"),
    "clear_operator_policy": ("Policies", "Clears an operator policy"),
    "clear_parameter": ("Parameters", "Clears a runtime parameter."),
    "clear_password": ("Users", "Clears (resets) password and disables password login for a user"),
    "clear_permissions": ("Access Control", "Revokes user permissions for a vhost"),
    "clear_policy": ("Policies", "Clears (removes) a policy"),
    "clear_topic_permissions": ("Access Control", "Clears user topic permissions for a vhost or exchange"),
    "clear_user_limits": ("Users", "Clears user connection/channel limits"),
    "clear_vhost_limits": ("Virtual hosts", "Clears virtual host limits"),
    "cluster_status": ("Cluster", "Displays all the nodes in the cluster grouped by node type, "
        "together with the currently running nodes"),
    "close_all_connections": ("Operations", "Instructs the broker to close all connections for the "
        "specified vhost or entire RabbitMQ node"),
    "close_connection": ("Operations", "Instructs the broker to close the connection associated with the "
        "Erlang process id"),
    "delete_member": ("Replication", "Removes a quorum queue member (replica) on the given node."),
    "delete_queue": ("Queues", "Deletes a queue"),
    "delete_user": ("Users", "Removes a user from the internal database. Has no effect on users provided by "
        "external backends such as LDAP"),
    "delete_vhost": ("Virtual hosts", "Deletes a virtual host"),
    "directories": (_MONITORING, "Displays plugin directory and enabled plugin file paths"),
    "disable": ("Plugin Management", "Disables one or more plugins"),
    "enable": ("Plugin Management", "Enables one or more plugins"),
    "environment": ("Configuration and Environment", "Displays the name and value of each variable in the "
        "application environment for each running application"),
    "export_definitions": ("Definitions", "Exports definitions in JSON or compressed Erlang Term Format."),
    "force_reset": ("Cluster", "Forcefully returns a RabbitMQ node to its virgin state"),
    "forget_cluster_node": ("Cluster", "Removes a node from the cluster"),
    "join_cluster": ("Cluster", "Instructs the node to become a member of the cluster that the "
                                "specified node is in"),
    "help": ("Help", "Displays usage information for a command"),
    "import_definitions": ("Definitions", "Imports definitions in JSON or compressed Erlang Term Format."),
    "is_enabled": (_MONITORING, "Health check that exits with a non-zero code if provided plugins are not "
        "enabled on target node"),
    "is_running": (_MONITORING, "Checks if RabbitMQ is fully booted and running on the target node"),
    "list": ("Plugin Management", "Lists plugins and their state"),
    "grow": ("Cluster", "Grows quorum queue clusters by adding a member (replica) on the specified "
        "node for all matching queues"),
    "list_bindings": (_MONITORING, "Lists all bindings on a vhost"),
    "list_channels": (_MONITORING, "Lists all channels in the node"),
    "list_connections": (_MONITORING, "Lists AMQP 0.9.1 connections for the node"),
    # (the plugins' sections show only where their plugin is enabled: not in these lists)
    "list_mqtt_connections": ("MQTT plugin", "Lists MQTT connections on the target node"),
    "list_stomp_connections": ("STOMP plugin", "Lists STOMP connections on the target node"),
    "list_consumers": (_MONITORING, "Lists all consumers for a vhost"),
    "list_exchanges": (_MONITORING, "Lists exchanges"),
    "list_global_parameters": ("Parameters", "Lists global runtime parameters"),
    "list_operator_policies": ("Policies", "Lists operator policy overrides for a virtual host"),
    "list_parameters": ("Parameters", "Lists runtime parameters for a virtual host"),
    "list_permissions": ("Access Control", "Lists user permissions in a virtual host"),
    "list_policies": ("Policies", "Lists all policies in a virtual host"),
    "list_queues": (_MONITORING, "Lists queues and their properties"),
    "list_topic_permissions": ("Access Control", "Lists topic permissions in a virtual host"),
    "list_user_limits": ("Users", "Displays configured user limits"),
    "list_user_permissions": ("Access Control", "Lists permissions of a user across all virtual hosts"),
    "list_user_topic_permissions": ("Access Control", "Lists user topic permissions"),
    "list_users": ("Users", "List user names and tags"),
    "list_vhost_limits": ("Virtual hosts", "Displays configured virtual host limits"),
    "list_vhosts": ("Access Control", "Lists virtual hosts"),
    "listeners": (_MONITORING, "Lists active connection listeners (bound interface, port, protocol) on the "
        "target node"),
    "ping": (_MONITORING, "Checks that the node OS process is up, registered with EPMD and CLI tools can "
        "authenticate with it"),
    "purge_queue": ("Queues", "Purges a queue (removes all messages in it)"),
    "quorum_status": (_MONITORING, "Displays quorum status of a quorum queue"),
    "rebalance": ("Cluster", "Re-balances leaders of replicated queues across up-and-running cluster "
        "nodes"),
    "reset": ("Nodes", "Instructs a RabbitMQ node to leave the cluster and return to its virgin state"),
    "server_version": (_MONITORING, "Displays server version on the target node"),
    "set_disk_free_limit": ("Configuration and Environment", "Sets the disk_free_limit setting"),
    "set_operator_policy": ("Policies", "Sets an operator policy that overrides a subset of arguments in "
        "user policies"),
    "set_parameter": ("Parameters", "Sets a runtime parameter."),
    "set_permissions": ("Access Control", "Sets user permissions for a vhost"),
    "set_policy": ("Policies", "Sets or updates a policy"),
    "set_topic_permissions": ("Access Control", "Sets user topic permissions for an exchange"),
    "set_user_limits": ("Users", "Sets user limits"),
    "set_user_tags": ("Users", "Sets user tags"),
    "set_vhost_limits": ("Virtual hosts", "Sets virtual host limits"),
    "set_vm_memory_high_watermark": ("Configuration and Environment", "Sets the vm_memory_high_watermark "
        "setting"),
    "start_app": ("Nodes", "Starts the RabbitMQ application but leaves the runtime (Erlang VM) running"),
    "status": (_MONITORING, "Displays status of a node"),
    "shrink": ("Cluster", "Shrinks quorum queue clusters by removing any members (replicas) on the "
        "given node."),
    "stop": ("Nodes", "Stops RabbitMQ and its runtime (Erlang VM). Requires a local node pid file path to "
        "monitor progress."),
    "stop_app": ("Nodes", "Stops the RabbitMQ application, leaving the runtime (Erlang VM) running"),
    "trace_off": ("Virtual hosts", ""),
    "trace_on": ("Virtual hosts", ""),
    "version": ("Help", "Displays CLI tools version"),
    "wait": ("Nodes", "Waits for RabbitMQ node startup by monitoring a local PID file. See also "
        "'rabbitmqctl await_online_nodes'"),
}


def usage(tool: str, commands: Iterable[str]) -> str:
    """``tool``'s usage, listing ``commands`` (and ``help`` and ``version``) by section."""
    names = sorted({*commands, "help", *(() if tool == "rabbitmq-queues" else ("version",))})
    width = max(map(len, names)) + 2
    text = (f"\n{BOLD}Usage{PLAIN}\n\n{tool} [--node <node>] [--timeout <timeout>] "
            "[--longnames] [--quiet] <command> [<command options>]\n\nAvailable commands:\n")
    for section in SECTIONS[tool]:
        listed = [name for name in names if DESCRIPTIONS.get(name, ("Operations",))[0] == section]
        if listed:
            text += f"\n{BOLD}{section}{PLAIN}:\n\n" + "".join(
                f"   {name.ljust(width)}{DESCRIPTIONS.get(name, ('', ''))[1]}\n"
                for name in listed)
    return text + f"\nUse '{tool} help <command>' to learn more about a specific command\n"
