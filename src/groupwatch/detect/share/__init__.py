"""Share groups' progress: each share partition's state from ``__share_group_state``
(:mod:`.state`).  Nothing is imported here, so that the engine's check of a line against
:mod:`.names` does not load the decoder."""
