"""The GitHub Action: settings from the runner, events, evaluate, publish; the fork relay publishes after checks."""
