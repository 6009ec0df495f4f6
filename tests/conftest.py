"""Suite-wide settings: hypothesis draws the same examples on every run (``derandomize``), so a
red or green result reproduces on any machine; ``HYPOTHESIS_PROFILE=explore`` draws new ones."""

import os

from hypothesis import settings

settings.register_profile("ci", derandomize=True)
settings.register_profile("explore", derandomize=False)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))
