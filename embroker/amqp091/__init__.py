"""AMQP 0-9-1 protocol layer: sans-IO codec and connection state (no sockets here)."""
