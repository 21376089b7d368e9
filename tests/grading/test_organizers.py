"""Organizers of the site: an admin makes a user an organizer (may create campaigns) from the
Organizers page, reachable from the home page; each change is in the audit trail."""

from __future__ import annotations

import pytest

from grading.errors import NotAllowed, NotFound
from grading.models import AuditEntry
from grading.services.demo import seed_demo
from grading.services.organizers import can_create_campaigns, organizer_set
from tests.factories import make_user

pytestmark = pytest.mark.django_db


@pytest.fixture
def admin_user():
    return make_user("boss", is_staff=True)


def test_the_home_page_of_an_admin_links_to_the_organizers_page(client, admin_user):
    client.force_login(admin_user)
    html = client.get("/").content.decode()
    assert 'href="/organize/organizers/"' in html


def test_the_home_page_of_someone_else_does_not_link_to_it_and_the_page_refuses_them(client):
    client.force_login(make_user())
    assert "/organize/organizers/" not in client.get("/").content.decode()
    assert client.get("/organize/organizers/").status_code == 403
    assert client.post("/organize/organizers/", {"username": "x"}).status_code == 403


def test_an_admin_makes_a_user_an_organizer_who_then_can_create_campaigns_and_it_is_audited(client, admin_user):
    alice = make_user("alice")
    assert not can_create_campaigns(alice)
    client.force_login(admin_user)
    response = client.post("/organize/organizers/", {"username": "alice", "organizer": "1"})
    assert response.status_code == 302
    alice = type(alice).objects.get(pk=alice.pk)  # permissions are cached on the instance
    assert can_create_campaigns(alice)
    assert "alice" in client.get("/organize/organizers/").content.decode()
    entry = AuditEntry.objects.get(action="organizer.granted")
    assert (entry.actor_name, entry.target, entry.before, entry.after) == (
        "boss",
        "alice",
        {"can_create_campaigns": False},
        {"can_create_campaigns": True},
    )
    client.force_login(alice)
    assert client.get("/organize/new/").status_code == 200


def test_an_admin_withdraws_it_and_that_is_audited_too(client, admin_user):
    alice = make_user("alice")
    organizer_set(username="alice", organizer=True, actor=admin_user)
    client.force_login(admin_user)
    client.post("/organize/organizers/", {"username": "alice", "organizer": "0"})
    assert not can_create_campaigns(type(alice).objects.get(pk=alice.pk))
    assert list(AuditEntry.objects.order_by("id").values_list("action", flat=True)) == [
        "organizer.granted",
        "organizer.withdrawn",
    ]


def test_granting_twice_records_once():
    admin = make_user(is_staff=True)
    make_user("alice")
    organizer_set(username="alice", organizer=True, actor=admin)
    organizer_set(username="alice", organizer=True, actor=admin)
    assert AuditEntry.objects.filter(action="organizer.granted").count() == 1


def test_an_unknown_user_name_is_named_next_to_the_form_and_nothing_changes(client, admin_user):
    client.force_login(admin_user)
    response = client.post("/organize/organizers/", {"username": "nobody", "organizer": "1"})
    assert response.status_code == 400
    html = response.content.decode()
    assert "there is no user named &#x27;nobody&#x27;" in html and "Nothing was changed." in html
    assert not AuditEntry.objects.exists()


def test_only_staff_may_call_the_service():
    make_user("alice")
    with pytest.raises(NotAllowed):
        organizer_set(username="alice", organizer=True, actor=make_user())
    with pytest.raises(NotFound, match="no user named 'ghost'"):
        organizer_set(username="ghost", organizer=True, actor=make_user(is_staff=True))


def test_the_demo_organizer_can_create_campaigns(client):
    seed_demo(simulate=False, n_queries=1, n_candidates=2)
    organizer = type(make_user()).objects.get(username="organizer")
    assert can_create_campaigns(organizer)
    client.force_login(organizer)
    assert 'id="new-campaign"' in client.get("/").content.decode()
    assert client.get("/organize/new/").status_code == 200
