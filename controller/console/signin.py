"""Signing in and out: the sign-in page and form (CSRF token, throttle, device cookies),
the session's cookies, and the checks of every POST."""

from __future__ import annotations

import html
import logging
import math
from typing import Final

from aiohttp import web

from controller.console.common import (
    CSRF_HEADER,
    DEVICE_COOKIE_MAX_AGE_S,
    MAX_NAME_LENGTH,
    SESSION_COOKIE,
    SIGNIN_COOKIE,
    STATIC_DIR,
    error,
    origin_ok,
    read_body,
)
from controller.console.sessions import (
    Session,
    device_cookie_name,
    new_token,
    tokens_match,
)
from controller.mqtt.connection import topic_level_ok

logger = logging.getLogger(__name__)


SIGNIN_PAGE: Final = """<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>livetable console: sign in</title>
<link rel="stylesheet" href="/static/console.css">
</head>
<body class="signin">
<main>
<h1>livetable console</h1>
<form method="post" action="/signin" data-testid="signin-form">
<input type="hidden" name="csrf" value="{{csrf}}">
<label>Account <input name="username" autocomplete="username" required
 value="{{username}}" data-testid="signin-username"></label>
<label>Password <input name="password" type="password" autocomplete="current-password"
 required data-testid="signin-password"></label>
<button type="submit" data-testid="signin-submit">Sign in</button>
<p class="message" role="alert" data-testid="signin-message">{{message}}</p>
</form>
</main>
</body>
</html>
"""


def render(template: str, **values: str) -> str:
    for name, value in values.items():
        template = template.replace("{{" + name + "}}", html.escape(value, quote=True))
    return template


class SignInRoutes:
    """The sign-in routes, part of :class:`~controller.console.server.Console`."""

    def _cookie(
        self, response: web.StreamResponse, name: str, value: str, max_age: int | None = None
    ) -> None:
        response.set_cookie(
            name,
            value,
            path="/",
            httponly=True,
            samesite="Strict",
            secure=self.config.tls,
            max_age=max_age,
        )

    def _drop_cookie(self, response: web.StreamResponse, name: str) -> None:
        """Expire cookie ``name`` with the same flags it was set with (a browser may ignore
        a plain deletion of a Secure cookie, and no cookie of ours goes out without them)."""
        response.del_cookie(
            name, path="/", httponly=True, samesite="Strict", secure=self.config.tls
        )

    def _signin_response(
        self,
        token: str,
        *,
        message: str = "",
        username: str = "",
        status: int = 200,
        headers: dict[str, str] | None = None,
        code: str = "",
        value: str = "",
    ) -> web.Response:
        """The sign-in page saying ``message``; ``code`` (and ``value``, the figure or name
        it holds) is that message's key in the pages' catalogues, for the page to say it in
        the studio's language."""
        custom = STATIC_DIR / "signin.html"
        template = custom.read_text(encoding="utf-8") if custom.is_file() else SIGNIN_PAGE
        response = web.Response(
            text=render(
                template,
                csrf=token,
                message=message,
                username=username,
                code=code,
                value=value,
                language=self.config.language or "",
            ),
            content_type="text/html",
            status=status,
            headers=headers,
        )
        self._cookie(response, SIGNIN_COOKIE, token)
        return response

    async def signin_page(self, request: web.Request) -> web.StreamResponse:
        session = self.session_of(request)
        if session is not None and not session.wall:
            raise web.HTTPSeeOther("/")
        token = request.cookies.get(SIGNIN_COOKIE) or ""
        if len(token) < 32 or len(token) > 64:
            token = new_token()
        # The page of a session that ended sends its person here saying so.
        message = (
            f"The session ended ({self.config.idle_timeout_s:g} s without a click, or the "
            "console restarted): sign in again."
            if "ended" in request.query
            else ""
        )
        return self._signin_response(
            token,
            message=message,
            code="ended" if message else "",
            value=f"{self.config.idle_timeout_s:g}",
        )

    async def signin(self, request: web.Request) -> web.StreamResponse:
        if not origin_ok(request):
            return web.Response(text="cross-site sign-in refused", status=403)
        form = await read_body(request.post())
        token = request.cookies.get(SIGNIN_COOKIE)
        given = form.get("csrf")
        if not isinstance(given, str) or not tokens_match(token, given):
            return self._signin_response(
                new_token(),
                message="The sign-in form expired: please sign in again.",
                status=403,
                code="expired",
            )
        assert token is not None
        username = form.get("username")
        password = form.get("password")
        username = username.strip() if isinstance(username, str) else ""
        password = password if isinstance(password, str) else ""
        shown = username[:MAX_NAME_LENGTH]
        if self.config.wall is not None and username == self.config.wall.account:
            # The broker takes one connection per account: a person's would knock the
            # wall's off.
            return self._signin_response(
                token,
                message=f"{shown} is the console's own account: sign in with yours.",
                username=shown,
                status=403,
                code="own_account",
                value=shown,
            )
        if not (
            username and len(username) <= MAX_NAME_LENGTH and topic_level_ok(username) and password
        ):
            return self._signin_response(
                token,
                message="Wrong account name or password.",
                username=shown,
                status=401,
                code="wrong",
            )
        # A browser that signed in as this name before is throttled by its own failures:
        # a guesser elsewhere who keeps the name's delay at its cap never locks it out.
        cookie_name = device_cookie_name(username)
        device = self.devices.device(username, request.cookies.get(cookie_name))
        throttle, throttled = (
            (self.device_throttle, device) if device is not None else (self.throttle, username)
        )
        wait = throttle.retry_after(throttled)
        if wait > 0 or username in self._signing_in:
            seconds = max(1, math.ceil(wait))
            return self._signin_response(
                token,
                message=f"Too many failed sign-ins for {username}: wait {seconds} s.",
                username=shown,
                status=429,
                code="throttled",
                value=str(seconds),
                headers={"Retry-After": str(seconds)},
            )
        previous = self.session_of(request)
        self._signing_in.add(username)
        try:
            outcome, session = await self.sign_in(username, password)
        finally:
            self._signing_in.discard(username)
        if outcome == "protocol":
            protocol = self.config.broker.protocol
            logger.error(
                'sign-in of %s: the broker refused MQTT %s: set [mqtt] protocol = "%s"',
                username,
                protocol,
                "3.1.1" if protocol == "5" else "5",
            )
            return self._signin_response(
                token,
                message=f"The broker refuses the console's MQTT {protocol}: the console's "
                "configuration must name the version the broker speaks.",
                username=shown,
                status=503,
                code="protocol",
                value=protocol,
            )
        if outcome == "unreachable":
            logger.warning("sign-in of %s: the broker cannot be reached", username)
            return self._signin_response(
                token,
                message="The broker cannot be reached: try again in a moment.",
                username=shown,
                status=503,
                code="unreachable",
            )
        if session is None:
            delay = throttle.failed(throttled)
            logger.warning(
                "sign-in of %s refused: wrong account name or password (%d in a row%s)",
                username,
                throttle.failures(throttled),
                " from a browser that signed in as it before" if device is not None else "",
            )
            return self._signin_response(
                token,
                message=f"Wrong account name or password. Wait {delay:g} s before trying again.",
                username=shown,
                status=401,
                code="wrong_wait",
                value=f"{delay:g}",
            )
        # Only this path's count starts again: a success from a trusted browser leaves a
        # guesser's delay for the name where it is.
        throttle.succeeded(throttled)
        if previous is not None and previous.id != session.id:
            # A sign-in over a live session (another account, or the same again) ends it:
            # the browser's old cookie must not stay a way in.
            if previous.wall:
                await self.end_wall_session(previous)
            else:
                await self.end_session(previous)
        logger.info("%s signed in (%s)", username, session.role)
        # A plain 303 (an aiohttp HTTPException returned, not raised, is deprecated).
        response = web.Response(status=303, headers={"Location": "/"}, text="303: See Other")
        self._cookie(response, SESSION_COOKIE, session.id)
        self._cookie(response, cookie_name, self.devices.issue(username), DEVICE_COOKIE_MAX_AGE_S)
        self._drop_cookie(response, SIGNIN_COOKIE)
        return response

    def _checked_post(self, request: web.Request) -> tuple[Session | None, web.Response | None]:
        """The session of a POST whose origin and CSRF header are right; else the refusal."""
        session = self.session_of(request)
        if session is None:
            return None, error(401, "unauthorized", "sign in first")
        if not origin_ok(request):
            return None, error(403, "forbidden", "a request from another site")
        if not tokens_match(session.csrf, request.headers.get(CSRF_HEADER)):
            return None, error(403, "forbidden", f"missing or wrong {CSRF_HEADER} header")
        return session, None

    async def signout(self, request: web.Request) -> web.StreamResponse:
        session, refusal = self._checked_post(request)
        if refusal is not None:
            return refusal
        assert session is not None
        if session.wall:
            await self.end_wall_session(session)
        else:
            await self.end_session(session)
        logger.info("%s signed out", session.account)
        response = web.json_response({"ok": True})
        self._drop_cookie(response, SESSION_COOKIE)
        return response
