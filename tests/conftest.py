"""Hypothesis profiles: `ci` (the default) is derandomized with no deadline, so a noisy
machine never fails a run; `thorough` runs many more examples by hand:

    HYPOTHESIS_PROFILE=thorough pytest
"""

import os

from hypothesis import HealthCheck, settings

settings.register_profile("ci", derandomize=True, deadline=None, max_examples=100,
                          suppress_health_check=[HealthCheck.too_slow])
settings.register_profile("thorough", deadline=None, max_examples=2000,
                          suppress_health_check=[HealthCheck.too_slow])
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))
