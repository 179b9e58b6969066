"""The narrow GitHub port: `port` says what diagbot asks of GitHub, `client` does it through PyGithub."""
