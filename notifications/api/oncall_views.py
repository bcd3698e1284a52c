"""``/api/v1/oncall``: teams, schedules (layers, overrides, shifts, who is on call, the iCalendar
feed and import), people's contact methods, and "my pages", over the one on-call service
(``runtime.oncall``) and its read models (``notifications.oncall_selectors``).

Capabilities (``core.capabilities``): reading needs ``VIEW_CONSOLE`` (viewers, responders,
operators); every change needs ``OPERATE_DLQ`` (operators), except a person's own contact
methods (``/me/...``), which anyone with ``VIEW_CONSOLE`` manages. The feed (``feed.ics``) also
answers its schedule's ``token`` query parameter without a login, so a calendar app can
subscribe to it (the token is per schedule, rotated by ``.../rotate-feed-token``).
Times are epoch seconds. Errors are problem details: 400 ``invalid_oncall`` /
``invalid_request``, 404 ``schedule_not_found`` and the other ``*_not_found``, 409
``schedule_exists`` / ``team_exists`` / ``target_routed``.
"""
import hmac
import time

from django.http import HttpResponse
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework import status as http
from rest_framework.permissions import AllowAny
from rest_framework.response import Response

from core import codes
from core.capabilities import OPERATE_DLQ, VIEW_CONSOLE
from core.errors import InvalidRequest, NotFound
from core.schema import parse
from notifications import oncall_selectors as sel
from notifications import payloads
from notifications.access import has_capability
from notifications.pagination import parse_time
from notifications.apps import runtime
from notifications.runtime import oncall, schemas
from oncall import ical, rotation, targets
from oncall.models import Override, Schedule, Team

from . import openapi as doc
from .views import UNSView

NAME = OpenApiParameter("name", str, OpenApiParameter.PATH, description="The schedule's or team's name.")
USER = OpenApiParameter("username", str, OpenApiParameter.PATH, description="A user name.")
METHOD = OpenApiParameter("method_id", str, OpenApiParameter.PATH, description="The contact method's id.")
AT = OpenApiParameter("at", float, description="Epoch seconds (default: now).")
START = OpenApiParameter("start", float, description="Epoch seconds.")
END = OpenApiParameter("end", float, description="Epoch seconds.")
MAX_SPAN = 92 * 86400.0  # the longest shifts window one call lists
_BAD = "`invalid_oncall` (a bad name, zone, layer, span or user) or `invalid_request` (body shape)."
_AT = "`invalid_request`: `at` is not epoch seconds (1970..3000)."


def epoch_param(params, key: str, default: float | None = None) -> float:
    """Query parameter ``key`` as epoch seconds (or ISO-8601: ``pagination.parse_time``, the one
    time parser) within the schedules' range (``rotation.MIN_EPOCH`` .. ``MAX_EPOCH``, 1970..3000);
    ``default`` when absent (required when ``default`` is None). Raises ``InvalidRequest``."""
    value = None if params.get(key) == "" else parse_time(params, key)
    if value is None:
        if default is None:
            raise InvalidRequest(f"{key} is required", errors=[{"field": key, "message": "required (epoch seconds)"}])
        return default
    if not rotation.MIN_EPOCH <= value <= rotation.MAX_EPOCH:
        raise InvalidRequest(f"{key} must be epoch seconds (1970..3000)",
                             errors=[{"field": key, "message": "must be epoch seconds (1970..3000)"}])
    return value


def _actor(request) -> str:
    return request.user.get_username()


class TeamCollectionView(UNSView):
    """``GET /api/v1/oncall/teams``; ``POST`` creates one (201)."""

    known_params = frozenset()
    capabilities = {"GET": VIEW_CONSOLE, "POST": OPERATE_DLQ}

    @extend_schema(summary="Teams", operation_id="oncall_teams_list", responses={200: payloads.TeamList})
    def get(self, request):
        return Response({"items": [sel.team_view(t) for t in Team.objects.order_by("name")]})

    @extend_schema(summary="Create a team", request=schemas.TeamRequest,
                   responses={201: payloads.Team, **doc.problems(c400=_BAD, c409="`team_exists`.")})
    def post(self, request):
        body = parse(schemas.TeamRequest, request.data)
        row = oncall.create_team(body.name, description=body.description or "", members=body.members or [],
                                 actor=_actor(request))
        return Response(sel.team_view(row), status=http.HTTP_201_CREATED)


class TeamItemView(UNSView):
    """``GET/PATCH/DELETE /api/v1/oncall/teams/{name}``."""

    capabilities = {"GET": VIEW_CONSOLE, "PATCH": OPERATE_DLQ, "DELETE": OPERATE_DLQ}

    @extend_schema(summary="One team", parameters=[NAME], responses={200: payloads.Team, **doc.problems(
        c404="`team_not_found`.")})
    def get(self, request, name):
        row = Team.objects.filter(name=name).first()
        if row is None:
            raise NotFound(f"no team {name!r}", code=codes.TEAM_NOT_FOUND)
        return Response(sel.team_view(row))

    @extend_schema(summary="Change a team", parameters=[NAME], request=schemas.TeamRequest,
                   responses={200: payloads.Team, **doc.problems(c400=_BAD, c404="`team_not_found`.")})
    def patch(self, request, name):
        body = parse(schemas.TeamRequest, request.data)
        if body.name is not None and body.name != name:
            raise InvalidRequest("a team cannot be renamed", code=codes.INVALID_ONCALL,
                                 errors=[{"field": "name", "message": "cannot change"}])
        row = oncall.update_team(name, description=body.description, members=body.members, actor=_actor(request))
        return Response(sel.team_view(row))

    @extend_schema(summary="Delete a team", parameters=[NAME], responses={204: None, **doc.problems(
        c404="`team_not_found`.", c409="`target_routed`: the ACTIVE policy set names `team:<name>`.")})
    def delete(self, request, name):
        oncall.delete_team(name, actor=_actor(request))
        return Response(status=http.HTTP_204_NO_CONTENT)


class ScheduleCollectionView(UNSView):
    """``GET /api/v1/oncall/schedules``: every schedule with who is on call now and next;
    ``POST`` creates one, its layers with it (201)."""

    known_params = frozenset({"at"})
    capabilities = {"GET": VIEW_CONSOLE, "POST": OPERATE_DLQ}

    @extend_schema(summary="Schedules with who is on call now and next", operation_id="oncall_schedules_list",
                   parameters=[AT], responses={200: payloads.OncallScheduleList, **doc.problems(c400=_AT)})
    def get(self, request):
        at = epoch_param(request.query_params, "at", time.time())
        return Response({"items": sel.schedules(at)})

    @extend_schema(summary="Create a schedule", request=schemas.ScheduleCreateRequest,
                   responses={201: payloads.OncallSchedule, **doc.problems(
                       c400=_BAD, c404="`team_not_found`.", c409="`schedule_exists`.")})
    def post(self, request):
        body = parse(schemas.ScheduleCreateRequest, request.data)
        row = oncall.create_schedule(body.name, time_zone=body.time_zone, description=body.description,
                                     team=body.team, layers=[layer.model_dump() for layer in body.layers],
                                     actor=_actor(request))
        return Response(sel.schedule_view(row, time.time(), show_feed=True), status=http.HTTP_201_CREATED,
                        headers={"Location": f"/api/v1/oncall/schedules/{row.name}"})


class ScheduleItemView(UNSView):
    """``GET/PATCH/DELETE /api/v1/oncall/schedules/{name}``."""

    known_params = frozenset({"at"})
    capabilities = {"GET": VIEW_CONSOLE, "PATCH": OPERATE_DLQ, "DELETE": OPERATE_DLQ}

    @extend_schema(summary="One schedule: layers, overrides, on call now and next", parameters=[NAME, AT],
                   responses={200: payloads.OncallSchedule, **doc.problems(c400=_AT, c404="`schedule_not_found`.")})
    def get(self, request, name):
        at = epoch_param(request.query_params, "at", time.time())
        return Response(sel.schedule_view(oncall.schedule(name), at,
                                          show_feed=has_capability(request.user, OPERATE_DLQ)))

    @extend_schema(summary="Change a schedule", parameters=[NAME], request=schemas.ScheduleUpdateRequest,
                   responses={200: payloads.OncallSchedule, **doc.problems(c400=_BAD, c404="`schedule_not_found`.")})
    def patch(self, request, name):
        body = parse(schemas.ScheduleUpdateRequest, request.data)
        changes = body.model_dump(exclude_unset=True)
        if "team" in changes and changes["team"] == "":
            changes["team"] = None
        row = oncall.update_schedule(name, changes, actor=_actor(request))
        return Response(sel.schedule_view(row, time.time(), show_feed=True))

    @extend_schema(summary="Delete a schedule", parameters=[NAME], responses={204: None, **doc.problems(
        c404="`schedule_not_found`.", c409="`target_routed`: the ACTIVE policy set names `schedule:<name>`.")})
    def delete(self, request, name):
        oncall.delete_schedule(name, actor=_actor(request))
        return Response(status=http.HTTP_204_NO_CONTENT)


class LayerCollectionView(UNSView):
    """``POST /api/v1/oncall/schedules/{name}/layers``: a new top layer (201)."""

    capabilities = {"POST": OPERATE_DLQ}

    @extend_schema(summary="Add a rotation layer (highest precedence)", parameters=[NAME],
                   request=schemas.LayerRequest, responses={201: payloads.OncallLayer, **doc.problems(
                       c400=_BAD, c404="`schedule_not_found`.")})
    def post(self, request, name):
        body = parse(schemas.LayerRequest, request.data)
        row = oncall.add_layer(name, body.model_dump(), actor=_actor(request))
        return Response(sel.layer_view(row), status=http.HTTP_201_CREATED)


class LayerItemView(UNSView):
    """``PUT/DELETE /api/v1/oncall/schedules/{name}/layers/{position}``."""

    capabilities = {"PUT": OPERATE_DLQ, "DELETE": OPERATE_DLQ}

    @extend_schema(summary="Replace a rotation layer", request=schemas.LayerRequest,
                   parameters=[NAME, OpenApiParameter("position", int, OpenApiParameter.PATH)],
                   responses={200: payloads.OncallLayer, **doc.problems(
                       c400=_BAD, c404="`schedule_not_found` or `layer_not_found`.")})
    def put(self, request, name, position):
        body = parse(schemas.LayerRequest, request.data)
        return Response(sel.layer_view(oncall.update_layer(name, position, body.model_dump(), actor=_actor(request))))

    @extend_schema(summary="Remove a rotation layer",
                   parameters=[NAME, OpenApiParameter("position", int, OpenApiParameter.PATH)],
                   responses={204: None, **doc.problems(c404="`schedule_not_found` or `layer_not_found`.")})
    def delete(self, request, name, position):
        oncall.delete_layer(name, position, actor=_actor(request))
        return Response(status=http.HTTP_204_NO_CONTENT)


class OverrideCollectionView(UNSView):
    """``GET /api/v1/oncall/schedules/{name}/overrides`` (those not ended at ``at``);
    ``POST`` adds one (201)."""

    known_params = frozenset({"at"})
    capabilities = {"GET": VIEW_CONSOLE, "POST": OPERATE_DLQ}

    @extend_schema(summary="Overrides not yet ended", parameters=[NAME, AT], operation_id="oncall_overrides_list",
                   responses={200: payloads.OverrideList, **doc.problems(c400=_AT, c404="`schedule_not_found`.")})
    def get(self, request, name):
        at = epoch_param(request.query_params, "at", time.time())
        row = oncall.schedule(name)
        rows = Override.objects.filter(schedule=row, end__gt=at).select_related("user").order_by("start", "id")
        return Response({"items": [sel.override_view(o) for o in rows]})

    @extend_schema(summary="Add an override: this person instead, from then to then", parameters=[NAME],
                   request=schemas.OverrideRequest,
                   responses={201: payloads.Override, **doc.problems(c400=_BAD, c404="`schedule_not_found`.")})
    def post(self, request, name):
        body = parse(schemas.OverrideRequest, request.data)
        row = oncall.add_override(name, body.user, body.start, body.end, actor=_actor(request))
        return Response(sel.override_view(row), status=http.HTTP_201_CREATED)


class OverrideItemView(UNSView):
    """``DELETE /api/v1/oncall/schedules/{name}/overrides/{override_id}``."""

    capabilities = {"DELETE": OPERATE_DLQ}

    @extend_schema(summary="Remove an override",
                   parameters=[NAME, OpenApiParameter("override_id", str, OpenApiParameter.PATH)],
                   responses={204: None, **doc.problems(c404="`schedule_not_found` or `override_not_found`.")})
    def delete(self, request, name, override_id):
        oncall.delete_override(name, override_id, actor=_actor(request))
        return Response(status=http.HTTP_204_NO_CONTENT)


class ShiftListView(UNSView):
    """``GET /api/v1/oncall/schedules/{name}/shifts?start=&end=``: the shifts between two
    instants (at most 92 days), ``oncall.rotation.shifts``."""

    known_params = frozenset({"start", "end"})
    capabilities = {"GET": VIEW_CONSOLE}

    @extend_schema(summary="Shifts between two instants (the calendar)", parameters=[NAME, START, END],
                   responses={200: payloads.ShiftList, **doc.problems(
                       c400="`invalid_request`: start/end missing, not epoch seconds, or more than 92 days apart.",
                       c404="`schedule_not_found`.")})
    def get(self, request, name):
        a, b = epoch_param(request.query_params, "start"), epoch_param(request.query_params, "end")
        if not a < b <= a + MAX_SPAN:
            raise InvalidRequest("end must be after start and at most 92 days later",
                                 errors=[{"field": "end", "message": "must be after start, at most 92 days"}])
        spec = targets.schedule_spec(oncall.schedule(name))
        return Response({"schedule": name, "start": a, "end": b,
                         "items": [sel.shift_view(spec, s) for s in rotation.shifts(spec, a, b)]})


class OnCallView(UNSView):
    """``GET /api/v1/oncall/schedules/{name}/on-call?at=``: who is on call at ``at`` (default
    now), the shift in progress and the next one."""

    known_params = frozenset({"at"})
    capabilities = {"GET": VIEW_CONSOLE}

    @extend_schema(summary="Who is on call now (or at T) and next", parameters=[NAME, AT],
                   responses={200: payloads.OnCallAt, **doc.problems(c400=_AT, c404="`schedule_not_found`.")})
    def get(self, request, name):
        at = epoch_param(request.query_params, "at", time.time())
        spec = targets.schedule_spec(oncall.schedule(name))
        on_call, current, nxt = sel.current_and_next(spec, at)
        return Response({"schedule": name, "at": at, "at_iso": sel.iso(at), "on_call": on_call,
                         "current_shift": current, "next_shift": nxt})


class WhoView(UNSView):
    """``GET /api/v1/oncall/who?target=schedule:<name>|team:<name>|user:<name>&at=``: whom the
    target pages at ``at`` and through which verified contact methods (``oncall.targets.resolve``,
    the dispatch's own resolution)."""

    known_params = frozenset({"at", "target"})
    capabilities = {"GET": VIEW_CONSOLE}

    @extend_schema(summary="Whom a people target pages (now or at T)",
                   parameters=[OpenApiParameter("target", str, required=True,
                                                description="`schedule:<name>`, `team:<name>`, `user:<name>` or a schedule's name."), AT],
                   responses={200: payloads.TargetResolution, **doc.problems(
                       c400="`invalid_request`: not a people target, or " + _AT)})
    def get(self, request):
        at = epoch_param(request.query_params, "at", time.time())
        return Response(sel.who(request.query_params.get("target", ""), at))


class FeedView(UNSView):
    """``GET /api/v1/oncall/schedules/{name}/feed.ics?token=``: the schedule's shifts from 7 days
    ago to 60 days ahead as ``text/calendar``. Authenticated by the schedule's feed ``token``
    (calendar apps cannot send a header), or by the usual API token/session with ``VIEW_CONSOLE``."""

    capabilities = {"GET": VIEW_CONSOLE}
    PAST, AHEAD = 7 * 86400.0, 60 * 86400.0

    def get_permissions(self):
        if self.request.method == "GET" and self.request.query_params.get("token"):
            return [AllowAny()]
        return super().get_permissions()

    @extend_schema(summary="The schedule's iCalendar feed", parameters=[
        NAME, OpenApiParameter("token", str, description="The schedule's feed token (see `feed_url`).")],
        responses={(200, "text/calendar"): OpenApiResponse(OpenApiTypes.STR, description="RFC 5545 VCALENDAR"),
                   **doc.problems(c404="`schedule_not_found` (also for a wrong token).")})
    def get(self, request, name):
        token = request.query_params.get("token")
        row = Schedule.objects.filter(name=name).first() if "\x00" not in name else None
        if row is None or (token and not hmac.compare_digest(token.encode(), row.feed_token.encode())):
            raise NotFound(f"no schedule {name!r}", code=codes.SCHEDULE_NOT_FOUND)
        now = time.time()
        spec = targets.schedule_spec(row)
        body = ical.feed(row.name, rotation.shifts(spec, now - self.PAST, now + self.AHEAD), stamp=now)
        return HttpResponse(body, content_type="text/calendar; charset=utf-8")


class ImportView(UNSView):
    """``POST /api/v1/oncall/schedules/{name}/import``: an iCalendar file's events become
    overrides (SUMMARY: the user name); re-importing replaces, never duplicates."""

    capabilities = {"POST": OPERATE_DLQ}

    @extend_schema(summary="Import shifts from an iCalendar file as overrides", parameters=[NAME],
                   request=schemas.IcalImportRequest,
                   responses={201: payloads.OverrideList, **doc.problems(
                       c400=_BAD + " Also for a file that does not parse.", c404="`schedule_not_found`.")})
    def post(self, request, name):
        body = parse(schemas.IcalImportRequest, request.data)
        now = time.time()
        a = body.start if body.start is not None else now
        b = body.end if body.end is not None else now + 90 * 86400.0
        oncall.schedule(name)
        try:
            shifts = ical.parse_shifts(body.ical, a, b)
        except ical.IcalError as exc:
            raise InvalidRequest(str(exc), code=codes.INVALID_ONCALL,
                                 errors=[{"field": "ical", "message": str(exc)}]) from None
        rows = oncall.import_overrides(name, shifts, actor=_actor(request))
        return Response({"items": [sel.override_view(o) for o in rows]}, status=http.HTTP_201_CREATED)


class FeedTokenView(UNSView):
    """``POST /api/v1/oncall/schedules/{name}/rotate-feed-token``: the old feed URL stops working."""

    capabilities = {"POST": OPERATE_DLQ}

    @extend_schema(summary="Rotate the schedule's feed token", parameters=[NAME], request=None,
                   responses={200: payloads.OncallSchedule, **doc.problems(c404="`schedule_not_found`.")})
    def post(self, request, name):
        row = oncall.rotate_feed_token(name, actor=_actor(request))
        return Response(sel.schedule_view(row, time.time(), show_feed=True))


# contact methods ------------------------------------------------------------------------------

class _ContactMethods(UNSView):
    """Shared by ``/users/{username}/contact-methods`` (operators) and ``/me/contact-methods``."""

    def _who(self, request, username=None) -> str:
        return username if username is not None else request.user.get_username()

    def _list(self, request, username=None):
        return Response({"items": sel.contact_methods(oncall.user(self._who(request, username)))})

    def _create(self, request, username=None):
        body = parse(schemas.ContactMethodCreateRequest, request.data)
        row = oncall.create_contact_method(self._who(request, username), body.kind, body.config, body.secret,
                                           label=body.label, position=body.position, actor=_actor(request))
        return Response(sel.contact_method_view(row), status=http.HTTP_201_CREATED)

    def _update(self, request, method_id, username=None):
        body = parse(schemas.ContactMethodUpdateRequest, request.data)
        row = oncall.update_contact_method(self._who(request, username), method_id,
                                           body.model_dump(exclude_unset=True), actor=_actor(request))
        return Response(sel.contact_method_view(row))

    def _delete(self, request, method_id, username=None):
        oncall.delete_contact_method(self._who(request, username), method_id, actor=_actor(request))
        return Response(status=http.HTTP_204_NO_CONTENT)

    def _verify(self, request, method_id, username=None):
        row, result = oncall.verify_contact_method(self._who(request, username), method_id,
                                                   adapters=runtime().adapters, actor=_actor(request))
        return Response({"success": result.success, "answer": result.answer, "error": result.error,
                         "contact_method": sel.contact_method_view(row)})


_CM_PROBLEMS = doc.problems(c400=_BAD, c404="`user_not_found` or `contact_method_not_found`.")
_VERIFY_PROBLEMS = doc.problems(c400=_BAD, c404="`user_not_found` or `contact_method_not_found`.",
                                c409="`no_adapter`: this process cannot send the method's kind.")


class MyContactMethodsView(_ContactMethods):
    """``GET/POST /api/v1/oncall/me/contact-methods``: the caller's own."""

    capabilities = {"GET": VIEW_CONSOLE, "POST": VIEW_CONSOLE}

    @extend_schema(summary="My contact methods", operation_id="oncall_my_contact_methods_list",
                   responses={200: payloads.ContactMethodList})
    def get(self, request):
        return self._list(request)

    @extend_schema(summary="Add a contact method of mine (unverified until verified)",
                   operation_id="oncall_my_contact_methods_create",
                   request=schemas.ContactMethodCreateRequest, responses={201: payloads.ContactMethod, **_CM_PROBLEMS})
    def post(self, request):
        return self._create(request)


class MyContactMethodView(_ContactMethods):
    """``PATCH/DELETE /api/v1/oncall/me/contact-methods/{method_id}``."""

    capabilities = {"PATCH": VIEW_CONSOLE, "DELETE": VIEW_CONSOLE}

    @extend_schema(summary="Change a contact method of mine", parameters=[METHOD], operation_id="oncall_my_cm_update",
                   request=schemas.ContactMethodUpdateRequest, responses={200: payloads.ContactMethod, **_CM_PROBLEMS})
    def patch(self, request, method_id):
        return self._update(request, method_id)

    @extend_schema(summary="Remove a contact method of mine", parameters=[METHOD], operation_id="oncall_my_cm_delete",
                   responses={204: None, **_CM_PROBLEMS})
    def delete(self, request, method_id):
        return self._delete(request, method_id)


class MyContactMethodVerifyView(_ContactMethods):
    """``POST /api/v1/oncall/me/contact-methods/{method_id}/verify``: one test send."""

    capabilities = {"POST": VIEW_CONSOLE}

    @extend_schema(summary="Verify a contact method of mine with a test send", parameters=[METHOD],
                   operation_id="oncall_my_cm_verify", request=None,
                   responses={200: payloads.ContactMethodVerification, **_VERIFY_PROBLEMS})
    def post(self, request, method_id):
        return self._verify(request, method_id)


class UserContactMethodsView(_ContactMethods):
    """``GET/POST /api/v1/oncall/users/{username}/contact-methods`` (operators)."""

    capabilities = {"GET": OPERATE_DLQ, "POST": OPERATE_DLQ}

    @extend_schema(summary="A person's contact methods", parameters=[USER],
                   responses={200: payloads.ContactMethodList, **doc.problems(c404="`user_not_found`.")})
    def get(self, request, username):
        return self._list(request, username)

    @extend_schema(summary="Add a contact method for a person", parameters=[USER],
                   request=schemas.ContactMethodCreateRequest, responses={201: payloads.ContactMethod, **_CM_PROBLEMS})
    def post(self, request, username):
        return self._create(request, username)


class UserContactMethodView(_ContactMethods):
    """``PATCH/DELETE /api/v1/oncall/users/{username}/contact-methods/{method_id}`` (operators)."""

    capabilities = {"PATCH": OPERATE_DLQ, "DELETE": OPERATE_DLQ}

    @extend_schema(summary="Change a person's contact method", parameters=[USER, METHOD],
                   request=schemas.ContactMethodUpdateRequest, responses={200: payloads.ContactMethod, **_CM_PROBLEMS})
    def patch(self, request, username, method_id):
        return self._update(request, method_id, username)

    @extend_schema(summary="Remove a person's contact method", parameters=[USER, METHOD],
                   responses={204: None, **_CM_PROBLEMS})
    def delete(self, request, username, method_id):
        return self._delete(request, method_id, username)


class UserContactMethodVerifyView(_ContactMethods):
    """``POST /api/v1/oncall/users/{username}/contact-methods/{method_id}/verify`` (operators)."""

    capabilities = {"POST": OPERATE_DLQ}

    @extend_schema(summary="Verify a person's contact method with a test send", parameters=[USER, METHOD],
                   request=None, responses={200: payloads.ContactMethodVerification, **_VERIFY_PROBLEMS})
    def post(self, request, username, method_id):
        return self._verify(request, method_id, username)


class MyPagesView(UNSView):
    """``GET /api/v1/oncall/me/pages``: the caller's latest 100 pages, newest first, read from
    the timeline's ``ONCALL_RESOLVED`` events."""

    known_params = frozenset()
    capabilities = {"GET": VIEW_CONSOLE}

    @extend_schema(summary="My pages", responses={200: payloads.PersonPageList})
    def get(self, request):
        return Response({"items": sel.pages_of(request.user.get_username())})
