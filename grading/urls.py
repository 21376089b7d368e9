from django.urls import path

from grading.views import adjudication, grader, join
from grading.views.organizer import activity as org_activity
from grading.views.organizer import campaign as org_campaign
from grading.views.organizer import create as org_create
from grading.views.organizer import gold as org_gold
from grading.views.organizer import join_links as org_join_links
from grading.views.organizer import members as org_members
from grading.views.organizer import organizers as org_organizers
from grading.views.organizer import progress as org_progress

app_name = "grading"

urlpatterns = [
    path("", grader.home, name="home"),
    path("campaigns/<int:campaign_id>/continue/", grader.continue_grading, name="continue"),
    path("campaigns/<int:campaign_id>/more/", grader.more_work, name="more"),
    path("campaigns/<int:campaign_id>/grade/<int:page>/", grader.grade, name="grade"),
    path("campaigns/<int:campaign_id>/guidelines/", grader.guidelines, name="guidelines"),
    path("campaigns/<int:campaign_id>/completion/", grader.completion, name="completion"),
    # Crowd studies: a participant's way in, from a recruitment platform.
    path("join/<slug:key>/", join.join, name="join"),
    # Organizers
    path("organize/organizers/", org_organizers.organizers, name="organizers"),
    path("organize/new/", org_create.campaign_new, name="campaign-new"),
    path("organize/new/confirm/", org_create.campaign_new_confirm, name="campaign-new-confirm"),
    path("organize/campaigns/<int:campaign_id>/", org_campaign.campaign_detail, name="campaign"),
    path(
        "organize/campaigns/<int:campaign_id>/status/<slug:to>/", org_campaign.campaign_status, name="campaign-status"
    ),
    path("organize/campaigns/<int:campaign_id>/members/", org_members.members, name="members"),
    path("organize/campaigns/<int:campaign_id>/join-links/", org_join_links.join_link_create, name="join-link-create"),
    path(
        "organize/campaigns/<int:campaign_id>/join-links/<int:link_id>/<slug:to>/",
        org_join_links.join_link_pause,
        name="join-link-pause",
    ),
    path(
        "organize/campaigns/<int:campaign_id>/members/<int:user_id>/<slug:role>/remove/",
        org_members.member_remove,
        name="member-remove",
    ),
    path(
        "organize/campaigns/<int:campaign_id>/members/<int:user_id>/exclusion/",
        org_members.member_exclusion,
        name="member-exclusion",
    ),
    path("organize/campaigns/<int:campaign_id>/assign/", org_members.assign_initial, name="assign-initial"),
    path("organize/campaigns/<int:campaign_id>/progress/", org_progress.progress, name="progress"),
    path("organize/campaigns/<int:campaign_id>/progress.json", org_progress.progress_json, name="progress-json"),
    path("campaigns/<int:campaign_id>/adjudicate/", adjudication.adjudicate, name="adjudicate"),
    path("organize/campaigns/<int:campaign_id>/gold/", org_gold.gold, name="gold"),
    path("organize/campaigns/<int:campaign_id>/activity/", org_activity.activity, name="activity"),
]
