"""Suite kinds: each a package behind the protocol of `base`, listed once in `registry`."""
