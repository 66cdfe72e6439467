"""Core: the records every layer shares and the plain services under them."""
