# kubox-agent's bash driver for the code interpreter (internal/agent/codeinterp): one long-lived
# shell per context, so variables, functions and the working directory stay between executions.
# Requests arrive on a private copy of fd 0 (fd 0 itself becomes /dev/null, so a command that
# reads stdin reads nothing of the protocol) as "<n1> <n2> <n3>\n" and then three parts of those
# byte lengths: the environment to set, the code, the environment to restore. User output goes to
# fd 1 and fd 2 as is; the end of each execution is a frame on fd 1 (RS + nonce + JSON + LF) and a
# mark on fd 2 (RS + nonce + LF), the nonce being the first line the agent sends.
exec 3<&0 0</dev/null
# SIGINT (the agent's interrupt, sent again until the execution ends) returns from the user's code
# only; between executions the shell ignores it.
trap '' INT
IFS= read -r __kubox_nonce <&3 || exit 0
__kubox_count=0
__kubox_run() {
	trap "trap '' INT; return 130" INT
	eval "$1"
}
__kubox_frame() { printf '\036%s%s\n' "$__kubox_nonce" "$1"; }
while IFS=' ' read -r __kubox_n1 __kubox_n2 __kubox_n3 <&3; do
	LC_ALL=C IFS= read -r -N "$__kubox_n1" __kubox_pre <&3
	LC_ALL=C IFS= read -r -N "$__kubox_n2" __kubox_code <&3
	LC_ALL=C IFS= read -r -N "$__kubox_n3" __kubox_post <&3
	__kubox_count=$((__kubox_count + 1))
	__kubox_frame '{"type":"number_of_executions","execution_count":'"$__kubox_count"'}'
	eval "$__kubox_pre"
	__kubox_run "$__kubox_code"
	__kubox_status=$?
	trap '' INT
	eval "$__kubox_post"
	printf '\036%s\n' "$__kubox_nonce" >&2
	if [ "$__kubox_status" -ne 0 ]; then
		__kubox_frame '{"type":"error","name":"ExitStatus","value":"'"$__kubox_status"'","traceback":"the code exited with status '"$__kubox_status"'"}'
	fi
	__kubox_frame '{"type":"end"}'
done
