from django.urls import path

from analysis import api, api_systems

urlpatterns = [
    path("campaigns/<int:campaign_id>/analyses/", api.CampaignAnalysesView.as_view(), name="api-campaign-analyses"),
    path(
        "campaigns/<int:campaign_id>/system-orderings/", api.SystemOrderingsView.as_view(), name="api-system-orderings"
    ),
    path("analyses/<int:run_id>/", api.AnalysisRunView.as_view(), name="api-analysis"),
    path("campaigns/<int:campaign_id>/ground-truth/", api.GroundTruthView.as_view(), name="api-ground-truth"),
    path("campaigns/<int:campaign_id>/events/", api.EventLogView.as_view(), name="api-events"),
    path("campaigns/<int:campaign_id>/participants/", api.ParticipantsView.as_view(), name="api-participants"),
    path(
        "campaigns/<int:campaign_id>/system-scores/", api_systems.SystemScoresView.as_view(), name="api-system-scores"
    ),
]
