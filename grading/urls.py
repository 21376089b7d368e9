from django.urls import path

from grading import views

app_name = "grading"

urlpatterns = [
    path("", views.home, name="home"),
    path("campaigns/<int:campaign_id>/continue/", views.continue_grading, name="continue"),
    path("campaigns/<int:campaign_id>/more/", views.more_work, name="more"),
    path("campaigns/<int:campaign_id>/grade/<int:page>/", views.grade, name="grade"),
    path("campaigns/<int:campaign_id>/guidelines/", views.guidelines, name="guidelines"),
]
