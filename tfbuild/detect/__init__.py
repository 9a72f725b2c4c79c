"""Detection: what a machine is and what it can build and run (the only impure corner besides the
engine and the smoke probe). Each module returns frozen dataclasses with a ``to_json()`` method."""
