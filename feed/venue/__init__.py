"""The restaurant: its file (tables, hours, turn times) and its calendar of slots."""
