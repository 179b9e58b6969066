"""The `workspace` suite kind: judge the files a multi-agent run leaves behind, bucket by bucket."""

from diagbot.kinds.workspace.kind import WorkspaceKind

__all__ = ["WorkspaceKind"]
