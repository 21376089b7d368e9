"""No GET changes anything (docs/design.md §4): every URL pattern of the site, requested with GET by an
anonymous visitor, a grader, an organizer and an admin, issues no INSERT, UPDATE or DELETE; but a
download of a campaign's data appends who exported what to the audit trail.

The patterns are read from the URL configuration itself, so a page or endpoint added later is walked
too; each parameter of a pattern is given a value that reaches the view's real work (a campaign of
each kind the roles belong to, its units, its latest analysis, every download and report table).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass, field

import pytest
from django.contrib.auth.models import Group
from django.contrib.auth.tokens import default_token_generator
from django.contrib.contenttypes.models import ContentType
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.urls import URLPattern, URLResolver, get_resolver
from django.utils.encoding import force_bytes
from django.utils.http import urlsafe_base64_encode
from rest_framework.authtoken.models import Token

from analysis.downloads import DOWNLOADS
from analysis.models import AnalysisRun, RunStatus
from analysis.services import runs
from analysis.services.execute import run_execute
from grading.models import Campaign
from grading.models.choices import CampaignStatus, Policy, Scheme
from grading.services.adjudication import adjudication_record
from grading.services.join_links import Identity, join_link_create, participant_join
from grading.services.lifecycle import campaign_settings_update
from grading.services.system_scores import system_scores_import, system_scores_rows_from_csv
from tests.analysis.conftest import judge_broad_fine, judge_orderings
from tests.factories import make_campaign, make_user

pytestmark = pytest.mark.django_db

WRITE = re.compile(r"^\s*(INSERT|UPDATE|DELETE|TRUNCATE|MERGE|CREATE|ALTER|DROP)\b", re.IGNORECASE)
# A visitor's session is the visitor's own state, not the application's data (a one-time link's GET
# keeps its token there before it redirects, as Django's set-password view does).
SESSION_TABLE = "django_session"
AUDIT_INSERT = 'INSERT INTO "grading_auditentry"'
EXPORTS = (  # the routes whose GET is a download, recorded in the audit trail
    "reports/campaigns/<int:campaign_id>/download/<slug:what>.<slug:fmt>",
    "api/campaigns/<int:campaign_id>/ground-truth/",
    "api/campaigns/<int:campaign_id>/events/",
    "api/campaigns/<int:campaign_id>/participants/",
)
ID = re.compile(r"""<[^>]*?\sid=["']([^"']+)["']""")
PARAMETER = re.compile(r"<(?:(?P<converter>\w+):)?(?P<name>\w+)>|\(\?P<(?P<group>\w+)>[^)]*(?:\([^)]*\)[^)]*)*\)")


@dataclass
class Site:
    rating: Campaign
    ordering: Campaign
    grader: object
    organizer: object
    staff: object
    tables: dict = field(default_factory=dict)


def _patterns(patterns: list, prefix: str = "") -> Iterator[tuple[str, URLPattern]]:
    for entry in patterns:
        if isinstance(entry, URLResolver):
            yield from _patterns(entry.url_patterns, prefix + str(entry.pattern))
        else:
            yield prefix + str(entry.pattern), entry


def _values(name: str, route: str, entry: URLPattern, site: Site, campaign: Campaign) -> list[str]:
    """The values a pattern's parameter takes in the walk."""
    model_admin = getattr(entry.callback, "model_admin", None)
    unit = campaign.units.order_by("pk").first()
    run = AnalysisRun.objects.filter(campaign=campaign, status=RunStatus.SUCCEEDED).order_by("-pk").first()
    by_name = {
        "campaign_id": [campaign.pk],
        "pk": [campaign.pk],
        "page": [1],
        "unit_id": [unit.pk],
        "run_id": [run.pk],
        "user_id": [site.grader.pk],
        "role": ["grader", "organizer"],
        "to": list(CampaignStatus.values),
        "what": sorted({what for what, _ in DOWNLOADS}),
        "fmt": sorted({fmt for _, fmt in DOWNLOADS}),
        "uidb64": [urlsafe_base64_encode(force_bytes(site.grader.pk))],
        "token": [default_token_generator.make_token(site.grader)],
        "content_type_id": [ContentType.objects.get_for_model(Campaign).pk],
        "app_label": ["auth", "authtoken", "grading", "analysis"],
        "url": ["no-such-page/"],
        "name": [unit.candidate.public_id],
        "path": ["no-such-file.wav"],
        "id": [site.grader.pk],
        "key": [campaign.join_links.get().key],
        "link_id": [campaign.join_links.get().pk],
        "grader": [str(site.grader.pk)],
    }
    if name == "object_id":
        model = model_admin.model if model_admin else Campaign
        first = model._default_manager.order_by("pk").first()
        assert first is not None, f"the walk needs a {model.__name__} for {route}"
        return [str(first.pk)]
    if name == "table":
        return _table_names(site, campaign)
    return [str(v) for v in by_name[name]]


def _table_names(site: Site, campaign: Campaign) -> list[str]:
    """The report's tables, as its page links them (read once per campaign)."""
    if campaign.pk in site.tables:
        return site.tables[campaign.pk]
    client = Client()
    client.force_login(site.staff)
    html = client.get(f"/reports/campaigns/{campaign.pk}/").content.decode()
    site.tables[campaign.pk] = sorted(set(re.findall(r"/tables/([\w-]+)\.csv", html)))
    return site.tables[campaign.pk]


def _urls(route: str, entry: URLPattern, site: Site, campaign: Campaign) -> list[str]:
    urls = [""]
    position = 0
    for match in PARAMETER.finditer(route):
        name = match.group("name") or match.group("group")
        literal = route[position : match.start()]
        urls = [u + literal + v for u in urls for v in _values(name, route, entry, site, campaign)]
        position = match.end()
    urls = ["/" + (u + route[position:]).lstrip("^").rstrip("$") for u in urls]
    return [u for u in urls if "\\" not in u]


QUERIES = {  # query strings that reach more of a view than its bare URL
    "api/": ["?campaign={c}", "?campaign={c}&format=json", "?campaign={c}&format=parquet", "?result=true"],
    "reports/campaigns/<int:campaign_id>/": ["?aggregate=median&measure=entropy&threshold=0.5"],
    "campaigns/<int:campaign_id>/adjudicate/": ["?sort=uncertainty"],
    # A newcomer (the page offers to join), a participant who comes back, a hostile id, no id.
    "join/<slug:key>/": ["?PROLIFIC_PID=newcomer1&STUDY_ID=s1&SESSION_ID=x1", "?pid=walker-p1", "?pid=%3Cscript%3E"],
}


def _with_queries(route: str, urls: list[str], campaign: Campaign) -> list[str]:
    extra = [
        q
        for prefix, qs in QUERIES.items()
        if route == prefix or (prefix == "api/" and route.startswith(prefix))
        for q in qs
    ]
    return urls + [u + q.format(c=campaign.pk) for u in urls for q in extra]


@pytest.fixture
def site() -> Site:
    grader, organizer = make_user("walker-grader"), make_user("walker-organizer")
    staff = make_user("walker-admin", is_staff=True, is_superuser=True)
    Token.objects.create(user=staff)
    Group.objects.create(name="walkers")
    rating = make_campaign(n_queries=2, n_candidates=4, graders=[grader, make_user()], organizer=organizer)
    judge_broad_fine(rating, seed=4)
    scores = "unit,system,score\n" + "".join(f"{u.external_id},sys-x,{u.pk % 5}\n" for u in rating.units.all())
    system_scores_import(campaign=rating, rows=system_scores_rows_from_csv(scores.encode()))
    adjudication_record(organizer=organizer, unit=rating.units.first(), value="VS", note="settled")
    # The organizer changes the policy: the allocation state is out of date until work is next taken.
    campaign_settings_update(
        campaign=rating, actor=organizer, policy=Policy.CONSENSUS, policy_params={"threshold": 0.5}
    )
    ordering = make_campaign(scheme=Scheme.ORDERING, n_queries=2, n_candidates=4, graders=[grader], organizer=organizer)
    judge_orderings(ordering)
    for campaign in (rating, ordering):
        link = join_link_create(campaign=campaign, actor=organizer, completion_code="C0DE", max_participants=5)
        participant_join(link=link, identity=Identity(platform="generic", external_id="walker-p1"))
        run = AnalysisRun.objects.create(campaign=campaign, parameters=runs.parameters_clean({"n_boot": 20}), seed=1)
        assert run_execute(run_id=run.pk) == RunStatus.SUCCEEDED
    return Site(rating=rating, ordering=ordering, grader=grader, organizer=organizer, staff=staff)


def _repeated_ids(html: str) -> list[str]:
    ids = ID.findall(html)
    return sorted({i for i in ids if ids.count(i) > 1})


def _writes(queries: list[dict]) -> list[str]:
    return [q["sql"] for q in queries if WRITE.match(q["sql"]) and SESSION_TABLE not in q["sql"]]


def test_no_get_of_any_page_or_endpoint_writes_as_any_role(site):
    roles = {"anonymous": None, "grader": site.grader, "organizer": site.organizer, "staff": site.staff}
    walked: set[str] = set()
    writes: list[tuple[str, str, str]] = []
    exports: list[tuple[str, str]] = []
    duplicate_ids: list[tuple[str, str, list[str]]] = []
    for role, user in roles.items():
        client = Client()
        if user is not None:
            client.force_login(user)
        for campaign in (site.rating, site.ordering):
            for route, entry in _patterns(get_resolver().url_patterns):
                if route.startswith("admin/") and campaign == site.ordering:
                    continue  # the admin's pages name no campaign: walked once
                for url in _with_queries(route, _urls(route, entry, site, campaign), campaign):
                    with CaptureQueriesContext(connection) as queries:
                        response = client.get(url)
                        b"".join(getattr(response, "streaming_content", [])) if response.streaming else None
                    walked.add(route)
                    if response.status_code == 200 and response.get("Content-Type", "").startswith("text/html"):
                        repeated = _repeated_ids(response.content.decode())
                        if repeated:
                            duplicate_ids.append((role, url, repeated))
                    for sql in _writes(queries.captured_queries):
                        if route in EXPORTS and sql.startswith(AUDIT_INSERT):
                            exports.append((role, url))
                        else:
                            writes.append((role, url, sql[:120]))
    assert len(walked) == len(list(_patterns(get_resolver().url_patterns)))
    assert writes == []
    assert duplicate_ids == []  # a label's `for`, an error's aria-describedby and a script name one element
    assert {role for role, _ in exports} == {"organizer", "staff"}  # who may download, and only they


def test_the_walk_would_see_a_write():
    with CaptureQueriesContext(connection) as queries:
        make_user("written")
    assert len(_writes(queries.captured_queries)) >= 1
