"""Studies: workflows that score texts themselves (attack, correlate, self-bias)."""
