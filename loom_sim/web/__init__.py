"""The web viewer."""
