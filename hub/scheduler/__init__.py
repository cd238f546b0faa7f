"""Work the hub does at a time, without the person: scheduled jobs and alerts."""
