from django.urls import path

from analysis import downloads, unit_page, views

app_name = "analysis"

urlpatterns = [
    path("campaigns/<int:campaign_id>/", views.report, name="report"),
    path("campaigns/<int:campaign_id>/run/", views.report_run, name="run"),
    path(
        "campaigns/<int:campaign_id>/system-orderings/",
        views.report_systems_upload,
        {"kind": "orderings"},
        name="system-orderings",
    ),
    path(
        "campaigns/<int:campaign_id>/system-scores/",
        views.report_systems_upload,
        {"kind": "scores"},
        name="system-scores",
    ),
    path("campaigns/<int:campaign_id>/system-evaluation/", views.report_system_evaluation, name="system-evaluation"),
    path("campaigns/<int:campaign_id>/evaluate-runs/", views.report_evaluate_runs, name="evaluate-runs"),
    path("campaigns/<int:campaign_id>/instrument-links/", views.report_instrument_links, name="instrument-links"),
    path("campaigns/<int:campaign_id>/tables/<slug:table>.csv", views.report_csv, name="table-csv"),
    path("campaigns/<int:campaign_id>/units/<int:unit_id>/", unit_page.unit_detail, name="unit"),
    path("campaigns/<int:campaign_id>/download/<slug:what>.<slug:fmt>", downloads.download, name="download"),
]
