"""People's passwords are stored with Argon2id (OWASP parameters, uns_project.hashers); older
hashes still verify and are re-hashed at the next login."""
import pytest
from django.contrib.auth import get_user_model
from django.contrib.auth.hashers import make_password
from django.contrib.auth.models import Group
from django.core.cache import cache
from rest_framework.test import APIClient

pytestmark = pytest.mark.django_db
PASSWORD = "correct horse battery staple"


def test_new_passwords_are_argon2id_with_the_owasp_parameters():
    encoded = make_password(PASSWORD)
    assert encoded.startswith("argon2$argon2id$v=19$m=19456,t=2,p=1$")


def test_a_pbkdf2_hash_still_logs_in_and_is_rehashed_with_argon2id():
    cache.clear()
    user = get_user_model().objects.create_user("olga")
    user.password = make_password(PASSWORD, hasher="pbkdf2_sha256")
    user.save()
    user.groups.add(*Group.objects.filter(name__in=["operator"]))
    response = APIClient().post("/api/v1/auth/login", {"username": "olga", "password": PASSWORD}, format="json")
    assert response.status_code == 200
    user.refresh_from_db()
    assert user.password.startswith("argon2$argon2id$v=19$m=19456,t=2,p=1$")
