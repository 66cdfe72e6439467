"""The orchestration layer: every face describes its run as settings, `build_job` turns them
into a `StressJob`, and `run_job` runs it (check -> caches -> plan/generate/score -> analyses
-> write -> run health).

- `settings`: `RunSettings`, the one settings model (flags > --config > suite > defaults);
- `build`: `build_job`, the one builder (examples, suite, evaluators, generation stage);
- `run`: `StressJob` and `run_job`.
"""

from evalstress.job.build import build_evaluators, build_job
from evalstress.job.run import JobError, JobResult, StressJob, run_job, score_job
from evalstress.job.settings import LEXICAL_DEFAULT, RunSettings, SettingsError

__all__ = ["LEXICAL_DEFAULT", "JobError", "JobResult", "RunSettings", "SettingsError",
           "StressJob", "build_evaluators", "build_job", "run_job", "score_job"]
