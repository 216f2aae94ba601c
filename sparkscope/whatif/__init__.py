"""What if and sizing: the database side (run inputs, stored calibration, answers)."""
