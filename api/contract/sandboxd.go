package contract

import (
	"net"
	"strconv"
)

// PortFromAddrEnv is the port of the "host:port" address in the environment variable name (such
// as SandboxdGRPCAddrEnv), or 0 when it is unset or names no port. A container whose environment
// tells its code where sandboxd is expects sandboxd there: kubox-agent serves sandboxd's wire on
// those ports by default only then, so that it never takes a port an image uses for something
// else, and kubox-controller passes them to the agent as flags and records them in status.agent.
func PortFromAddrEnv(getenv func(string) string, name string) int {
	_, port, err := net.SplitHostPort(getenv(name))
	if err != nil {
		return 0
	}
	n, err := strconv.Atoi(port)
	if err != nil || n <= 0 || n > 65535 {
		return 0
	}
	return n
}
