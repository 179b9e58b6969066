"""The shared core: report envelope, counts and rates, diff primitives, the gate, text matching and errors.

Nothing here reads files, the environment or the network, and nothing here knows a suite kind.
"""
