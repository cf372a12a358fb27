"""The read-only web dashboard over the Delta tables (Dash on delta-rs; no Spark import here)."""
