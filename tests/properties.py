"""Settings shared by the property tests (hypothesis): 25 examples each in the test command, which must stay
fast, drawn the same way on every run (derandomized), so that CI's verdict on a commit does not depend on the
draw. A thorough local run explores afresh: DMLCONFORM_PROPERTY_EXAMPLES=2000 DMLCONFORM_PROPERTY_RANDOM=1."""

from __future__ import annotations

import os

from hypothesis import HealthCheck, settings

EXAMPLES = int(os.environ.get("DMLCONFORM_PROPERTY_EXAMPLES", "25"))
RANDOM = bool(os.environ.get("DMLCONFORM_PROPERTY_RANDOM"))
PROPERTIES = settings(max_examples=EXAMPLES, deadline=None, database=None, derandomize=not RANDOM,
                      suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
