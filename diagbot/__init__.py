"""diagbot: deterministic regression gate for incident-diagnosis agents."""

__version__ = "0.1.0"
