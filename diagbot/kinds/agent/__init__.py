"""The agent suite kind: seed 001's general eval cases over the conversations agents record."""

from diagbot.kinds.agent.kind import AgentKind

__all__ = ["AgentKind"]
