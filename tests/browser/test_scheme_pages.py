"""Each scheme's grading page is its own ES module (static/js/schemes/) over the shared page and outbox
modules: in Chromium at 1280 and 390 px a grader reaches each from the home page and gives a value by
keyboard alone, and the server stores it; the browser loads only the modules that scheme needs. And
changed guidelines are marked read by the guidelines page's button, not by looking at them."""

from __future__ import annotations

import pytest

from grading.models import GradingEvent, Judgment, Ordering
from grading.models.choices import Scheme
from grading.services.lifecycle import campaign_settings_update
from tests.browser.test_grader_truth import WIDTHS, open_page, width  # noqa: F401 - fixtures
from tests.browser.test_grading import PASSWORD, all_saved, browser  # noqa: F401 - fixtures
from tests.factories import make_campaign, make_user, record
from tests.grading.api_helpers import fast_passwords, my_units  # noqa: F401

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

# scheme, its parameters, queries, the keys that give the first unit a value, the value stored
CASES = [
    (Scheme.BROAD_FINE, {}, 1, ["3", "f", "7", "Enter"], ("broad", "fine"), ("VS", 7.0)),
    (Scheme.NUMERIC, {"min": 1, "max": 5, "step": 1}, 0, ["End"], ("score",), (5.0,)),
    (Scheme.CATEGORICAL, None, 0, ["2"], ("label",), ("ok",)),
    (Scheme.PAIRWISE, {"attribute": "danceable"}, 0, ["e"], ("verdict",), ("equal",)),
    (Scheme.ORDERING, {"first": "best"}, 1, ["j", "Shift+ArrowUp", "Enter"], None, None),
]
SHARED = {"/static/js/page.js", "/static/js/outbox.js"}


@pytest.mark.parametrize(
    ("scheme", "params", "n_queries", "keys", "fields", "stored"), CASES, ids=[c[0] for c in CASES]
)
def test_a_grader_gives_a_value_by_keyboard_on_each_schemes_page(
    open_page,  # noqa: F811
    width,  # noqa: F811
    scheme,
    params,
    n_queries,
    keys,
    fields,
    stored,
):
    grader = make_user(password=PASSWORD)
    campaign = make_campaign(scheme=scheme, scheme_params=params, graders=[grader], n_queries=n_queries, n_candidates=3)
    if scheme == Scheme.PAIRWISE:
        for unit in campaign.units.all():
            unit.candidate_b = campaign.candidates.exclude(pk=unit.candidate_id).first()
            unit.save()
    page = open_page(grader, width)
    scripts: list[str] = []
    page.on(
        "request",
        lambda r: scripts.append(r.url.split(page.url.split("/")[2], 1)[-1]) if r.url.endswith(".js") else None,
    )
    page.locator(f".campaign-row[data-campaign='{campaign.pk}'] a.continue").focus()
    page.keyboard.press("Enter")
    page.wait_for_url(f"**/campaigns/{campaign.pk}/grade/1/")
    page.wait_for_function("() => window.evalutronPage !== undefined")
    for key in keys:
        page.keyboard.press(key)
    if scheme == Scheme.ORDERING:
        page.locator("#ordering-state", has_text="Submitted").wait_for()
    all_saved(page)
    assert set(scripts) == SHARED | {f"/static/js/schemes/{scheme}.js"} | (
        {"/static/js/rating.js"} if scheme != Scheme.ORDERING else set()
    ) | ({"/static/js/number_scale.js"} if scheme in (Scheme.BROAD_FINE, Scheme.NUMERIC) else set())
    if scheme == Scheme.ORDERING:
        ordering = Ordering.objects.get(grader=grader)
        assert len(ordering.items) == 3 and ordering.submitted_at is not None
        return
    judgment = Judgment.objects.get(grader=grader, unit=my_units(grader, campaign)[0])
    assert tuple(getattr(judgment, f) if f != "fine" else float(judgment.fine) for f in fields) == stored
    assert page.locator(".card.active .saved").text_content() == "Saved"


def test_a_grader_reads_changed_guidelines_and_leaves_by_their_button(open_page, width):  # noqa: F811
    grader = make_user(password=PASSWORD)
    campaign = make_campaign(graders=[grader], n_queries=1, n_candidates=2)
    record(grader, campaign, "guidelines_viewed", {"version": 1})
    campaign = campaign_settings_update(campaign=campaign, actor=None, guidelines="Judge melody.\nIgnore loudness.")
    page = open_page(grader, width)
    page.locator(f".campaign-row[data-campaign='{campaign.pk}'] a.continue").focus()
    page.keyboard.press("Enter")
    page.wait_for_url(f"**/campaigns/{campaign.pk}/guidelines/")
    assert page.get_by_text("Ignore loudness.").first.is_visible()
    assert GradingEvent.objects.filter(type="guidelines_viewed").count() == 1  # looking changes nothing
    page.get_by_role("button", name="I have read them: back to grading").focus()
    page.keyboard.press("Enter")
    page.wait_for_url(f"**/campaigns/{campaign.pk}/grade/1/")
    read = GradingEvent.objects.filter(type="guidelines_viewed").order_by("server_ts").last()
    assert read.payload == {"version": 2, "via": "page"}
