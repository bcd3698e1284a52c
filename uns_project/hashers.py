"""The password hasher people's console passwords are stored with.

``OwaspArgon2PasswordHasher`` is Django's Argon2id hasher (argon2-cffi) with the first parameter
set of the OWASP Password Storage Cheat Sheet: 19 MiB of memory, 2 passes, 1 lane. It is memory
hard (each guess costs an attacker 19 MiB, which a GPU farm pays for dearly, unlike PBKDF2's
iterations), and on this project's 2-core machine it verifies in 40-80 ms under a load of 7,
where Django's default PBKDF2 (1,000,000 SHA-256 iterations) took 470-1080 ms and Django's own
Argon2 parameters (100 MiB, 2 passes, 8 lanes: lanes beyond the cores buy no speed) 360-490 ms.

Its memory cost is below Django's Argon2 default (19 MiB, not 100 MiB); that is the documented
trade for a console login under 300 ms on a busy machine. A deployment that wants more sets
``UNS_ARGON2_MEMORY_KIB`` / ``UNS_ARGON2_TIME_COST`` (settings); stored hashes carry their own
parameters, so every older hash (PBKDF2 included) still verifies and is re-hashed with the current
parameters at its owner's next successful login (Django's ``must_update``).
"""
from django.conf import settings
from django.contrib.auth.hashers import Argon2PasswordHasher


class OwaspArgon2PasswordHasher(Argon2PasswordHasher):
    """Argon2id, ``argon2$argon2id$v=19$m=19456,t=2,p=1$...`` by default (see the module)."""

    @property
    def time_cost(self) -> int:
        return getattr(settings, "UNS_ARGON2_TIME_COST", 2)

    @property
    def memory_cost(self) -> int:
        return getattr(settings, "UNS_ARGON2_MEMORY_KIB", 19 * 1024)

    parallelism = 1
