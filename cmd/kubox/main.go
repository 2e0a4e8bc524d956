// Command kubox is the kubox command line for people.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/kubox-dev/kubox/internal/cli"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := cli.Execute(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}
