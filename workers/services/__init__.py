"""What the CLI and the HTTP API share: submission, resume, capsules, schedules, gates, access."""
