# shellcheck shell=bash
# schemathesis (from PyPI) against the running shim's /api/openapi.json: generated requests,
# valid and invalid, signed in (see below), must never get a 5xx. Source after
# common.sh and berth.sh, with berth-shim running and berth_bootstrap_admin done.
#
#   berth_schemathesis   install schemathesis once (a cached venv) and run it, bounded in time
#
# It changes and deletes what it can reach, so it runs last, signed in as a user of its own in
# an organization of its own (both removed afterwards), so the administrator's organization
# that hack/dev.sh uses is never touched. Endpoints that would end its own sign-in (logout,
# session revocation, deleting its account or organization, handing the organization over) are
# left out.

SCHEMATHESIS_VERSION=4.32.5
SCHEMATHESIS_VENV=$BERTH_CACHE/schemathesis-$SCHEMATHESIS_VERSION
# Whole-run budget: well inside hack/test.sh's time, long enough for every operation.
SCHEMATHESIS_SECONDS=${BERTH_SCHEMATHESIS_SECONDS:-240}
SCHEMATHESIS_EXCLUDED=(
  --exclude-path /auth/logout
  --exclude-path /account/sessions/{sessionId}/revoke
  --exclude-path /organizations/{organizationId}/owner-transfer
  --exclude-path /terminal-sessions/{sessionId}/ws
  # An endless event stream (a snapshot per interval): every request would time out. Its
  # query checks are integration-tested (shim_monitoring).
  --exclude-path /runtime-usage/inspect/stream
  # The change feed never ends either; its query checks are integration-tested
  # (shim_change_feed).
  --exclude-path /events/stream
  --exclude-name 'DELETE /account'
  --exclude-name 'DELETE /organizations/{organizationId}'
)

schemathesis_install() {
  # The stamp is written last, so an interrupted install is redone rather than half-used.
  [[ -f $SCHEMATHESIS_VENV/.installed ]] && return 0
  ensure_packages python3:python3
  python3 -m venv --help >/dev/null 2>&1 || ensure_packages ensurepip:python3-venv
  log "installing schemathesis $SCHEMATHESIS_VERSION from PyPI (cached in $SCHEMATHESIS_VENV)"
  rm -rf "$SCHEMATHESIS_VENV"
  python3 -m venv "$SCHEMATHESIS_VENV"
  "$SCHEMATHESIS_VENV/bin/pip" install -q "schemathesis==$SCHEMATHESIS_VERSION"
  touch "$SCHEMATHESIS_VENV/.installed"
}

# _st_call METHOD PATH TOKEN [BODY]: one JSON call to the shim; prints the response body.
_st_call() {
  curl -fsS -X "$1" -H "Authorization: Bearer $3" -H 'Content-Type: application/json' \
    ${4:+-d "$4"} "$BERTH_URL$2"
}

_st_login() {
  curl -fsS -X POST -H 'Content-Type: application/json' \
    -d "$(jq -n --arg e "$1" --arg p "$2" '{email: $e, password: $p}')" \
    "$BERTH_URL/auth/login" | jq -er .token
}

# Creates the run's own user and organization: sets ST_EMAIL, ST_PASSWORD and ST_TOKEN.
_st_sign_up() {
  local admin suffix organization
  admin=$(_st_login "$BERTH_ADMIN_EMAIL" "$BERTH_ADMIN_PASSWORD") || return 1
  suffix=$(tr -dc 'a-z0-9' </dev/urandom | head -c 8)
  ST_EMAIL="schemathesis-$suffix@berth.local"
  ST_PASSWORD=$(tr -dc 'A-Za-z0-9' </dev/urandom | head -c 24)
  _st_call POST /users "$admin" "$(jq -n --arg e "$ST_EMAIL" --arg p "$ST_PASSWORD" \
    '{email: $e, password: $p, displayName: "schemathesis"}')" >/dev/null || return 1
  ST_TOKEN=$(_st_login "$ST_EMAIL" "$ST_PASSWORD") || return 1
  organization=$(_st_call POST /organizations "$ST_TOKEN" "{\"name\":\"Schemathesis $suffix\"}" |
    jq -er .id) || return 1
  _st_call POST /organizations/current-context/switch "$ST_TOKEN" \
    "{\"organizationId\":\"$organization\"}" >/dev/null || return 1
}

# Deletes the organizations the run's user belongs to (its own and those it created), then the
# user; signs in afresh only if the run ended its session (its failed logins may have it rate
# limited). Best effort: what is left is only clutter in the local stack.
_st_clean_up() {
  local token=$ST_TOKEN context id user
  if ! context=$(_st_call GET /organizations/current-context "$token" 2>/dev/null) &&
    ! { token=$(_st_login "$ST_EMAIL" "$ST_PASSWORD") &&
      context=$(_st_call GET /organizations/current-context "$token"); }; then
    warn "schemathesis: could not sign in as $ST_EMAIL to remove what it created"
    return 0
  fi
  for id in $(jq -r '.organizations[].organizationId' <<<"$context"); do
    _st_call DELETE "/organizations/$id" "$token" \
      "{\"confirmation\":{\"organizationId\":\"$id\"}}" >/dev/null 2>&1 ||
      warn "schemathesis: organization $id was not deleted"
  done
  user=$(jq -r .user.userId <<<"$context")
  _st_call DELETE /account "$token" "{\"confirmation\":{\"userId\":\"$user\"}}" >/dev/null 2>&1 ||
    warn "schemathesis: user $user was not deleted"
}

berth_schemathesis() {
  local report=$BERTH_RUN_DIR/schemathesis status=0
  schemathesis_install
  _st_sign_up || die "schemathesis: could not create its user and organization"
  log "schemathesis against $BERTH_URL/openapi.json (at most ${SCHEMATHESIS_SECONDS}s; report in $report)"
  rm -rf "$report" && mkdir -p "$report"
  # Run from the report directory: schemathesis keeps its example database in the current one.
  (cd "$report" && timeout --kill-after=10 $((SCHEMATHESIS_SECONDS + 60)) \
    "$SCHEMATHESIS_VENV/bin/st" run "$BERTH_URL/openapi.json" \
    --checks not_a_server_error \
    --header "Authorization: Bearer $ST_TOKEN" \
    --phases examples,coverage,fuzzing \
    --max-examples 8 \
    --max-time "$SCHEMATHESIS_SECONDS" \
    --request-timeout 10 \
    --workers 2 \
    --seed 11 \
    --no-color \
    --output-sanitize true \
    --report junit --report-dir "$report" \
    "${SCHEMATHESIS_EXCLUDED[@]}") || status=$?
  _st_clean_up
  ((status == 0)) || die "schemathesis found requests answered 5xx (or did not finish; exit $status)"
}
