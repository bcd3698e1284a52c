"""``SecureCookiesOnHttps``: mark every cookie of a response ``Secure`` when its request came over
HTTPS (``request.is_secure()``, which honours ``SECURE_PROXY_SSL_HEADER`` behind a proxy), so the
console's session and CSRF cookies never travel in clear text after an HTTPS login, while plain
``make run`` on 127.0.0.1 (HTTP) still works. Sits before ``SessionMiddleware`` in ``MIDDLEWARE``
so it sees the cookies the session and CSRF middleware set on the way out."""


class SecureCookiesOnHttps:
    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        response = self.get_response(request)
        if request.is_secure():
            for morsel in response.cookies.values():
                morsel["secure"] = True
        return response
