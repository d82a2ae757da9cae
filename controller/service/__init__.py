"""The table as a service: the journal, the runtime that feeds the pure machine, the devices'
assembly, the daemon, its MQTT API, what it publishes and the outbox that carries it."""
