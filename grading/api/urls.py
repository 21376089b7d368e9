from django.urls import path

from grading.api import views

app_name = "grading-api"

urlpatterns = [
    path("auth/token/", views.TokenView.as_view(), name="token"),
    path("campaigns/", views.CampaignListView.as_view(), name="campaigns"),
    path("campaigns/<int:pk>/", views.CampaignDetailView.as_view(), name="campaign"),
    path("campaigns/<int:pk>/progress/", views.CampaignProgressView.as_view(), name="campaign-progress"),
    path("campaigns/<int:pk>/members/", views.CampaignMembersView.as_view(), name="campaign-members"),
    path("campaigns/<int:pk>/activity/", views.CampaignActivityView.as_view(), name="campaign-activity"),
    path("campaigns/<int:pk>/join-links/", views.CampaignJoinLinksView.as_view(), name="campaign-join-links"),
    path(
        "campaigns/<int:pk>/join-links/<int:link_id>/", views.CampaignJoinLinkView.as_view(), name="campaign-join-link"
    ),
    path(
        "campaigns/<int:pk>/participants/<str:grader>/exclusion/",
        views.CampaignExclusionView.as_view(),
        name="campaign-grader-exclusion",
    ),
    path("campaigns/<int:pk>/assignments/", views.CampaignAssignView.as_view(), name="campaign-assign"),
    path("assignments/", views.AssignmentListView.as_view(), name="assignments"),
    path("assignments/next/", views.NextAssignmentView.as_view(), name="assignments-next"),
    path("events/", views.EventView.as_view(), name="events"),
    path("judgments/", views.JudgmentListView.as_view(), name="judgments"),
    path("orderings/", views.OrderingView.as_view(), name="orderings"),
]
