"""The dashboard's web app (Flask, which Mephisto already brings): a login form, the overview (reloading itself
until the researcher switches that off), one page per participant with their work and the review actions, a confirmation step before
any action.

Access: every page but the login form needs a session, opened by the secret (the token printed at
start, or the password of ``DIALEVAL_DASHBOARD_PASSWORD``) given in the form or once in the URL
(``/?token=...``, then redirected away so it does not stay in the address bar). Without it every address
answers the login form and nothing else. Forms carry a per-session token (no cross-site posts); an action
is confirmed on a page of its own and carried out at most once per confirmation.
"""
from __future__ import annotations

import hmac
import secrets
import time

from flask import Flask, Response, abort, redirect, render_template, request, session, url_for
from jinja2 import FileSystemLoader

from parlai_dialeval.dashboard.markdown import bot_text
from parlai_dialeval.dashboard.source import ACTIONS
from parlai_dialeval.errors import DialevalError
from parlai_dialeval.report import TEMPLATES, bdi, bidi_shown

OPEN_ENDPOINTS = {"login"}
FORM = "application/x-www-form-urlencoded"
MAX_BODY = 16 * 1024  # bytes of a form (a rejection message of a few pages); the server refuses more unread
MAX_LOGIN_BODY = 1024  # bytes of the sign-in form (the token or password)
MAX_PENDING = 100  # confirmations asked for and not yet given


def create_app(source, secret: str, refresh: int = 5) -> Flask:
    """The app over ``source`` (a ``TaskSource``); ``secret`` opens a session; the overview reloads itself
    every ``refresh`` seconds."""
    from parlai_dialeval.providers.prolific.review import MAX_MESSAGE, MIN_REJECT_MESSAGE, REJECTION_CATEGORIES, masked

    app = Flask(__name__)
    app.jinja_options = {**app.jinja_options, "finalize": bidi_shown}  # as the reports: bidi controls shown
    app.jinja_loader = FileSystemLoader(str(TEMPLATES))
    app.secret_key = secrets.token_bytes(32)  # sessions end with the server
    app.config["MAX_CONTENT_LENGTH"] = MAX_BODY
    app.config.update(SESSION_COOKIE_HTTPONLY=True, SESSION_COOKIE_SAMESITE="Strict",
                      SESSION_COOKIE_NAME="dialeval_dashboard")
    app.jinja_env.filters.update(bdi=bdi, bot_text=bot_text, duration=duration, seconds=lambda v: "" if v is None else f"{v:.2f} s",
                                 number=lambda v: "" if v is None else f"{v:.3g}", money=money,
                                 clock=lambda t: time.strftime("%H:%M:%S", time.gmtime(t)), masked=masked)
    pending: dict[str, dict] = {}  # confirmation id -> the action it confirms (used once)

    def signed_in() -> bool:
        return session.get("signed_in") is True

    def sign_in() -> None:
        session.clear()
        session["signed_in"] = True
        session["csrf"] = secrets.token_urlsafe(24)

    def matches(given: str | None) -> bool:
        return bool(given) and hmac.compare_digest(given.encode(), secret.encode())

    @app.before_request
    def gate():
        # our forms only: Werkzeug 1.0.1's multipart parser (CVE-2023-25577, -46136, CVE-2024-49767) never runs
        if request.mimetype not in ("", FORM):
            abort(415)
        token = request.args.get("token")
        if token is not None and request.method == "GET":
            if matches(token):
                sign_in()
                return redirect("/" + request.path.lstrip("/"))  # never //host: a redirect to another site
            return login_form("That token is not the one this dashboard printed.")
        if request.endpoint in OPEN_ENDPOINTS:
            if (request.content_length or 0) > MAX_LOGIN_BODY:
                abort(413)
            return None
        if not signed_in():
            return login_form()
        if request.method == "POST" and not hmac.compare_digest(request.form.get("csrf", "").encode(),
                                                                 session.get("csrf", "").encode()):
            abort(403)
        return None

    def login_form(error: str = "", status: int = 401):
        return Response(render_template("dashboard_login.html", error=error), status)

    @app.after_request
    def headers(response):
        # no scripts at all; no framing (clickjacking of the pay buttons); the token never leaves in a Referer
        response.headers["Content-Security-Policy"] = ("default-src 'none'; img-src 'self'; style-src 'unsafe-inline'; "
                                                       "form-action 'self'; frame-ancestors 'none'; base-uri 'none'")
        response.headers["X-Frame-Options"] = "DENY"
        response.headers["Referrer-Policy"] = "no-referrer"
        response.headers["X-Content-Type-Options"] = "nosniff"
        response.headers["Cache-Control"] = "no-store"
        return response

    @app.route("/login", methods=["GET", "POST"])
    def login():
        if request.method == "POST":
            if matches(request.form.get("token")):
                sign_in()
                return redirect(url_for("overview"))
            return login_form("That is not the dashboard's token or password.")
        return redirect(url_for("overview")) if signed_in() else login_form(status=200)

    @app.route("/logout", methods=["POST"])
    def logout():
        session.clear()
        return redirect(url_for("login"))

    def page(template: str, **context):
        return render_template(template, task_name=source.task_name, csrf=session.get("csrf"), **context)

    @app.route("/")
    def overview():
        # reloading is the researcher's to switch off and on (WCAG 2.2.1), by an HTTP Refresh header: a page
        # without scripts has no other way, and <meta http-equiv="refresh"> is an axe-core violation
        if request.args.get("refresh") in ("on", "off"):
            session["refresh"] = request.args["refresh"] == "on"
            return redirect(url_for("overview"))
        data, money, error = None, None, session.pop("error", "")
        try:
            data = source.snapshot()
            money = source.money()
        except DialevalError as failure:  # Prolific's errors included: the page still shows what it has
            error = str(failure)
        reloading = session.get("refresh", True)
        response = Response(page("dashboard.html", data=data, money=money, error=error, refresh=refresh,
                                 reloading=reloading, message=session.pop("message", None)))
        if reloading:
            response.headers["Refresh"] = str(refresh)
        return response

    @app.route("/participant/<path:worker>")
    def participant(worker: str):
        data = source.snapshot()
        row = next((q for q in data["quality"] if q["worker"] == worker), None)
        work, ratings = source.work(worker)
        money, error = None, session.pop("error", None)
        try:
            money = source.money(fresh=True) if data["on_prolific"] else None
        except DialevalError as failure:  # Prolific unreachable: the work is still worth reading
            error = str(failure)
        submissions = [s for s in (money or {}).get("submissions", []) if s["participant"] == worker]
        if row is None and not work and not ratings and not submissions:  # a rater's page, a participant's messages
            abort(404)
        decisions = [d for d in (money or {}).get("decisions", []) if d["participant_id"] == worker]
        return page("dashboard_participant.html", worker=worker, row=row, work=work, ratings=ratings, on_prolific=data["on_prolific"],
                    submissions=submissions, decisions=decisions, categories=REJECTION_CATEGORIES,
                    min_message=MIN_REJECT_MESSAGE, max_message=MAX_MESSAGE, message=session.pop("message", None),
                    error=error)

    @app.route("/participant/<path:worker>/<kind>", methods=["POST"])
    def ask(worker: str, kind: str):
        if kind not in ACTIONS:
            abort(404)
        fields = {k: request.form.get(k, "") for k in ("message", "category", "amount", "reason")}
        try:
            checked = source.check_action(kind, worker, fields)
        except DialevalError as failure:
            session["error"] = str(failure)
            return redirect(url_for("participant", worker=worker))
        confirmation = secrets.token_urlsafe(16)
        while len(pending) >= MAX_PENDING:  # forms asked for and never confirmed: the oldest lapse
            pending.pop(next(iter(pending)))
        pending[confirmation] = {"kind": kind, "worker": worker, "fields": checked}
        return page("dashboard_confirm.html", worker=worker, kind=kind, fields=checked, confirmation=confirmation)

    @app.route("/confirm/<confirmation>", methods=["POST"])
    def confirm(confirmation: str):
        action = pending.pop(confirmation, None)  # a second click on Confirm finds nothing to do
        if action is None:
            session["error"] = "This confirmation was used already or has expired; nothing was done again."
            return redirect(url_for("overview"))
        try:
            session["message"] = source.act(action["kind"], action["worker"], action["fields"])
        except DialevalError as failure:  # Prolific's errors too: the ledger keeps the decision's state
            session["error"] = str(failure)
        return redirect(url_for("participant", worker=action["worker"]))

    @app.route("/leaderboard")
    def leaderboard():
        return page("dashboard_leaderboard.html", board=source.leaderboard(), read_at=time.time(), refresh=refresh)

    @app.route("/integrity")
    def integrity_page():
        from parlai_dialeval.dashboard.integrity_view import integrity

        return page("dashboard_integrity.html", data=integrity(source.records(), source.quality_table()))

    @app.route("/plot/certify.png")
    def certify_png():
        from parlai_dialeval.dashboard.adaptive_view import certify_plot

        data = source.snapshot()
        if not data["adaptive"]:
            abort(404)
        png = certify_plot(source.records(), data["adaptive"]["alpha"])
        if png is None:
            abort(404)
        return Response(png, mimetype="image/png")

    return app


def duration(seconds: float | None) -> str:
    if seconds is None:
        return "–"
    seconds = int(round(seconds))
    hours, rest = divmod(seconds, 3600)
    return f"{hours} h {rest // 60:02d} min" if hours else f"{rest // 60} min {rest % 60:02d} s"


def money(minor: int | None, currency: str = "") -> str:
    from parlai_dialeval.providers.prolific.api import to_major

    return f"{to_major(minor or 0)} {currency or ''}".strip()
