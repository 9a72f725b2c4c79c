"""A finished wheel: its label, its normalised bytes, its floor, its receipt, two wheels compared, and an index of many."""
