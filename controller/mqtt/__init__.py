"""The MQTT connection settings and checks shared by the table's service and the API's
client (broker URLs, host lists, protocol versions, TLS, topic levels); no table, no API."""
