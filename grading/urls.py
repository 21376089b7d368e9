from django.urls import path

from grading import views

app_name = "grading"

urlpatterns = [
    path("", views.home, name="home"),
]
