"""RabbitMQ's command-line tools for embroker: ``rabbitmqctl``, ``rabbitmq-diagnostics``,
``rabbitmq-plugins`` and ``rabbitmq-server``, reaching a running embroker node through a control
interface of its own (see docs/rabbitmq-tools.md)."""
