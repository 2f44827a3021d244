#!/bin/sh
# The conformance handler (docs/workers.md, "Conformance") as a command of
# freshen work: the job's payload comes on stdin, statuses and the outcome
# go to stdout as JSON lines. Run it as
#   freshen conformance -- freshen work -- queue/conformance/testdata/handler.sh
# One jq prints the statuses, then the seconds to sleep, then the outcome.
out=$(jq -c '.conformance // {} |
  ((.status // [])[] | {status: .}),
  (.sleep // 0),
  if .do == "fail" then {outcome: "failure", kind, message, retryable, user_message} | with_entries(select(.value != null))
  elif .do == "snooze" then {outcome: "snooze", for: "\(.snooze_for)s"}
  else {outcome: "success", unchanged: (.unchanged == true)}
  end')
printf '%s\n' "$out" | sed '$d' | sed '$d'
sleep=$(printf '%s\n' "$out" | tail -n 2 | head -n 1)
[ "$sleep" = 0 ] || sleep "$sleep" # freshen work stops it at the deadline or on revocation
printf '%s\n' "$out" | tail -n 1
