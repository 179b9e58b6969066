"""Reading and writing diagbot's own files: the config, report folders and baselines. Every read is bounded."""
