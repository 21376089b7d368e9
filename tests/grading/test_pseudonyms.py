"""Graders' pseudonyms: G01, G02, … unique in a campaign, also when graders join at the same moment."""

from __future__ import annotations

import threading

import pytest
from django.db import connection

from grading.models import CampaignRole
from grading.models.choices import Role
from grading.services.campaigns import role_grant
from tests.factories import make_campaign, make_user

JOINERS = 12


def _pseudonyms(campaign) -> list[str]:
    return sorted(CampaignRole.objects.filter(campaign=campaign, role=Role.GRADER).values_list("pseudonym", flat=True))


@pytest.mark.django_db
def test_a_grader_joining_after_another_left_gets_a_fresh_pseudonym():
    campaign = make_campaign(graders=3)
    assert _pseudonyms(campaign) == ["G01", "G02", "G03"]
    CampaignRole.objects.filter(campaign=campaign, pseudonym="G02").delete()
    role = role_grant(campaign=campaign, user=make_user("late-joiner"), role=Role.GRADER)
    assert role.pseudonym == "G04"  # counting the graders would have given G03 again
    assert role_grant(campaign=campaign, user=role.user, role=Role.GRADER).pk == role.pk  # granting again


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_graders_joining_at_the_same_moment_all_get_distinct_pseudonyms():
    campaign = make_campaign(graders=1)  # G01; the joiners get G02 … G13
    users = [make_user(f"joiner-{i}") for i in range(JOINERS)]
    barrier, errors = threading.Barrier(JOINERS), []

    def join(user) -> None:
        try:
            barrier.wait(timeout=30)
            role_grant(campaign=campaign, user=user, role=Role.GRADER)
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)
        finally:
            connection.close()

    threads = [threading.Thread(target=join, args=(user,)) for user in users]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    assert errors == []
    assert _pseudonyms(campaign) == [f"G{i:02d}" for i in range(1, JOINERS + 2)]
