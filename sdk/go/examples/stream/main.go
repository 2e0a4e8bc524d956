// Command stream claims a sandbox, streams a process's output as it runs, feeds it stdin, and
// stops a second process with a signal.
//
//	cd sdk/go && go run ./examples/stream -pool python
package main

import (
	"context"
	"flag"
	"fmt"
	"log"
	"os"
	"strings"
	"syscall"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client/config"

	"github.com/kubox-dev/kubox/sdk/go/kubox"
)

func main() {
	ns := flag.String("namespace", "default", "namespace of the claim")
	pool := flag.String("pool", "python", "SandboxWarmPool to claim from")
	router := flag.String("router", os.Getenv(kubox.RouterURLEnv), "kubox-router URL (default: port-forward)")
	conn := flag.String("connection", "", `"" (auto), "router", "direct" or "port-forward"`)
	flag.Parse()

	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cfg, err := config.GetConfig()
	if err != nil {
		log.Fatal(err)
	}
	c, err := kubox.New(cfg, kubox.Options{Namespace: *ns, Connection: kubox.Connection(*conn), RouterURL: *router})
	if err != nil {
		log.Fatal(err)
	}
	defer func() { _ = c.Close() }()
	sb, err := c.Claim(ctx, kubox.FromPool(*pool))
	if err != nil {
		log.Fatal(err)
	}
	defer func() { _ = sb.Close(context.Background()) }()

	// Output is written to os.Stdout and os.Stderr as the process writes it.
	p, err := sb.Start(ctx, kubox.Cmd{
		Shell:  `for i in 1 2 3; do echo "tick $i"; sleep 1; done; wc -l`,
		Stdin:  strings.NewReader("one\ntwo\n"),
		Stdout: os.Stdout, Stderr: os.Stderr,
	})
	if err != nil {
		log.Print(err)
		return
	}
	code, err := p.Wait()
	fmt.Printf("process %s exited with %d (%v)\n", p.ID(), code, err)

	// A long-running process, stopped with SIGTERM.
	long, err := sb.Start(ctx, kubox.Cmd{Args: []string{"sleep", "600"}})
	if err != nil {
		log.Print(err)
		return
	}
	if err := long.Signal(ctx, syscall.SIGTERM); err != nil {
		log.Print(err)
	}
	code, err = long.Wait()
	fmt.Printf("sleep exited with %d (%v)\n", code, err)
}
