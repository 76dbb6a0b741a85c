"""The shared core every system stands on: records, logs, locks, messages, machines."""
