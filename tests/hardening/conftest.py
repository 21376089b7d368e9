"""Fixtures shared with the tests of the same endpoints: the events API's (a campaign, its first
grader, an API client as that grader) and the importer's (a writable copy of examples/)."""

from tests.grading.test_api_events import api, campaign, grader  # noqa: F401
from tests.grading.test_import_campaign import example  # noqa: F401
