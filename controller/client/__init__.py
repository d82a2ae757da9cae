"""The one Python client of the table's MQTT API (docs/asyncapi.yaml): it knows the API and
nothing of the daemon's internals. The console, ``livetable ctl`` and the demo's people use it.
"""
