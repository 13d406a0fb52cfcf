"""Helpers the tests share: services on loopback, tiny runs, cases, stand-ins."""
