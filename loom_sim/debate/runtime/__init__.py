"""The debate's owners: the main chat (run.py drives the debate machine), crux rooms
(crux_room.py drives theirs), drafting with its checks, planning (debate.json) and progress."""
