import pytest
from django.contrib.auth import authenticate
from django.core.management import call_command

from grading.models import Campaign, GradingEvent, Judgment, Ordering
from grading.services.demo import demo_logins, seed_demo

pytestmark = pytest.mark.django_db


def test_the_demo_has_three_campaigns_with_simulated_judgments_and_working_logins():
    seed_demo(n_queries=2, n_candidates=4)
    slugs = set(Campaign.objects.values_list("slug", flat=True))
    assert slugs == {"demo-audio-similarity", "demo-word-pairs", "demo-playlist-orderings"}
    audio = Campaign.objects.get(slug="demo-audio-similarity")
    assert audio.units.count() == 8 and audio.candidates.count() > 0
    assert all(c.media_file for c in audio.candidates.all())
    assert Judgment.objects.filter(campaign=audio, broad__isnull=False, fine__isnull=False).count() > 10
    assert GradingEvent.objects.filter(campaign=audio, type="audition").exists()
    assert Judgment.objects.filter(campaign__slug="demo-word-pairs", score__isnull=False).count() > 50
    assert Ordering.objects.filter(campaign__slug="demo-playlist-orderings").count() > 5
    assert len(demo_logins()) >= 3
    for login in demo_logins():
        assert authenticate(username=login.username, password=login.password) is not None, login.username


def test_running_it_again_keeps_the_data():
    seed_demo(n_queries=1, n_candidates=3)
    before = (GradingEvent.objects.count(), Judgment.objects.count())
    call_command("seed_demo")
    assert (GradingEvent.objects.count(), Judgment.objects.count()) == before
