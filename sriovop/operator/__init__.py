"""The operator process: two managers, leader election, fencing and shutdown cleanup."""
