from django.urls import path

from grading.views import adjudication, grader

app_name = "grading"

urlpatterns = [
    path("", grader.home, name="home"),
    path("campaigns/<int:campaign_id>/continue/", grader.continue_grading, name="continue"),
    path("campaigns/<int:campaign_id>/more/", grader.more_work, name="more"),
    path("campaigns/<int:campaign_id>/grade/<int:page>/", grader.grade, name="grade"),
    path("campaigns/<int:campaign_id>/guidelines/", grader.guidelines, name="guidelines"),
    path("campaigns/<int:campaign_id>/adjudicate/", adjudication.adjudicate, name="adjudicate"),
]
