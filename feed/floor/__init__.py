"""What the floor can seat: availability per slot and party size, and combo matching.

Pure maths over tables and bookings: no clock, no I/O.
"""
