"""What-if numerics: the stage plan, the simulation, history calibration, the server's prior, sizing."""
