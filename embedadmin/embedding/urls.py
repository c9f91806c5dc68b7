from django.urls import path

from embedadmin.embedding import pages, views

urlpatterns = [
    path("embed/generate-session", views.GenerateSessionView.as_view()),
    path("embed/session/token", views.SessionTokenView.as_view()),
    path("embed/session/revoke", views.SessionRevokeView.as_view()),
    path("embed/session/context", views.SessionContextView.as_view()),
    path("embed/dashboard/<str:public_id>/view", pages.dashboard_view),
    path("embed/dashboard/<str:public_id>/export", pages.dashboard_export),
]
