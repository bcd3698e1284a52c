"""Routes of the console app: ``/ui/*`` read models (``ui_urlpatterns``), operator login under
``/api/v1/auth/`` (``auth_urlpatterns``) and the built app at ``/`` and ``/console/``
(``app_urlpatterns``). ``uns_project.urls`` mounts each."""
from django.urls import path, re_path

from . import auth, spa, views

ui_urlpatterns = [
    path("overview", views.OverviewView.as_view(), name="ui-overview"),
    path("inbox", views.InboxView.as_view(), name="ui-inbox"),
    path("inbox/groups", views.InboxGroupsView.as_view(), name="ui-inbox-groups"),
    path("notifications", views.NotificationListView.as_view(), name="ui-notifications"),
    path("notifications/<str:notification_id>", views.NotificationView.as_view(), name="ui-notification"),
    path("dlq", views.DeadLetterView.as_view(), name="ui-dlq"),
    path("dlq/groups", views.DeadLetterGroupsView.as_view(), name="ui-dlq-groups"),
    path("policies", views.PoliciesView.as_view(), name="ui-policies"),
    path("policies/<str:policy_id>/diff", views.PolicyDiffView.as_view(), name="ui-policy-diff"),
    path("policies/<str:policy_id>/versions/<str:version>/activation-preview", views.ActivationPreviewView.as_view(),
         name="ui-policy-activation-preview"),
    path("audit", views.AuditView.as_view(), name="ui-audit"),
    path("channels", views.ChannelsView.as_view(), name="ui-channels"),
    path("series", views.SeriesView.as_view(), name="ui-series"),
    path("silences", views.SilencesView.as_view(), name="ui-silences"),
    path("bulk-actions/preview", views.BulkPreviewView.as_view(), name="ui-bulk-preview"),
    path("bulk-actions/<str:bulk_id>", views.BulkActionView.as_view(), name="ui-bulk-action"),
    path("me", views.MeView.as_view(), name="ui-me"),
    path("oncall", views.OncallBoardView.as_view(), name="ui-oncall"),
    path("oncall/me", views.MyOncallView.as_view(), name="ui-oncall-me"),
    path("oncall/schedules/<str:name>/calendar", views.OncallCalendarView.as_view(), name="ui-oncall-calendar"),
]

auth_urlpatterns = [
    path("login", auth.LoginView.as_view(), name="auth-login"),
    path("logout", auth.LogoutView.as_view(), name="auth-logout"),
]

app_urlpatterns = [
    path("", spa.app, name="console-root"),
    path("console/", spa.app, name="console-app"),
    re_path(r"^console/(?P<path>.+)$", spa.app, name="console-path"),
]
