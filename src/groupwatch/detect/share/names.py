"""The names that tell a ``__share_group_state`` record apart, without loading the decoder (the
engine checks every line against them; tests hold them equal to the decoder's tables)."""

#: The share coordinator's topic.
SHARE_STATE_TOPIC = "__share_group_state"
#: Its record types as ``groupwatch decode`` names them (ids 0 and 1 of that topic).
SHARE_STATE_RECORD_NAMES = frozenset({"share_snapshot", "share_update"})
