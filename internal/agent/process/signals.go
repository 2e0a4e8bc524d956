package process

import (
	"fmt"
	"strconv"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

// ParseSignal reads a signal as a client names it: "SIGTERM", "TERM", "term" and "15" are the same.
func ParseSignal(name string) (syscall.Signal, error) {
	s := strings.ToUpper(strings.TrimSpace(name))
	if s == "" {
		return 0, fmt.Errorf("the signal is empty; name one, such as SIGTERM, SIGINT, SIGKILL or SIGHUP")
	}
	if n, err := strconv.Atoi(s); err == nil {
		if n < 1 || n > 64 {
			return 0, fmt.Errorf("signal number %d is not a Linux signal (1 to 64); use a name such as SIGTERM", n)
		}
		return syscall.Signal(n), nil
	}
	if !strings.HasPrefix(s, "SIG") {
		s = "SIG" + s
	}
	if sig := unix.SignalNum(s); sig != 0 {
		return sig, nil
	}
	return 0, fmt.Errorf("unknown signal %q; use a name such as SIGTERM, SIGINT, SIGKILL, SIGHUP, SIGQUIT, SIGUSR1 or a number", name)
}

// SignalName is the name of sig ("SIGKILL"), or "signal N" for a number without one.
func SignalName(sig syscall.Signal) string {
	if n := unix.SignalName(sig); n != "" {
		return n
	}
	return "signal " + strconv.Itoa(int(sig))
}
