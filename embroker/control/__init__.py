"""Starting embroker the way RabbitMQ starts: its environment variables and configuration files."""
