"""The `trace` suite kind: cases and trace fixtures of one incident-diagnosis agent, checked rule by rule."""

from diagbot.kinds.trace.kind import TraceKind

__all__ = ["TraceKind"]
