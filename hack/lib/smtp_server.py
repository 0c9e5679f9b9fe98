#!/usr/bin/python3
"""The local stack's SMTP server (hack/lib/smtp.sh starts it): aiosmtpd on loopback.

    smtp_server.py serve   listen on $BERTH_SMTP_HOST:$BERTH_SMTP_PORT until SIGTERM/SIGINT
    smtp_server.py check   exit 0 when the server answers EHLO, STARTTLS verified against
                           $BERTH_SMTP_CA for $BERTH_SMTP_HOST, and NOOP over TLS

What it accepts:
  - STARTTLS with $BERTH_SMTP_CERT/$BERTH_SMTP_KEY (a certificate for localhost and 127.0.0.1
    from the stack's SMTP CA); TLS is offered, not required.
  - AUTH PLAIN and LOGIN, advertised and accepted only after STARTTLS (538 before it), for
    $BERTH_SMTP_USERNAME/$BERTH_SMTP_PASSWORD only (535 otherwise).
  - Mail with or without AUTH, with or without TLS, for any sender and recipient.

Each message is written, as received (CRLF lines), to a new file in the Maildir
$BERTH_SMTP_MAILDIR (tmp/ then renamed into new/, so a reader never sees half a message),
after trace headers a test can check:
    Return-Path: <envelope sender>
    X-Berth-Rcpt-To: <recipient>, <recipient>...
    X-Berth-Smtp-Tls: yes | no          (STARTTLS done before the message)
    X-Berth-Smtp-Auth: <user> | none    (the login the session authenticated as)
    Received: from <helo> ([peer]) by localhost with ESMTP[S][A]; <date>   (RFC 3848)
The 250 reply to DATA names the file: "250 2.0.0 OK: queued as <name>".

Runs on Debian's python3-aiosmtpd under /usr/bin/python3 (only the standard library besides).
"""

import asyncio
import email.utils
import hmac
import itertools
import logging
import os
import signal
import smtplib
import socket
import ssl
import sys
import time

HOST = os.environ.get("BERTH_SMTP_HOST", "127.0.0.1")
PORT = int(os.environ.get("BERTH_SMTP_PORT", "2525"))
SERVER_NAME = "localhost"

log = logging.getLogger("berth-smtp")


class MaildirHandler:
    def __init__(self, maildir):
        self.maildir = maildir
        self.counter = itertools.count(1)

    def _new_name(self):
        now = time.time()
        return "%d.M%06dP%dQ%d.%s" % (
            int(now), int(now % 1 * 1e6), os.getpid(), next(self.counter), socket.gethostname()
        )

    async def handle_DATA(self, server, session, envelope):
        tls = session.ssl is not None
        login = None
        if session.authenticated and session.auth_data is not None:
            login = session.auth_data
        protocol = "ESMTP" if session.extended_smtp else "SMTP"
        if tls:
            protocol += "S"
        if login:
            protocol += "A"
        peer = session.peer[0] if session.peer else "unknown"
        trace = [
            "Return-Path: <%s>" % (envelope.mail_from or ""),
            "X-Berth-Rcpt-To: %s" % ", ".join("<%s>" % r for r in envelope.rcpt_tos),
            "X-Berth-Smtp-Tls: %s" % ("yes" if tls else "no"),
            "X-Berth-Smtp-Auth: %s" % (login or "none"),
            "Received: from %s ([%s]) by %s with %s; %s"
            % (session.host_name or "unknown", peer, SERVER_NAME, protocol,
               email.utils.formatdate(localtime=True)),
        ]
        content = envelope.original_content
        if isinstance(content, str):  # decode_data=False keeps bytes; be safe regardless
            content = content.encode("utf-8", "surrogateescape")
        data = ("\r\n".join(trace) + "\r\n").encode("utf-8", "surrogateescape") + content
        for sub in ("tmp", "new", "cur"):  # tests may empty or remove the Maildir
            os.makedirs(os.path.join(self.maildir, sub), exist_ok=True)
        name = self._new_name()
        tmp = os.path.join(self.maildir, "tmp", name)
        with open(tmp, "wb") as f:
            f.write(data)
        os.rename(tmp, os.path.join(self.maildir, "new", name))
        log.info("delivered %s from <%s> to %s (tls=%s, auth=%s)", name, envelope.mail_from,
                 envelope.rcpt_tos, tls, login or "none")
        return "250 2.0.0 OK: queued as %s" % name


def make_authenticator(username, password):
    from aiosmtpd.smtp import AuthResult, LoginPassword

    user = username.encode()
    secret = password.encode()

    def authenticator(server, session, envelope, mechanism, auth_data):
        if mechanism not in ("LOGIN", "PLAIN") or not isinstance(auth_data, LoginPassword):
            return AuthResult(success=False, handled=False)
        ok = hmac.compare_digest(auth_data.login, user) & hmac.compare_digest(
            auth_data.password, secret
        )
        log.info("AUTH %s as %r: %s", mechanism, auth_data.login, "accepted" if ok else "refused")
        if not ok:
            return AuthResult(success=False, handled=False)
        return AuthResult(success=True, auth_data=username)

    return authenticator


def serve():
    from aiosmtpd.smtp import SMTP

    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(levelname)s %(message)s")
    # aiosmtpd logs every command at INFO (health checks included): keep its warnings only.
    logging.getLogger("mail.log").setLevel(logging.WARNING)
    tls = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    tls.load_cert_chain(os.environ["BERTH_SMTP_CERT"], os.environ["BERTH_SMTP_KEY"])
    handler = MaildirHandler(os.environ["BERTH_SMTP_MAILDIR"])
    authenticator = make_authenticator(
        os.environ["BERTH_SMTP_USERNAME"], os.environ["BERTH_SMTP_PASSWORD"]
    )
    loop = asyncio.new_event_loop()
    asyncio.set_event_loop(loop)

    def factory():
        return SMTP(
            handler,
            hostname=SERVER_NAME,
            tls_context=tls,
            require_starttls=False,
            auth_required=False,
            auth_require_tls=True,
            authenticator=authenticator,
            enable_SMTPUTF8=True,
            timeout=60,
            loop=loop,
        )

    server = loop.run_until_complete(
        loop.create_server(factory, host=HOST, port=PORT, reuse_address=True)
    )
    stop = loop.create_future()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, lambda: stop.done() or stop.set_result(None))
    log.info("listening on %s:%d, Maildir %s", HOST, PORT, handler.maildir)
    loop.run_until_complete(stop)
    log.info("stopping")
    server.close()
    loop.run_until_complete(server.wait_closed())
    loop.close()


def check():
    context = ssl.create_default_context(cafile=os.environ["BERTH_SMTP_CA"])
    with smtplib.SMTP(HOST, PORT, timeout=3) as client:
        client.ehlo()
        if not client.has_extn("starttls"):
            return 1
        client.starttls(context=context)
        client.ehlo()
        code, _ = client.noop()
        return 0 if code == 250 else 1


def main():
    command = sys.argv[1] if len(sys.argv) > 1 else ""
    if command == "serve":
        serve()
        return 0
    if command == "check":
        try:
            return check()
        except (OSError, smtplib.SMTPException):
            return 1
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main())
