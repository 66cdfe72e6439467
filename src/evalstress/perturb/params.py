"""The parameter kinds moved to `evalstress.core.params`, shared with evaluators; this name
stays for the modules that still import it from here."""

from evalstress.core.params import (
    BOOLEAN,
    TEXT,
    ParamKind,
    ParamValueError,
    declare,
    level_counts,
    one_of,
    parse_params,
    whole_number,
)

__all__ = ["BOOLEAN", "TEXT", "ParamKind", "ParamValueError", "declare", "level_counts", "one_of",
           "parse_params", "whole_number"]
