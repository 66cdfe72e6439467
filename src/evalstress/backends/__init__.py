"""Where a run's work happens beyond this machine's processes (Ray)."""
