"""The engine: plan, generate, score and stream one run into its run directory."""
