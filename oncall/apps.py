from django.apps import AppConfig


class OncallConfig(AppConfig):
    """People, teams and on-call schedules (issue 22): ``oncall.models``, ``oncall.rotation``."""

    name = "oncall"
    verbose_name = "UNS on-call"
