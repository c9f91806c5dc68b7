"""Chat API routes, under /api/v1/public/{accountName}/agents/{agentId}/chat/."""

from django.urls import path

from embedadmin.chat import views

urlpatterns = [
    path("public/<str:account_name>/agents/<str:agent_id>/chat/stream-chat-state", views.stream_chat_state),
    path("public/<str:account_name>/agents/<str:agent_id>/chat/abort", views.abort),
]
