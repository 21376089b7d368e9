"""Test environment, loaded as a pytest plugin before Django is configured.

- Gives the settings module what it needs to start (a SECRET_KEY, DEBUG on for plain HTTP).
- Keeps Celery eager inside the test process even when the environment names a broker: tests that
  need a real worker take the broker from EVALUTRON_TEST_BROKER_URL (see tests/services.py).
"""

import os

os.environ["EVALUTRON_ENV_FILE"] = ""  # a developer's .env must not change what the tests see
os.environ.setdefault("SECRET_KEY", "test-secret-key-not-for-production-" + "k" * 20)
os.environ.setdefault("DEBUG", "true")
os.environ.setdefault("DATA_DIR", os.path.join(os.path.dirname(os.path.dirname(__file__)), "var"))
broker = os.environ.pop("CELERY_BROKER_URL", "")
os.environ.setdefault("EVALUTRON_TEST_BROKER_URL", broker or "redis://127.0.0.1:6379/15")
os.environ.setdefault("ANALYSIS_DEBOUNCE_SECONDS", "0")
# No embedded runner thread in the test process: a late request to the live test server (after a test's
# settings are restored) would otherwise start one that outlives the test and writes to the next test's
# database. Tests of the runner turn it on themselves.
os.environ.setdefault("ANALYSIS_EMBEDDED_THREAD", "false")
# One test database per test process, so that concurrent runs on one machine do not collide.
os.environ.setdefault("EVALUTRON_TEST_DB_SUFFIX", f"_{os.getpid()}")
