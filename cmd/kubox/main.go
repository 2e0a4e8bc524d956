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
	defer stop()
	if err := cli.NewRoot().ExecuteContext(ctx); err != nil {
		os.Exit(1)
	}
}
