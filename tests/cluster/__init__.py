"""Tests of issue 48's cluster, and the RabbitMQ cluster of one's own they are checked against."""
