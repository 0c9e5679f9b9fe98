# shellcheck shell=bash
# An SMTP server for the stack, so the email notification tests (issue 43) deliver through a
# real one: hack/lib/smtp_server.py on Debian's python3-aiosmtpd, on 127.0.0.1:$BERTH_SMTP_PORT.
# Source after common.sh, from hack/stack.sh (it uses its LOGS and port_in_use). Every function
# is a no-op when its work is done.
#
#   up_smtp     install the package, make the CA and serving certificate once, start the server
#   wait_smtp   wait until it answers STARTTLS verified against its CA
#   down_smtp   stop it (its certificates and delivered mail stay)
#   smtp_ready  true when it answers so
#   smtp_env    export lines (hack/stack.sh env)
#
# It offers STARTTLS with a certificate for localhost and 127.0.0.1 from a CA of its own
# ($BERTH_SMTP_DIR/ca.pem, not the stack's pki/ca.crt, so a client trusting the wrong roots
# fails); AUTH PLAIN/LOGIN only after STARTTLS, for one fixed user; and takes mail with or
# without TLS and AUTH. Each message is one file, as received with trace headers first
# (X-Berth-Smtp-Tls, X-Berth-Smtp-Auth, X-Berth-Rcpt-To, Return-Path), in
# $BERTH_SMTP_MAILDIR/new/. The Maildir is shared by every test run: find your message by
# something unique to it (a recipient, a subject), and remove only your own files.
#
# Why Debian's python3-aiosmtpd (1.4.3) rather than aiosmtpd from PyPI in a venv: it has all
# this needs (STARTTLS, an authenticator, auth_require_tls), the rest of the stack is Debian
# packages too, and it runs under Debian's /usr/bin/python3 whatever python3 comes first on PATH.

BERTH_SMTP_PORT=${BERTH_SMTP_PORT:-2525}
BERTH_SMTP_DIR=$BERTH_STACK_DIR/smtp
BERTH_SMTP_MAILDIR=$BERTH_SMTP_DIR/mail
BERTH_SMTP_USERNAME=berth-smtp
BERTH_SMTP_PASSWORD=berth-smtp-password
_SMTP_PYTHON=/usr/bin/python3
_SMTP_SOURCE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/smtp_server.py

# The server runs a copy of the script kept in the stack dir, so it does not depend on the
# checkout that started it; a changed script restarts it.
_smtp_vars() {
  BERTH_SMTP_HOST=127.0.0.1 BERTH_SMTP_PORT=$BERTH_SMTP_PORT \
    BERTH_SMTP_CA=$BERTH_SMTP_DIR/ca.pem BERTH_SMTP_CERT=$BERTH_SMTP_DIR/server.pem \
    BERTH_SMTP_KEY=$BERTH_SMTP_DIR/server.key BERTH_SMTP_MAILDIR=$BERTH_SMTP_MAILDIR \
    BERTH_SMTP_USERNAME=$BERTH_SMTP_USERNAME BERTH_SMTP_PASSWORD=$BERTH_SMTP_PASSWORD "$@"
}

smtp_ready() {
  [[ -f "$BERTH_SMTP_DIR/server.py" ]] &&
    _smtp_vars timeout 5 "$_SMTP_PYTHON" "$BERTH_SMTP_DIR/server.py" check
}

# The CA and the server's certificate are made once and kept, so clients keep trusting them.
_smtp_files() {
  local dir=$BERTH_SMTP_DIR
  mkdir -p "$dir" "$BERTH_SMTP_MAILDIR"/{tmp,new,cur}
  if [[ ! -f "$dir/ca.pem" ]]; then
    log "smtp: generating its CA"
    (umask 077 && openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes \
      -days 3650 -subj "/CN=berth-stack-smtp-ca" -keyout "$dir/ca.key" -out "$dir/ca.pem" \
      -addext "basicConstraints=critical,CA:TRUE" \
      -addext "keyUsage=critical,keyCertSign,cRLSign" 2>/dev/null)
    chmod 644 "$dir/ca.pem"
    rm -f "$dir/server.pem"
  fi
  if [[ ! -f "$dir/server.pem" ]]; then
    log "smtp: generating its certificate for localhost and 127.0.0.1"
    (umask 077 && openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes \
      -subj "/CN=localhost" -keyout "$dir/server.key" -out "$dir/server.csr" 2>/dev/null)
    openssl x509 -req -in "$dir/server.csr" -CA "$dir/ca.pem" -CAkey "$dir/ca.key" \
      -CAcreateserial -days 3650 -out "$dir/server.pem" -extfile <(
        echo "subjectAltName=DNS:localhost,IP:127.0.0.1"
        echo "basicConstraints=critical,CA:FALSE"
        echo "keyUsage=critical,digitalSignature"
        echo "extendedKeyUsage=serverAuth"
        echo "subjectKeyIdentifier=hash"
        echo "authorityKeyIdentifier=keyid"
      ) 2>/dev/null
    rm -f "$dir/server.csr"
    if is_running smtp; then
      log "smtp: certificate changed; restarting it"
      stop_bg smtp 10
    fi
  fi
  if ! cmp -s "$_SMTP_SOURCE" "$dir/server.py"; then
    cp "$_SMTP_SOURCE" "$dir/server.py.new" && mv "$dir/server.py.new" "$dir/server.py"
    if is_running smtp; then
      log "smtp: $(basename "$_SMTP_SOURCE") changed; restarting it"
      stop_bg smtp 10
    fi
  fi
}

up_smtp() {
  ensure_packages /usr/bin/aiosmtpd:python3-aiosmtpd openssl:openssl
  _smtp_files
  if is_running smtp; then
    log "smtp: running"
    return 0
  fi
  port_in_use "$BERTH_SMTP_PORT" && die "smtp: port $BERTH_SMTP_PORT is already in use by another process"
  log "smtp: starting on 127.0.0.1:$BERTH_SMTP_PORT (STARTTLS; mail in $BERTH_SMTP_MAILDIR/new)"
  _smtp_vars start_bg smtp "$LOGS/smtp.log" "$_SMTP_PYTHON" "$BERTH_SMTP_DIR/server.py" serve
}

wait_smtp() {
  wait_for 20 "the SMTP server on 127.0.0.1:$BERTH_SMTP_PORT (log: $LOGS/smtp.log)" smtp_ready
}

down_smtp() {
  if is_running smtp; then
    log "smtp: stopping"
    stop_bg smtp 10
  else
    log "smtp: not running"
  fi
}

smtp_env() {
  cat <<EOF
export BERTH_SMTP_HOST=127.0.0.1
export BERTH_SMTP_PORT=$BERTH_SMTP_PORT
export BERTH_SMTP_CA=$(printf %q "$BERTH_SMTP_DIR/ca.pem")
export BERTH_SMTP_USERNAME=$BERTH_SMTP_USERNAME
export BERTH_SMTP_PASSWORD=$BERTH_SMTP_PASSWORD
export BERTH_SMTP_MAILDIR=$(printf %q "$BERTH_SMTP_MAILDIR")
EOF
}
