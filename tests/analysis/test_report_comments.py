"""Graders' comments on the report: found through the partial index of commented judgments, in
unit order, the first 500 said to be the first of how many, rendered as the template loop did."""

from __future__ import annotations

from datetime import UTC, datetime
from functools import partial

import pytest
from django.db import connection
from django.template import Context, Template
from django.utils import timezone

from analysis import selectors
from analysis.templatetags.comments import comment_items
from grading.models import Judgment

pytestmark = pytest.mark.django_db

# The loop that comment_items replaced, kept here as the reference.
LOOP = Template(
    '{% for c in comments %}<li>{% if c.url %}<a href="{{ c.url }}">{{ c.external_id }}</a> · {% endif %}'
    "<strong>{{ c.grader }}</strong>\n"
    '      <span class="muted">{{ c.when|date:"Y-m-d H:i" }}</span><p>{{ c.text|linebreaksbr }}</p></li>{% endfor %}'
)


@pytest.mark.parametrize("zone", ["UTC", "Europe/Paris"])
def test_the_comment_list_is_what_the_template_loop_wrote(zone):
    comments = [
        {
            "grader": "G01",
            "text": "fine\nbut <script>alert(1)</script> & 'so'",
            "when": datetime(2025, 1, 2, 23, 30, tzinfo=UTC),
            "external_id": 'u"1<',
            "url": "/reports/campaigns/1/units/5/?a=1&b=2",
        },
        {"grader": "<G02>", "text": "line\r\nbreaks\rold mac", "when": datetime(2025, 6, 30, 0, 5, tzinfo=UTC)},
        {"grader": "G03", "text": "", "when": None, "url": ""},
    ]
    with timezone.override(zone):
        expected = LOOP.render(Context({"comments": comments}))
        assert str(comment_items(comments)) == expected
    assert "<script>" not in expected and "&lt;script&gt;" in expected


def test_the_report_lists_comments_in_unit_order_and_says_how_many_it_left_out(
    client, judged_campaign, organizer, monkeypatch
):
    judgments = list(Judgment.objects.filter(campaign=judged_campaign).order_by("unit_id", "grader_id"))
    assert len(judgments) > 3
    for i, j in enumerate(judgments[:3]):
        j.comment = f"comment {i}"
        j.save(update_fields=["comment"])
    listed = selectors.comment_list(campaign_id=judged_campaign.pk, limit=2)
    assert [c["text"] for c in listed] == ["comment 0", "comment 1"]  # unit order, then grader
    assert selectors.comment_count(campaign_id=judged_campaign.pk) == 3
    client.force_login(organizer)
    page = client.get(f"/reports/campaigns/{judged_campaign.pk}/").content.decode()
    assert "Comments from graders" in page and "comment 2" in page and "(3)" in page
    monkeypatch.setattr(selectors, "comment_list", partial(selectors.comment_list, limit=2))
    page = client.get(f"/reports/campaigns/{judged_campaign.pk}/").content.decode()
    assert "the first 2 of 3, in the campaign's unit order" in page
    assert "comment 1" in page and "comment 2" not in page


@pytest.mark.postgres
def test_comments_are_read_through_the_partial_index(judged_campaign):
    from analysis.selectors import Judgment as J  # the model the selector reads

    qs = (
        J.objects.filter(campaign_id=judged_campaign.pk)
        .exclude(comment="")
        .order_by("unit_id", "grader_id")
        .values("unit_id", "unit__external_id", "grader_id", "comment", "updated_at")[:500]
    )
    with connection.cursor() as cursor:
        cursor.execute("SET LOCAL enable_seqscan = off")  # a tiny test table: what the plan can use, not its cost
        plan = qs.explain()
    assert "judgment_commented" in plan, plan
