"""The random numbers the machinery's background threads draw (jitter, watch timeouts).

A private `random.Random`, not the `random` module's global one: reflectors, backoffs and electors
run on threads that outlive whatever started them, and a draw on the global generator changes the
state that a test's property framework seeds and checks around each example (Hypothesis reports a
changed global state as an error in the test that happened to be running). Nothing here needs
reproducible sequences; the generator is seeded from the OS like the global one.
"""

from __future__ import annotations

import random

RNG = random.Random()
