"""evalstress: stress tests for the metrics and LLM judges that score generated text."""

__version__ = "0.1.0"
