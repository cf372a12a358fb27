"""The scenario library: incidents and finding kinds as records, for tests, the demo and replays."""
