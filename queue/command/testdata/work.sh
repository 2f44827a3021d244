#!/bin/sh
# A command for the tests of freshen work. It reads the job's payload on
# stdin, a flat JSON object of strings: "do" says what to do, "dir" is where
# it leaves traces for the test, and some actions take more members.
payload=$(cat)
field() { printf '%s' "$payload" | sed -n "s/.*\"$1\": *\"\([^\"]*\)\".*/\1/p"; }
dir=$(field dir)
printf '%s\n' "$FRESHEN_ATTEMPT_UID" >>"$dir/runs"

case $(field do) in
succeed) # traces of what it was given
	printf '%s\n' "$payload" >"$dir/stdin"
	env | grep '^FRESHEN_' | sort >"$dir/env"
	pwd >"$dir/pwd"
	echo "rendered $FRESHEN_MODEL_ID"
	;;
exit) # twelve lines on stderr, then the exit status "code"
	i=1
	while [ $i -le 12 ]; do
		echo "problem $i" >&2
		i=$((i + 1))
	done
	exit "$(field code)"
	;;
signal) # dies by the signal "sig"
	kill -s "$(field sig)" $$
	;;
print) # stdout and stderr from the files the test wrote, then "code"
	[ -e "$dir/stdout" ] && cat "$dir/stdout"
	[ -e "$dir/stderr" ] && cat "$dir/stderr" >&2
	exit "$(field code)"
	;;
sleep) # a child of its own, both stopped by SIGTERM
	sleep 30 &
	echo $! >"$dir/child"
	echo $$ >"$dir/pid"
	echo '{"status": "running"}'
	wait
	;;
stubborn) # it and its child ignore SIGTERM: only SIGKILL stops them
	trap 'echo TERM >>"$dir/signals"' TERM
	(trap '' TERM; exec sleep 30) &
	echo $! >"$dir/child"
	echo $$ >"$dir/pid"
	echo '{"status": "running"}'
	while :; do wait; done
	;;
status) # a status; once the file "next" exists, two more at once; then
	# waits for the file "go"
	echo '{"status": "1/3"}'
	while [ ! -e "$dir/next" ]; do sleep 0.02; done
	printf '%s\n' '{"status": "2/3"}' '{"status": "3/3"}'
	while [ ! -e "$dir/go" ]; do sleep 0.02; done
	;;
leave) # exits at once, leaving a child that holds stdout open
	sleep 30 &
	echo $! >"$dir/child"
	;;
block) # waits for the file "go"
	echo $$ >"$dir/pid"
	echo '{"status": "running"}'
	while [ ! -e "$dir/go" ]; do sleep 0.02; done
	;;
flood) # megabytes: a 3 MB line, 100,000 short lines, a 100 KB JSON-looking
	# line, then the line that counts
	head -c 3000000 /dev/zero | tr '\0' x
	echo
	yes 'a line of output' | head -n 100000
	printf '{'
	head -c 100000 /dev/zero | tr '\0' ' '
	echo
	echo '{"outcome": "failure", "kind": "flooded", "message": "too much"}'
	;;
*)
	echo "unknown action in $payload" >&2
	exit 64
	;;
esac
