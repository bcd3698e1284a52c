from django.urls import path

from notifications.integrations import alertmanager, pagerduty

from . import bulk_views, channel_views, list_views, respond_views, silence_views, views

urlpatterns = [
    # GET lists, POST submits (list_views.NotificationCollectionView extends the submit view)
    path("notifications", list_views.NotificationCollectionView.as_view(), name="notification-submit"),
    path("notifications/<str:notification_id>", views.NotificationDetailView.as_view(), name="notification-detail"),
    path("notifications/<str:notification_id>/ack", views.AckView.as_view(), name="notification-ack"),
    path("notifications/<str:notification_id>/dismiss", views.DismissView.as_view(), name="notification-dismiss"),
    path("dlq", views.DeadLetterListView.as_view(), name="dlq-list"),
    path("audit", list_views.AuditListView.as_view(), name="audit-list"),
    path("dlq/<str:notification_id>/replay", views.ReplayView.as_view(), name="dlq-replay"),
    path("dlq/<str:notification_id>/resolve", views.ResolveView.as_view(), name="dlq-resolve"),
    path("bulk-actions", bulk_views.BulkActionCollectionView.as_view(), name="bulk-actions"),
    path("bulk-actions/<str:bulk_id>/run", bulk_views.BulkActionRunView.as_view(), name="bulk-action-run"),
    # deprecated aliases (notifications.api.deprecation): the DLQ's actions were at these paths
    path("runtime/notifications/<str:notification_id>/replay", views.DeprecatedReplayView.as_view(),
         name="notification-replay"),
    path("dlq/<str:notification_id>", views.DeadLetterItemView.as_view(), name="dlq-item"),
    path("notifications/<str:notification_id>/timeline", list_views.NotificationTimelineView.as_view(),
         name="notification-timeline"),
    # compatible intake (notifications/integrations/): existing monitors send unchanged
    path("integrations/pagerduty/v2/enqueue", pagerduty.PagerDutyEnqueueView.as_view(), name="intake-pagerduty"),
    path("integrations/pagerduty/v2/change/enqueue", pagerduty.PagerDutyChangeView.as_view(),
         name="intake-pagerduty-change"),
    path("integrations/alertmanager", alertmanager.AlertmanagerWebhookView.as_view(), name="intake-alertmanager"),
    path("notifications/<str:notification_id>/snooze", respond_views.SnoozeView.as_view(), name="notification-snooze"),
    path("notifications/<str:notification_id>/escalate", respond_views.EscalateView.as_view(),
         name="notification-escalate"),
    # delivery channels (operator): runtime.channels, as uns_channel and the admin
    path("channels", channel_views.ChannelCollectionView.as_view(), name="channel-list"),
    path("channels/<str:name>", channel_views.ChannelItemView.as_view(), name="channel-detail"),
    path("channels/<str:name>/rotate-secret", channel_views.ChannelSecretView.as_view(), name="channel-rotate-secret"),
    path("channels/<str:name>/enable", channel_views.ChannelEnableView.as_view(), name="channel-enable"),
    path("channels/<str:name>/disable", channel_views.ChannelDisableView.as_view(), name="channel-disable"),
    path("channels/<str:name>/test", channel_views.ChannelTestView.as_view(), name="channel-test"),
    # silences and maintenance windows (operator): runtime.silences, as the MCP tools and the console
    path("silences", silence_views.SilenceCollectionView.as_view(), name="silence-list"),
    path("silences/preview", silence_views.SilencePreviewView.as_view(), name="silence-preview"),
    path("silences/<str:silence_id>", silence_views.SilenceItemView.as_view(), name="silence-detail"),
    path("silences/<str:silence_id>/expire", silence_views.SilenceExpireView.as_view(), name="silence-expire"),
]
