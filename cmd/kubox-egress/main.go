// Command kubox-egress is the egress proxy of sandboxes whose template has spec.egress: they
// reach the outside only through it (HTTP_PROXY/HTTPS_PROXY, and a NetworkPolicy that lets them
// reach nothing else). It knows a sandbox by its Pod's IP, decides by the name it asked for and
// the addresses it resolved itself, adds the sandbox's credentials to requests for their
// domains, and logs every connection. Its flags and start-up are in internal/egress/cli; see
// docs/egress.md.
package main

import (
	"fmt"
	"os"

	"github.com/kubox-dev/kubox/internal/egress/cli"
)

func main() {
	if err := cli.NewCommand().Execute(); err != nil {
		fmt.Fprintf(os.Stderr, "kubox-egress: %v\n", err)
		os.Exit(1)
	}
}
