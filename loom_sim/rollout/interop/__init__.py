"""Reading (and later writing) other tools' formats."""
