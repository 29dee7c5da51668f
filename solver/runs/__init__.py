"""A run in flight: its logs read (``readers.py``), what it measured (``state.py``), and where it stands against
its plan (``track.py``)."""
