"""Settings shared by the property tests (hypothesis): 25 examples each in the test command, which must
stay fast; DMLCONFORM_PROPERTY_EXAMPLES=2000 for a thorough local run."""

from __future__ import annotations

import os

from hypothesis import HealthCheck, settings

EXAMPLES = int(os.environ.get("DMLCONFORM_PROPERTY_EXAMPLES", "25"))
PROPERTIES = settings(max_examples=EXAMPLES, deadline=None, database=None,
                      suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
