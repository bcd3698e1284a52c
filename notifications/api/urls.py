from django.urls import path

from notifications.integrations import alertmanager, pagerduty

from . import bulk_views, channel_views, list_views, oncall_views, respond_views, views

urlpatterns = [
    # GET lists, POST submits (list_views.NotificationCollectionView extends the submit view)
    path("notifications", list_views.NotificationCollectionView.as_view(), name="notification-submit"),
    path("notifications/<str:notification_id>", views.NotificationDetailView.as_view(), name="notification-detail"),
    path("notifications/<str:notification_id>/ack", views.AckView.as_view(), name="notification-ack"),
    path("notifications/<str:notification_id>/dismiss", views.DismissView.as_view(), name="notification-dismiss"),
    path("dlq", views.DeadLetterListView.as_view(), name="dlq-list"),
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
    # on-call: teams, schedules, contact methods (runtime.oncall; oncall_views)
    path("oncall/teams", oncall_views.TeamCollectionView.as_view(), name="oncall-teams"),
    path("oncall/teams/<str:name>", oncall_views.TeamItemView.as_view(), name="oncall-team"),
    path("oncall/schedules", oncall_views.ScheduleCollectionView.as_view(), name="oncall-schedules"),
    path("oncall/schedules/<str:name>", oncall_views.ScheduleItemView.as_view(), name="oncall-schedule"),
    path("oncall/schedules/<str:name>/layers", oncall_views.LayerCollectionView.as_view(), name="oncall-layers"),
    path("oncall/schedules/<str:name>/layers/<int:position>", oncall_views.LayerItemView.as_view(),
         name="oncall-layer"),
    path("oncall/schedules/<str:name>/overrides", oncall_views.OverrideCollectionView.as_view(),
         name="oncall-overrides"),
    path("oncall/schedules/<str:name>/overrides/<str:override_id>", oncall_views.OverrideItemView.as_view(),
         name="oncall-override"),
    path("oncall/schedules/<str:name>/shifts", oncall_views.ShiftListView.as_view(), name="oncall-shifts"),
    path("oncall/schedules/<str:name>/on-call", oncall_views.OnCallView.as_view(), name="oncall-on-call"),
    path("oncall/schedules/<str:name>/feed.ics", oncall_views.FeedView.as_view(), name="oncall-feed"),
    path("oncall/schedules/<str:name>/import", oncall_views.ImportView.as_view(), name="oncall-import"),
    path("oncall/schedules/<str:name>/rotate-feed-token", oncall_views.FeedTokenView.as_view(),
         name="oncall-rotate-feed-token"),
    path("oncall/who", oncall_views.WhoView.as_view(), name="oncall-who"),
    path("oncall/me/contact-methods", oncall_views.MyContactMethodsView.as_view(), name="oncall-my-contact-methods"),
    path("oncall/me/contact-methods/<str:method_id>", oncall_views.MyContactMethodView.as_view(),
         name="oncall-my-contact-method"),
    path("oncall/me/contact-methods/<str:method_id>/verify", oncall_views.MyContactMethodVerifyView.as_view(),
         name="oncall-my-contact-method-verify"),
    path("oncall/me/pages", oncall_views.MyPagesView.as_view(), name="oncall-my-pages"),
    path("oncall/users/<str:username>/contact-methods", oncall_views.UserContactMethodsView.as_view(),
         name="oncall-user-contact-methods"),
    path("oncall/users/<str:username>/contact-methods/<str:method_id>", oncall_views.UserContactMethodView.as_view(),
         name="oncall-user-contact-method"),
    path("oncall/users/<str:username>/contact-methods/<str:method_id>/verify",
         oncall_views.UserContactMethodVerifyView.as_view(), name="oncall-user-contact-method-verify"),
]
